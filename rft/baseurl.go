package rft

import (
	"net/url"
	"strconv"
	"strings"
)

// The two API prefixes the platform serves: /api/v1 for external runs (a key
// from `prime login`), /api/internal for hosted runs (a per-run token).
const (
	publicPrefix   = "/api/v1"
	internalPrefix = "/api/internal"
)

// BaseURLError says why a value is not a usable API base. It never repeats
// credentials embedded in the value.
type BaseURLError struct {
	Value   string // the value as given, with any user info removed
	Problem string
}

func (e *BaseURLError) Error() string {
	if e.Value == "" {
		return "prime: API base URL " + e.Problem
	}
	return "prime: API base URL " + strconv.Quote(e.Value) + ": " + e.Problem
}

// NormalizeBaseURL turns any accepted spelling of the API base into the API
// prefix: strip a trailing "/", strip a trailing "/rft"; if the path now ends
// in /api/v1 or /api/internal that is the prefix; otherwise append /api/v1.
// Users historically write the base as …/api/v1/rft, and hosted runs get
// PRIME_API_BASE=<host>/api/internal/rft, so all of these must land on the
// same prefix.
func NormalizeBaseURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", &BaseURLError{Problem: "is empty: set it to the platform's address, e.g. https://api.primeintellect.ai"}
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Parse's error repeats the whole value, user info included.
		return "", &BaseURLError{Problem: "is not a valid URL"}
	}
	shown := withoutUserInfo(u)
	switch {
	case u.Scheme == "" || !strings.Contains(s, "://"):
		// "localhost:8080" parses with scheme "localhost"; it lacks one all the same.
		return "", &BaseURLError{Value: shown, Problem: "has no scheme: write it as https://host"}
	case u.Scheme != "http" && u.Scheme != "https":
		return "", &BaseURLError{Value: shown, Problem: "scheme " + strconv.Quote(u.Scheme) + " is not http or https"}
	case u.Host == "":
		return "", &BaseURLError{Value: shown, Problem: "has no host"}
	case u.User != nil:
		return "", &BaseURLError{Value: shown, Problem: "must not carry credentials: the API key is set separately"}
	case u.RawQuery != "" || u.ForceQuery:
		return "", &BaseURLError{Value: shown, Problem: "must not have a query string"}
	case u.Fragment != "":
		return "", &BaseURLError{Value: shown, Problem: "must not have a fragment"}
	}

	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/rft")
	p = strings.TrimRight(p, "/")
	if !strings.HasSuffix(p, publicPrefix) && !strings.HasSuffix(p, internalPrefix) {
		p += publicPrefix
	}
	out := url.URL{Scheme: u.Scheme, Host: u.Host, Path: p}
	return out.String(), nil
}

// withoutUserInfo renders u for an error message without its password or
// user name.
func withoutUserInfo(u *url.URL) string {
	cp := *u
	cp.User = nil
	return cp.String()
}

package trainerlib

import (
	"fmt"
	"net/url"
	"strings"
)

// Endpoint is where the OTLP/HTTP receiver listens.
type Endpoint struct {
	HostPort string
	// BasePath prefixes the signal paths (/v1/metrics, /v1/logs).
	BasePath string
	Insecure bool
}

func (e Endpoint) String() string {
	scheme := "https"
	if e.Insecure {
		scheme = "http"
	}
	return scheme + "://" + e.HostPort + e.BasePath
}

// ParseEndpoint accepts host:port (plain HTTP, the collector's default
// receiver) or an http(s) URL, the form OTEL_EXPORTER_OTLP_ENDPOINT takes.
func ParseEndpoint(s string) (Endpoint, error) {
	if !strings.Contains(s, "://") {
		if s == "" || strings.ContainsAny(s, "/?#") {
			return Endpoint{}, fmt.Errorf("want host:port or an http(s) URL, got %q", s)
		}
		return Endpoint{HostPort: s, Insecure: true}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return Endpoint{}, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return Endpoint{}, fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return Endpoint{}, fmt.Errorf("no host in %q", s)
	}
	return Endpoint{
		HostPort: u.Host,
		BasePath: strings.TrimSuffix(u.Path, "/"),
		Insecure: u.Scheme == "http",
	}, nil
}

package rft

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/url"
	"strings"
	"unicode/utf8"
)

// maxMessage bounds the message an *Error carries: it ends up in log lines.
const maxMessage = 500

// platformMessage extracts the message of a platform error body: FastAPI's
// {"detail": "..."} (or its validation list), or {"error": {"code",
// "message"}}. A body that is neither is passed on as compact text; markup
// (a proxy's HTML error page) says nothing the status code does not.
func platformMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] == '<' {
		return ""
	}
	var env struct {
		Detail  json.RawMessage `json:"detail"`
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if body[0] != '{' || json.Unmarshal(body, &env) != nil {
		return clip(strings.Join(strings.Fields(string(body)), " "))
	}
	if m := detailText(env.Detail); m != "" {
		return clip(m)
	}
	if m := errorText(env.Error); m != "" {
		return clip(m)
	}
	if env.Message != "" {
		return clip(env.Message)
	}
	return clip(compactJSON(body))
}

// plainText reads what detail and error have in common: absent or null says
// nothing, a string is the message itself. ok=false leaves raw to the
// caller's structured form.
func plainText(raw json.RawMessage) (text string, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	if json.Unmarshal(raw, &text) == nil {
		return text, true
	}
	return "", false
}

// detailText renders FastAPI's detail: a string, or a list of validation
// errors {"loc": [...], "msg": "..."}.
func detailText(raw json.RawMessage) string {
	if s, ok := plainText(raw); ok {
		return s
	}
	var items []struct {
		Loc []any  `json:"loc"`
		Msg string `json:"msg"`
	}
	if json.Unmarshal(raw, &items) == nil && len(items) > 0 {
		parts := make([]string, 0, len(items))
		for _, it := range items {
			if it.Msg == "" {
				return compactJSON(raw)
			}
			loc := make([]string, 0, len(it.Loc))
			for _, l := range it.Loc {
				b, _ := json.Marshal(l)
				loc = append(loc, strings.Trim(string(b), `"`))
			}
			if len(loc) > 0 {
				parts = append(parts, strings.Join(loc, ".")+": "+it.Msg)
			} else {
				parts = append(parts, it.Msg)
			}
		}
		return strings.Join(parts, "; ")
	}
	return compactJSON(raw)
}

// errorText renders {"code","message"} as "message (code)", or a bare string.
func errorText(raw json.RawMessage) string {
	if s, ok := plainText(raw); ok {
		return s
	}
	var e struct {
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return compactJSON(raw)
	}
	code := ""
	if e.Code != nil {
		b, _ := json.Marshal(e.Code)
		code = strings.Trim(string(b), `"`)
	}
	switch {
	case e.Message != "" && code != "":
		return e.Message + " (" + code + ")"
	case e.Message != "":
		return e.Message
	}
	return code
}

// objectStoreMessage extracts Code and Message from an S3-style XML error.
// Nothing else of the body is kept: such bodies may echo the string to sign
// and the signature.
func objectStoreMessage(body []byte) string {
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(bytes.TrimSpace(body), &x) != nil {
		return ""
	}
	switch {
	case x.Code != "" && x.Message != "":
		return clip(x.Code + ": " + x.Message)
	case x.Code != "":
		return clip(x.Code)
	}
	return clip(x.Message)
}

func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// clip bounds s to maxMessage bytes of valid UTF-8.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// redactURL renders a URL without user info, query string and fragment:
// a presigned URL's query string is its credential.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

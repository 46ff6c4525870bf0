package rfttest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

// presence says whether a key must be in a body.
type presence bool

const (
	required presence = true
	optional presence = false
)

// fields reads one JSON object the strict way: required keys present,
// optional keys either absent or non-null, values of the declared type, and
// no key the route does not know. It keeps the first problem and turns
// every later read into a no-op, so a handler reads all its keys and checks
// once; the error names the offending key with its path.
type fields struct {
	m    map[string]any // the object, as decoded
	path string         // prefix for key names in errors, e.g. "environments[0]."
	read map[string]bool
	err  error
}

func newFields(m map[string]any, path string) *fields {
	return &fields{m: m, path: path, read: make(map[string]bool)}
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = refuse(http.StatusBadRequest, format, args...)
	}
}

// get returns the value of key, or ok=false when it is absent or the
// object already failed.
func (f *fields) get(key string, p presence) (any, bool) {
	f.read[key] = true
	if f.err != nil {
		return nil, false
	}
	v, ok := f.m[key]
	switch {
	case !ok && p == required:
		f.fail("%s%s is required", f.path, key)
		return nil, false
	case !ok:
		return nil, false
	case v == nil && p == required:
		f.fail("%s%s must not be null", f.path, key)
		return nil, false
	case v == nil:
		f.fail("%s%s must be omitted, not null", f.path, key)
		return nil, false
	}
	return v, true
}

func (f *fields) str(key string, p presence) string {
	v, ok := f.get(key, p)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr {
		f.fail("%s%s must be a string, not %s", f.path, key, jsonType(v))
	}
	return s
}

func (f *fields) nonEmptyStr(key string, p presence) string {
	_, present := f.m[key]
	s := f.str(key, p)
	if present && f.err == nil && s == "" {
		f.fail("%s%s must not be empty", f.path, key)
	}
	return s
}

// integer reads an integer literal; a fraction or exponent is refused even
// when its value is whole.
func (f *fields) integer(key string, p presence) int64 {
	v, ok := f.get(key, p)
	if !ok {
		return 0
	}
	n, isNum := v.(json.Number)
	if !isNum {
		f.fail("%s%s must be an integer, not %s", f.path, key, jsonType(v))
		return 0
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		f.fail("%s%s must be an integer, not %s", f.path, key, n)
	}
	return i
}

// count is a non-negative integer (steps, sizes).
func (f *fields) count(key string, p presence) int64 {
	i := f.integer(key, p)
	if i < 0 {
		f.fail("%s%s must not be negative", f.path, key)
	}
	return i
}

func (f *fields) object(key string, p presence) map[string]any {
	v, ok := f.get(key, p)
	if !ok {
		return nil
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		f.fail("%s%s must be an object, not %s", f.path, key, jsonType(v))
	}
	return m
}

func (f *fields) list(key string, p presence) []any {
	v, ok := f.get(key, p)
	if !ok {
		return nil
	}
	l, isList := v.([]any)
	if !isList {
		f.fail("%s%s must be a list, not %s", f.path, key, jsonType(v))
	}
	return l
}

// check returns the first problem, or else names the first unknown key.
func (f *fields) check() error {
	if f.err != nil {
		return f.err
	}
	var unknown []string
	for k := range f.m {
		if !f.read[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		f.fail("unknown key %s%s", f.path, unknown[0])
	}
	return f.err
}

// jsonType names a decoded JSON value's type for error details.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return fmt.Sprintf("the number %s", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

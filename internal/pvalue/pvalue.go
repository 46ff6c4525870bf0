// Package pvalue reads pdata values the way trainers' SDKs send them.
//
// Numbers are read leniently (telemetry.md §3): an int is accepted where a
// double is expected, because the JS SDK sends every whole number as an OTLP
// int, and a double with an integral value is accepted where an int is
// expected. Anything else is a type mismatch the caller names in its error.
package pvalue

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// maxExactInt is the largest magnitude a float64 holds every integer up to.
const maxExactInt = 1 << 53

// Int reads v as an int64: an int, or a double whose value is integral.
func Int(v pcommon.Value) (int64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeInt:
		return v.Int(), true
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) > maxExactInt {
			return 0, false
		}
		return int64(f), true
	}
	return 0, false
}

// Float reads v as a float64: a double, or an int.
func Float(v pcommon.Value) (float64, bool) {
	switch v.Type() {
	case pcommon.ValueTypeDouble:
		return v.Double(), true
	case pcommon.ValueTypeInt:
		return float64(v.Int()), true
	}
	return 0, false
}

// String reads v as a string; only a string value is one.
func String(v pcommon.Value) (string, bool) {
	if v.Type() != pcommon.ValueTypeStr {
		return "", false
	}
	return v.Str(), true
}

// TypeName names v's type for error messages ("string", "map", …).
func TypeName(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeEmpty:
		return "empty"
	case pcommon.ValueTypeStr:
		return "string"
	case pcommon.ValueTypeInt:
		return "int"
	case pcommon.ValueTypeDouble:
		return "double"
	case pcommon.ValueTypeBool:
		return "bool"
	case pcommon.ValueTypeMap:
		return "map"
	case pcommon.ValueTypeSlice:
		return "list"
	case pcommon.ValueTypeBytes:
		return "bytes"
	}
	return v.Type().String()
}

// IntString reads a string holding a decimal integer within int64: how the
// OTel Python SDK sends a numpy integer attribute (np.int64(20) arrives as
// "20"). Only JSON's integer grammar counts, which is what Python's str()
// of an int gives: "+1", "1.0", " 1" and "0x1" are not integers sent as
// strings, and reading them as such would surprise.
func IntString(v pcommon.Value) (int64, bool) {
	s, ok := String(v)
	if !ok || !isJSONNumber(s, false) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// FloatString reads a string that is exactly a JSON number: how the OTel
// Python SDK sends a numpy float attribute (np.float32(0.5) arrives as
// "0.5"). strconv alone would also take "NaN", "inf", "0x1p3", "+1" and
// ".5", none of which str() of a numpy number gives. A number past
// float64's range reads as ±Inf, for the caller to reject as any other.
func FloatString(v pcommon.Value) (float64, bool) {
	s, ok := String(v)
	if !ok || !isJSONNumber(s, true) {
		return 0, false
	}
	f, _ := strconv.ParseFloat(s, 64) // the syntax is checked: only ErrRange is left, with its ±Inf
	return f, true
}

// isJSONNumber tells whether s is exactly a JSON number (RFC 8259 §6); with
// fraction false, one with neither fraction nor exponent. A JSON text that
// starts with '-' or a digit can only be a number, and one that ends with a
// digit has no trailing space, so json.Valid checks the rest.
func isJSONNumber(s string, fraction bool) bool {
	if s == "" || !(s[0] == '-' || isDigit(s[0])) || !isDigit(s[len(s)-1]) {
		return false
	}
	if !fraction && strings.ContainsAny(s, ".eE") {
		return false
	}
	return json.Valid([]byte(s))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

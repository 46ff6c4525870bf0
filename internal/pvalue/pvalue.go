// Package pvalue reads pdata values the way trainers' SDKs send them.
//
// Numbers are read leniently (telemetry.md §3): an int is accepted where a
// double is expected, because the JS SDK sends every whole number as an OTLP
// int, and a double with an integral value is accepted where an int is
// expected. Anything else is a type mismatch the caller names in its error.
package pvalue

import (
	"math"

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

package pvalue

import (
	"math"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestIntAcceptsIntsAndIntegralDoublesOnly(t *testing.T) {
	tests := []struct {
		name string
		v    pcommon.Value
		want int64
		ok   bool
	}{
		{"an int", pcommon.NewValueInt(7), 7, true},
		{"an integral double", pcommon.NewValueDouble(10), 10, true},
		{"a fractional double", pcommon.NewValueDouble(1.5), 0, false},
		{"NaN", pcommon.NewValueDouble(math.NaN()), 0, false},
		{"infinity", pcommon.NewValueDouble(math.Inf(1)), 0, false},
		{"a double past 2^53", pcommon.NewValueDouble(1 << 60), 0, false},
		{"a string", pcommon.NewValueStr("3"), 0, false},
		{"a bool", pcommon.NewValueBool(true), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Int(tt.v)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("Int(%s) = %d, %v; want %d, %v", tt.name, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestFloatAcceptsDoublesAndInts(t *testing.T) {
	tests := []struct {
		name string
		v    pcommon.Value
		want float64
		ok   bool
	}{
		{"a double", pcommon.NewValueDouble(0.25), 0.25, true},
		{"an int, as the JS SDK sends a whole number", pcommon.NewValueInt(1), 1, true},
		{"a string", pcommon.NewValueStr("0.5"), 0, false},
		{"a map", pcommon.NewValueMap(), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Float(tt.v)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("Float(%s) = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
			}
		})
	}
}

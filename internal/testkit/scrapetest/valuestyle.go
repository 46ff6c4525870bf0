package scrapetest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// valueStyle is how a recording writes a sample value, so that a changed
// value is written the same way: dcgm-exporter writes integers ("405") and
// C "%f" floats ("16.365000"); Python's prometheus_client writes repr()
// floats, Go-style exponents past six integer digits ("0.0",
// "1.7740114612872875e+09").
type valueStyle struct {
	kind     int // styleInt, styleFixed or stylePython
	decimals int // for styleFixed
}

const (
	stylePython = iota
	styleInt
	styleFixed
)

func styleOf(text string) valueStyle {
	if strings.ContainsAny(text, "eEIN") {
		return valueStyle{kind: stylePython}
	}
	dot := strings.IndexByte(text, '.')
	if dot < 0 {
		return valueStyle{kind: styleInt}
	}
	if n := len(text) - dot - 1; n == 6 {
		return valueStyle{kind: styleFixed, decimals: n}
	}
	return valueStyle{kind: stylePython}
}

func (st valueStyle) format(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	switch st.kind {
	case styleInt:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case styleFixed:
		return strconv.FormatFloat(v, 'f', st.decimals, 64)
	}
	return pythonGoString(v)
}

// pythonGoString is prometheus_client's floatToGoString: Python's repr(),
// switched to an exponent (written "e+0N") once there are more than six
// digits before the point.
func pythonGoString(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	s := pythonRepr(v)
	dot := strings.IndexByte(s, '.')
	if v > 0 && dot > 6 {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mantissa + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// pythonRepr is Python's repr() of a finite float: the shortest digits
// that read back the same, positional from 1e-4 up to 1e16, ".0" on whole
// numbers, otherwise d.ddde±XX.
func pythonRepr(v float64) string {
	if v == 0 {
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(v, 'e', -1, 64)
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	var s string
	switch {
	case exp >= 16 || exp < -4:
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		s = fmt.Sprintf("%se%s%02d", m, sign, exp)
	case exp < 0:
		s = "0." + strings.Repeat("0", -exp-1) + digits
	case exp+1 >= len(digits):
		s = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	default:
		s = digits[:exp+1] + "." + digits[exp+1:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

package stepmetrics

import (
	"encoding/json"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// readStep reads a prime.step attribute: an int or an integral double as
// pvalue reads it, or a string holding a decimal integer, which is how the
// OTel Python SDK sends a numpy integer (np.int64(20) arrives as "20"). how
// is reject.NumberString for such a string, "" otherwise.
func readStep(v pcommon.Value) (step int64, how reject.Reason, ok bool) {
	if step, ok := pvalue.Int(v); ok {
		return step, "", true
	}
	s, isStr := pvalue.String(v)
	if !isStr || !isJSONNumber(s, false) {
		return 0, "", false
	}
	step, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, "", false // past int64: not a step anyone meant
	}
	return step, reject.NumberString, true
}

// readValue reads a prime.metrics value: a number as pvalue reads it, a
// string holding a decimal number (the OTel Python SDK's form of a numpy
// float, np.float32(0.5) arriving as "0.5"), or a bool, which a Python user
// means as 1 or 0 (True == 1 in Python). how names the coercion, "" when
// there was none. The number may be non-finite: a string too large for a
// float64 ("1e400") reads as ±Inf, for the caller to reject as any other.
func readValue(v pcommon.Value) (f float64, how reject.Reason, ok bool) {
	if f, ok := pvalue.Float(v); ok {
		return f, "", true
	}
	switch v.Type() {
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return 1, reject.BoolValue, true
		}
		return 0, reject.BoolValue, true
	case pcommon.ValueTypeStr:
		s := v.Str()
		if !isJSONNumber(s, true) {
			return 0, "", false
		}
		// The syntax is checked, so the only error left is ErrRange, past
		// float64's range; its ±Inf is then rejected as non-finite, as a
		// double +Inf would be.
		f, _ := strconv.ParseFloat(s, 64)
		return f, reject.NumberString, true
	}
	return 0, "", false
}

// isJSONNumber tells whether s is exactly a JSON number (RFC 8259 §6); with
// fraction false, one with neither fraction nor exponent. JSON's grammar,
// not strconv's, decides: strconv also takes "NaN", "inf", "0x1p3", "+1" and
// ".5", none of which a Python str() of a numpy number gives, and none of
// which a producer sending strings should have read as numbers by surprise.
// Surrounding spaces are refused too: "1 " is not what str() gives. A JSON
// text that starts with '-' or a digit can only be a number, and one that
// ends with a digit has no trailing space, so json.Valid checks the rest.
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

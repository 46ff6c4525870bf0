package stepmetrics

import (
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
	if step, ok := pvalue.IntString(v); ok {
		return step, reject.NumberString, true
	}
	return 0, "", false
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
		if f, ok := pvalue.FloatString(v); ok {
			return f, reject.NumberString, true
		}
	}
	return 0, "", false
}

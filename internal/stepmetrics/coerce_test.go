package stepmetrics

import (
	"math"
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/reject"
)

func TestAStepIsReadFromANumberOrADecimalIntegerString(t *testing.T) {
	tests := []struct {
		name string
		v    pcommon.Value
		want int64
		how  reject.Reason
		ok   bool
	}{
		{"an int is the step", pcommon.NewValueInt(20), 20, "", true},
		{"an integral double is the step", pcommon.NewValueDouble(20), 20, "", true},
		{"a numpy int64 as the Python SDK sends it", pcommon.NewValueStr("20"), 20, reject.NumberString, true},
		{"a negative decimal integer string", pcommon.NewValueStr("-3"), -3, reject.NumberString, true},
		{"zero", pcommon.NewValueStr("0"), 0, reject.NumberString, true},
		{"the largest int64", pcommon.NewValueStr("9223372036854775807"), math.MaxInt64, reject.NumberString, true},
		{"not past int64", pcommon.NewValueStr("9223372036854775808"), 0, "", false},
		{"not a float string, even an integral one", pcommon.NewValueStr("20.0"), 0, "", false},
		{"not an exponent", pcommon.NewValueStr("2e1"), 0, "", false},
		{"not a leading plus", pcommon.NewValueStr("+5"), 0, "", false},
		{"not leading zeros", pcommon.NewValueStr("007"), 0, "", false},
		{"not surrounding spaces", pcommon.NewValueStr(" 1"), 0, "", false},
		{"not hex", pcommon.NewValueStr("0x10"), 0, "", false},
		{"not empty", pcommon.NewValueStr(""), 0, "", false},
		{"not a word", pcommon.NewValueStr("twenty"), 0, "", false},
		{"not a bool", pcommon.NewValueBool(true), 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how, ok := readStep(tt.v)
			if got != tt.want || how != tt.how || ok != tt.ok {
				t.Fatalf("readStep = %d, %q, %v; want %d, %q, %v", got, how, ok, tt.want, tt.how, tt.ok)
			}
		})
	}
}

func TestAMetricValueIsReadFromANumberANumberStringOrABool(t *testing.T) {
	tests := []struct {
		name string
		v    pcommon.Value
		want float64
		how  reject.Reason
		ok   bool
	}{
		{"a double is its value", pcommon.NewValueDouble(0.5), 0.5, "", true},
		{"an int is its value", pcommon.NewValueInt(3), 3, "", true},
		{"a numpy float32 as the Python SDK sends it", pcommon.NewValueStr("0.5"), 0.5, reject.NumberString, true},
		{"a negative integer string", pcommon.NewValueStr("-3"), -3, reject.NumberString, true},
		{"an exponent as Python writes a small float", pcommon.NewValueStr("1e-06"), 1e-6, reject.NumberString, true},
		{"an upper-case exponent with a sign", pcommon.NewValueStr("2.5E+2"), 250, reject.NumberString, true},
		{"negative zero", pcommon.NewValueStr("-0.0"), math.Copysign(0, -1), reject.NumberString, true},
		{"a number past float64 reads as infinity, for the caller to reject", pcommon.NewValueStr("1e400"), math.Inf(1), reject.NumberString, true},
		{"true is 1", pcommon.NewValueBool(true), 1, reject.BoolValue, true},
		{"false is 0", pcommon.NewValueBool(false), 0, reject.BoolValue, true},
		{"not NaN", pcommon.NewValueStr("NaN"), 0, "", false},
		{"not nan", pcommon.NewValueStr("nan"), 0, "", false},
		{"not inf", pcommon.NewValueStr("inf"), 0, "", false},
		{"not Infinity", pcommon.NewValueStr("Infinity"), 0, "", false},
		{"not empty", pcommon.NewValueStr(""), 0, "", false},
		{"not a leading space", pcommon.NewValueStr(" 1"), 0, "", false},
		{"not a trailing space", pcommon.NewValueStr("1 "), 0, "", false},
		{"not a leading plus", pcommon.NewValueStr("+1"), 0, "", false},
		{"not a bare fraction", pcommon.NewValueStr(".5"), 0, "", false},
		{"not a trailing point", pcommon.NewValueStr("5."), 0, "", false},
		{"not leading zeros", pcommon.NewValueStr("01"), 0, "", false},
		{"not an exponent without digits", pcommon.NewValueStr("1e"), 0, "", false},
		{"not hex", pcommon.NewValueStr("0x1p3"), 0, "", false},
		{"not underscores", pcommon.NewValueStr("1_000"), 0, "", false},
		{"not a lone minus", pcommon.NewValueStr("-"), 0, "", false},
		{"not a word", pcommon.NewValueStr("warmup"), 0, "", false},
		{"not a list", pcommon.NewValueSlice(), 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, how, ok := readValue(tt.v)
			if math.Float64bits(got) != math.Float64bits(tt.want) || how != tt.how || ok != tt.ok {
				t.Fatalf("readValue = %v, %q, %v; want %v, %q, %v", got, how, ok, tt.want, tt.how, tt.ok)
			}
		})
	}
}

func TestAPointWithAStringPrimeStepIsSentAtThatStepAndReportedAsCoerced(t *testing.T) {
	const ts = 1_700_000_000_000_000_000
	tests := []struct {
		name   string
		build  func(t *testing.T, ms pmetric.MetricSlice)
		want   []stepValue
		wantRj []rejection
		wantC  []reject.Reason
	}{
		{"a gauge point, once per point",
			func(t *testing.T, ms pmetric.MetricSlice) {
				g := gauge(ms, "loss")
				dbl(t, g, 0.5, ts, "prime.step", "20")
				dbl(t, g, 0.4, ts, "prime.step", int64(21))
				num(t, sum(ms, "tokens"), 64, ts, "prime.step", "-3")
			},
			[]stepValue{{20, "loss", 0.5}, {21, "loss", 0.4}, {-3, "tokens", 64}},
			nil,
			[]reject.Reason{reject.NumberString, reject.NumberString}},
		{"a histogram point, once for all its entries",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "reward").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", "7")
				dp.SetCount(2)
				dp.SetSum(1)
			},
			[]stepValue{{7, "reward/count", 2}, {7, "reward/sum", 1}, {7, "reward/mean", 0.5}},
			nil,
			[]reject.Reason{reject.NumberString}},
		{"a summary point",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := summary(ms, "latency").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", "8")
				dp.SetCount(1)
				dp.SetSum(2)
			},
			[]stepValue{{8, "latency/count", 1}, {8, "latency/sum", 2}},
			nil,
			[]reject.Reason{reject.NumberString}},
		{"the string step wins over the step gauge, as an int one does",
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 10, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", "2")
			},
			[]stepValue{{10, "step", 10}, {2, "loss", 0.5}},
			nil,
			[]reject.Reason{reject.NumberString}},
		{"a point whose value is rejected is not counted as coerced too",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dbl(t, gauge(ms, "loss"), math.NaN(), ts, "prime.step", "20")
			},
			nil,
			[]rejection{{"non_finite", "loss", `metric "loss": value NaN is not finite and is not sent`}},
			nil},
		{"a float string step is still a bad step",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", "20.0")
			},
			nil,
			[]rejection{{"bad_step", "loss", `metric "loss": attribute prime.step must be an int, got string`}},
			nil},
		{"a spaced string step is still a bad step",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "reward").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", " 1")
				dp.SetCount(1)
			},
			nil,
			[]rejection{{"bad_step", "reward", `metric "reward": attribute prime.step must be an int, got string`}},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, ms := resource()
			tt.build(t, ms)
			entries, rejected, coerced := FromResource(rm, defaultOptions())
			assertMapping(t, entries, rejected, tt.want, tt.wantRj)
			assertCoerced(t, coerced, tt.wantC)
		})
	}
}

func TestAPrimeMetricsEventTakesStringAndBoolValuesAsThePythonUserMeantThem(t *testing.T) {
	tests := []struct {
		name   string
		attrs  []any
		body   func(t *testing.T) pcommon.Value
		want   []stepValue
		wantRj []rejection
		wantC  []reject.Reason
	}{
		{"a string step and string and bool attribute values, the step's coercion last",
			[]any{"prime.step", "20", "m/f32", "0.5", "n", "-3", "lr", "1e-06", "done", true, "warm", false, "loss", 0.25},
			emptyBody,
			[]stepValue{{20, "m/f32", 0.5}, {20, "n", -3}, {20, "lr", 1e-6}, {20, "done", 1}, {20, "warm", 0}, {20, "loss", 0.25}},
			nil,
			[]reject.Reason{reject.NumberString, reject.NumberString, reject.NumberString, reject.BoolValue, reject.BoolValue, reject.NumberString}},
		{"a body map with string and bool values",
			[]any{"prime.step", int64(5)},
			func(t *testing.T) pcommon.Value {
				v := pcommon.NewValueMap()
				attrs(t, v.Map(), "acc", "0.75", "ok", true, "loss", 0.5)
				return v
			},
			[]stepValue{{5, "acc", 0.75}, {5, "ok", 1}, {5, "loss", 0.5}},
			nil,
			[]reject.Reason{reject.NumberString, reject.BoolValue}},
		{"a JSON body with string and bool values",
			[]any{"prime.step", "6"},
			strBody(`{"acc": "0.75", "ok": false}`),
			[]stepValue{{6, "acc", 0.75}, {6, "ok", 0}},
			nil,
			[]reject.Reason{reject.NumberString, reject.BoolValue, reject.NumberString}},
		{"a number string past float64 is still non-finite",
			[]any{"prime.step", int64(3), "big", "1e400", "loss", 0.5},
			emptyBody,
			[]stepValue{{3, "loss", 0.5}},
			[]rejection{{"non_finite", "big", `metric "big": value +Inf is not finite and is not sent`}},
			nil},
		{"strings that are not decimal numbers are still bad values",
			[]any{"prime.step", int64(3), "a", "NaN", "b", "inf", "c", "", "d", " 1", "loss", 0.5},
			emptyBody,
			[]stepValue{{3, "loss", 0.5}},
			[]rejection{
				{"bad_value", "a", `prime.metrics event: value of "a" must be a number, got string`},
				{"bad_value", "b", `prime.metrics event: value of "b" must be a number, got string`},
				{"bad_value", "c", `prime.metrics event: value of "c" must be a number, got string`},
				{"bad_value", "d", `prime.metrics event: value of "d" must be a number, got string`},
			},
			nil},
		{"a string step of an event with nothing delivered is not counted as coerced",
			[]any{"prime.step", "3", "note", "warmup"},
			emptyBody,
			nil,
			[]rejection{{"bad_value", "note", `prime.metrics event: value of "note" must be a number, got string`}},
			nil},
		{"a float string step is still a bad step",
			[]any{"prime.step", "3.5", "loss", "0.5"},
			emptyBody,
			nil,
			[]rejection{{"bad_step", "prime.step", `prime.metrics event: attribute prime.step must be an int, got string`}},
			nil},
		{"a bool step is still a bad step",
			[]any{"prime.step", true, "loss", 0.5},
			emptyBody,
			nil,
			[]rejection{{"bad_step", "prime.step", `prime.metrics event: attribute prime.step must be an int, got bool true`}},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, rejected, coerced := FromEvent(record(t, tt.body(t), 0, 0, tt.attrs...))
			assertMapping(t, entries, rejected, tt.want, tt.wantRj)
			assertCoerced(t, coerced, tt.wantC)
		})
	}
}

func TestFilterRowsResolvesStringStepsAsFromResourceDoes(t *testing.T) {
	tests := []struct {
		name  string
		keep  func(Row) bool
		want  []stepValue
		wantC []reject.Reason
	}{
		{"keeping step 2 keeps its string-stepped points, still strings",
			func(r Row) bool { return r == Row{Step: 2} },
			[]stepValue{{2, "loss", 0.8}, {2, "reward/count", 3}},
			[]reject.Reason{reject.NumberString, reject.NumberString}},
		{"keeping step 1 keeps the int-stepped and the string-stepped point",
			func(r Row) bool { return r == Row{Step: 1} },
			[]stepValue{{1, "loss", 0.9}, {1, "kl", 0.1}},
			[]reject.Reason{reject.NumberString}},
		{"keeping nothing drops the bad string step with the rest",
			func(Row) bool { return false },
			nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, ms := resource()
			loss := gauge(ms, "loss")
			dbl(t, loss, 0.9, 100, "prime.step", "1")
			dbl(t, loss, 0.8, 200, "prime.step", "2")
			dbl(t, loss, 0.7, 300, "prime.step", "2.5") // a bad step: never handed back
			dp := histogram(ms, "reward").AppendEmpty()
			attrs(t, dp.Attributes(), "prime.step", "2")
			dp.SetCount(3)
			dbl(t, gauge(ms, "kl"), 0.1, 100, "prime.step", int64(1))

			dst := pmetric.NewMetrics()
			FilterRows(dst, rm, defaultOptions(), tt.keep)
			var entries []Entry
			var coerced []reject.Reason
			for i := 0; i < dst.ResourceMetrics().Len(); i++ {
				es, rejected, cs := FromResource(dst.ResourceMetrics().At(i), defaultOptions())
				assertMapping(t, nil, rejected, nil, nil)
				entries = append(entries, es...)
				coerced = append(coerced, cs...)
			}
			assertMapping(t, entries, nil, tt.want, nil)
			assertCoerced(t, coerced, tt.wantC)
		})
	}
}

func assertCoerced(t *testing.T, got, want []reject.Reason) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("coerced = %q, want %q", got, want)
	}
}

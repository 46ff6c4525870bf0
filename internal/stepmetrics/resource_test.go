package stepmetrics

import (
	"math"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestEachMetricTypeMapsToItsEntries(t *testing.T) {
	tests := []struct {
		name  string
		build func(t *testing.T, ms pmetric.MetricSlice)
		want  []stepValue
	}{
		{"a double gauge gives its number",
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "loss"), 0.25, 1, "prime.step", 3) },
			[]stepValue{{3, "loss", 0.25}}},
		{"an int gauge gives its number",
			func(t *testing.T, ms pmetric.MetricSlice) { num(t, gauge(ms, "tokens"), 4096, 1, "prime.step", 3) },
			[]stepValue{{3, "tokens", 4096}}},
		{"a double sum gives its number",
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, sum(ms, "reward"), 1.5, 1, "prime.step", 4) },
			[]stepValue{{4, "reward", 1.5}}},
		{"an int sum gives its number",
			func(t *testing.T, ms pmetric.MetricSlice) { num(t, sum(ms, "episodes"), 64, 1, "prime.step", 4) },
			[]stepValue{{4, "episodes", 64}}},
		{"a histogram gives count, sum, mean, min and max",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "reward").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", int64(5), "env", "gsm8k")
				dp.SetCount(4)
				dp.SetSum(3)
				dp.SetMin(0)
				dp.SetMax(1)
			},
			[]stepValue{
				{5, "reward{env=gsm8k}/count", 4}, {5, "reward{env=gsm8k}/sum", 3},
				{5, "reward{env=gsm8k}/mean", 0.75}, {5, "reward{env=gsm8k}/min", 0},
				{5, "reward{env=gsm8k}/max", 1},
			}},
		{"a histogram without sum, min or max gives only its count",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "reward").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", int64(5))
				dp.SetCount(4)
			},
			[]stepValue{{5, "reward/count", 4}}},
		{"an empty histogram has a sum but no mean",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "reward").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", int64(5))
				dp.SetSum(0)
			},
			[]stepValue{{5, "reward/count", 0}, {5, "reward/sum", 0}}},
		{"an exponential histogram gives count, sum, mean, min and max",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := expHistogram(ms, "len").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", int64(6))
				dp.SetCount(2)
				dp.SetSum(300)
				dp.SetMin(100)
				dp.SetMax(200)
			},
			[]stepValue{{6, "len/count", 2}, {6, "len/sum", 300}, {6, "len/mean", 150}, {6, "len/min", 100}, {6, "len/max", 200}}},
		{"a summary gives count, sum and one entry per quantile",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := summary(ms, "loss").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", int64(7))
				dp.SetCount(10)
				dp.SetSum(2.5)
				for _, q := range [][2]float64{{0.5, 0.2}, {0.99, 0.9}, {1, 1.25}} {
					qv := dp.QuantileValues().AppendEmpty()
					qv.SetQuantile(q[0])
					qv.SetValue(q[1])
				}
			},
			[]stepValue{{7, "loss/count", 10}, {7, "loss/sum", 2.5}, {7, "loss/q0.5", 0.2}, {7, "loss/q0.99", 0.9}, {7, "loss/q1", 1.25}}},
		{"entries follow metric order, then point order",
			func(t *testing.T, ms pmetric.MetricSlice) {
				b := gauge(ms, "b")
				dbl(t, b, 2, 1, "prime.step", 1)
				dbl(t, b, 1, 1, "prime.step", 1, "rank", 1)
				dbl(t, gauge(ms, "a"), 3, 1, "prime.step", 2)
			},
			[]stepValue{{1, "b", 2}, {1, "b{rank=1}", 1}, {2, "a", 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, ms := resource()
			tt.build(t, ms)
			entries, rejected, _ := FromResource(rm, defaultOptions())
			assertMapping(t, entries, rejected, tt.want, nil)
		})
	}
}

func TestFromResourceReadsEveryScope(t *testing.T) {
	rm, ms := resource()
	dbl(t, gauge(ms, "loss"), 0.5, 1, "prime.step", 1)
	second := rm.ScopeMetrics().AppendEmpty().Metrics()
	dbl(t, gauge(second, "kl"), 0.1, 1, "prime.step", 1)
	entries, rejected, _ := FromResource(rm, defaultOptions())
	assertMapping(t, entries, rejected, []stepValue{{1, "loss", 0.5}, {1, "kl", 0.1}}, nil)
}

func TestNonFiniteValuesAreRejectedByKeyAndNeverSent(t *testing.T) {
	tests := []struct {
		name   string
		build  func(t *testing.T, ms pmetric.MetricSlice)
		want   []stepValue
		wantRj []rejection
	}{
		{"a NaN gauge is rejected",
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "loss"), math.NaN(), 1, "prime.step", 1) },
			nil,
			[]rejection{{"non_finite", "loss", `metric "loss": value NaN is not finite and is not sent`}}},
		{"an infinite sum is rejected, naming its folded key",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dbl(t, sum(ms, "loss"), math.Inf(-1), 1, "prime.step", 1, "env", "a")
			},
			nil,
			[]rejection{{"non_finite", "loss{env=a}", `metric "loss{env=a}": value -Inf is not finite and is not sent`}}},
		{"a histogram drops only its non-finite derived entries",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "reward").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", int64(2))
				dp.SetCount(3)
				dp.SetSum(math.Inf(1))
				dp.SetMin(1)
			},
			[]stepValue{{2, "reward/count", 3}, {2, "reward/min", 1}},
			[]rejection{
				{"non_finite", "reward/sum", `metric "reward/sum": value +Inf is not finite and is not sent`},
				{"non_finite", "reward/mean", `metric "reward/mean": value +Inf is not finite and is not sent`},
			}},
		{"a summary drops only its NaN quantile",
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := summary(ms, "loss").AppendEmpty()
				attrs(t, dp.Attributes(), "prime.step", int64(2))
				dp.SetCount(1)
				dp.SetSum(1)
				qv := dp.QuantileValues().AppendEmpty()
				qv.SetQuantile(0.5)
				qv.SetValue(math.NaN())
			},
			[]stepValue{{2, "loss/count", 1}, {2, "loss/sum", 1}},
			[]rejection{{"non_finite", "loss/q0.5", `metric "loss/q0.5": value NaN is not finite and is not sent`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, ms := resource()
			tt.build(t, ms)
			entries, rejected, _ := FromResource(rm, defaultOptions())
			assertMapping(t, entries, rejected, tt.want, tt.wantRj)
		})
	}
}

func TestPointsWithNoRecordedValueProduceNothing(t *testing.T) {
	noValue := pmetric.DefaultDataPointFlags.WithNoRecordedValue(true)
	tests := []struct {
		name  string
		build func(t *testing.T, ms pmetric.MetricSlice)
	}{
		{"a gauge point with no value at all", func(t *testing.T, ms pmetric.MetricSlice) {
			attrs(t, gauge(ms, "loss").AppendEmpty().Attributes(), "prime.step", int64(1))
		}},
		{"a flagged gauge point, even without a step", func(t *testing.T, ms pmetric.MetricSlice) {
			dbl(t, gauge(ms, "loss"), 0, 1).SetFlags(noValue)
		}},
		{"a flagged histogram point", func(t *testing.T, ms pmetric.MetricSlice) {
			dp := histogram(ms, "r").AppendEmpty()
			attrs(t, dp.Attributes(), "prime.step", int64(1))
			dp.SetFlags(noValue)
		}},
		{"a flagged exponential histogram point", func(t *testing.T, ms pmetric.MetricSlice) {
			expHistogram(ms, "r").AppendEmpty().SetFlags(noValue)
		}},
		{"a flagged summary point", func(t *testing.T, ms pmetric.MetricSlice) {
			summary(ms, "r").AppendEmpty().SetFlags(noValue)
		}},
		{"a flagged step gauge point", func(t *testing.T, ms pmetric.MetricSlice) {
			dbl(t, gauge(ms, "step"), 1.5, 1).SetFlags(noValue)
		}},
		{"a metric with no data type", func(_ *testing.T, ms pmetric.MetricSlice) {
			ms.AppendEmpty().SetName("loss")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, ms := resource()
			tt.build(t, ms)
			entries, rejected, _ := FromResource(rm, defaultOptions())
			assertMapping(t, entries, rejected, nil, nil)
		})
	}
}

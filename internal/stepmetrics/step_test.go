package stepmetrics

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestTheStepComesFromPrimeStepThenTheStepGaugeAtTheSameTimestamp(t *testing.T) {
	const ts = 1_700_000_000_000_000_000
	tests := []struct {
		name   string
		opts   Options
		build  func(t *testing.T, ms pmetric.MetricSlice)
		want   []Entry
		wantRj []rejection
	}{
		{"an int prime.step attribute gives the step",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", 3) },
			[]Entry{{3, "loss", 0.5}}, nil},
		{"an integral double prime.step is accepted, as the JS SDK sends it",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", 4.0) },
			[]Entry{{4, "loss", 0.5}}, nil},
		{"a fractional prime.step is a bad step naming the attribute and its type",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", 3.5) },
			nil,
			[]rejection{{"bad_step", "loss", `metric "loss": attribute prime.step must be an int, got double 3.5`}}},
		{"a string prime.step that is not a decimal integer is a bad step",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", "three") },
			nil,
			[]rejection{{"bad_step", "loss", `metric "loss": attribute prime.step must be an int, got string`}}},
		{"the step gauge at the same timestamp gives the step, even reported after the point",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				dbl(t, gauge(ms, "loss"), 0.5, ts)
				num(t, gauge(ms, "step"), 10, ts)
			},
			[]Entry{{10, "loss", 0.5}, {10, "step", 10}}, nil},
		{"a step sum works as the step gauge does, an integral double too",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				dbl(t, sum(ms, "step"), 11, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{{11, "step", 11}, {11, "loss", 0.5}}, nil},
		{"the step gauge gives a histogram its step too",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 12, ts)
				dp := histogram(ms, "reward").AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetCount(1)
			},
			[]Entry{{12, "step", 12}, {12, "reward/count", 1}}, nil},
		{"the prime.step attribute wins over the step gauge",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 10, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", 2)
			},
			[]Entry{{10, "step", 10}, {2, "loss", 0.5}}, nil},
		{"the step metric's own value is its step, whatever its attributes say",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 5, ts, "prime.step", 99, "rank", 0)
			},
			[]Entry{{5, "step{rank=0}", 5}}, nil},
		{"a step gauge at another timestamp gives no step",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 10, ts+1)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{{10, "step", 10}},
			[]rejection{{"no_step", "loss", `metric "loss": data point has no prime.step attribute and no "step" gauge at its timestamp`}}},
		{"a point with neither is rejected as having no step",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "loss"), 0.5, ts) },
			nil,
			[]rejection{{"no_step", "loss", `metric "loss": data point has no prime.step attribute and no "step" gauge at its timestamp`}}},
		{"a zero timestamp never matches the step gauge",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 10, 0)
				dbl(t, gauge(ms, "loss"), 0.5, 0)
			},
			[]Entry{{10, "step", 10}},
			[]rejection{{"no_step", "loss", `metric "loss": data point has no prime.step attribute and no timestamp to match a "step" gauge at`}}},
		{"a fractional step gauge is a bad step, for itself and for the points leaning on it",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				dbl(t, gauge(ms, "step"), 2.5, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			nil,
			[]rejection{
				{"bad_step", "step", `metric "step": value 2.5 is not an integral step`},
				{"bad_step", "loss", `metric "loss": the "step" gauge at its timestamp is not an integral step`},
			}},
		{"step gauges that disagree at one timestamp give the points there no step rather than a guess",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				st := gauge(ms, "step")
				num(t, st, 10, ts, "rank", 0)
				num(t, st, 11, ts, "rank", 1)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{{10, "step{rank=0}", 10}, {11, "step{rank=1}", 11}},
			[]rejection{{"bad_step", "loss", `metric "loss": the "step" gauge reports different steps at its timestamp`}}},
		{"step gauges that agree at one timestamp give the step",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				st := gauge(ms, "step")
				num(t, st, 10, ts, "rank", 0)
				num(t, st, 10, ts, "rank", 1)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{{10, "step{rank=0}", 10}, {10, "step{rank=1}", 10}, {10, "loss", 0.5}}, nil},
		{"a histogram named like the step metric is an ordinary metric",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "step").AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetCount(1)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			nil,
			[]rejection{
				{"no_step", "step", `metric "step": data point has no prime.step attribute and no "step" gauge at its timestamp`},
				{"no_step", "loss", `metric "loss": data point has no prime.step attribute and no "step" gauge at its timestamp`},
			}},
		{"the step metric's name comes from the options",
			Options{StepMetric: "trainer/step"},
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "trainer/step"), 7, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{{7, "trainer/step", 7}, {7, "loss", 0.5}}, nil},
		{"an empty step metric name turns the fallback off",
			Options{},
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 7, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", 7)
			},
			[]Entry{{7, "loss", 0.5}},
			[]rejection{{"no_step", "step", `metric "step": data point has no prime.step attribute`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, ms := resource()
			tt.build(t, ms)
			entries, rejected, _ := FromResource(rm, tt.opts)
			assertMapping(t, entries, rejected, tt.want, tt.wantRj)
		})
	}
}

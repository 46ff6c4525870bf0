package stepmetrics

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestAPointsRowIsItsStepFromPrimeStepThenTheStepGaugeAtItsTimestampElseItsTime(t *testing.T) {
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
			[]Entry{stepped(3, "loss", 0.5, ts)}, nil},
		{"an integral double prime.step is accepted, as the JS SDK sends it",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", 4.0) },
			[]Entry{stepped(4, "loss", 0.5, ts)}, nil},
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
			[]Entry{stepped(10, "loss", 0.5, ts), stepped(10, "step", 10, ts)}, nil},
		{"a step sum works as the step gauge does, an integral double too",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				dbl(t, sum(ms, "step"), 11, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{stepped(11, "step", 11, ts), stepped(11, "loss", 0.5, ts)}, nil},
		{"the step gauge gives a histogram its step too",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 12, ts)
				dp := histogram(ms, "reward").AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetCount(1)
			},
			[]Entry{stepped(12, "step", 12, ts), stepped(12, "reward/count", 1, ts)}, nil},
		{"the prime.step attribute wins over the step gauge",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 10, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", 2)
			},
			[]Entry{stepped(10, "step", 10, ts), stepped(2, "loss", 0.5, ts)}, nil},
		{"the step metric's own value is its step, whatever its attributes say",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 5, ts, "prime.step", 99, "rank", 0)
			},
			[]Entry{stepped(5, "step{rank=0}", 5, ts)}, nil},
		{"a zero timestamp never matches the step gauge, and gives no time to key a row by",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 10, 0)
				dbl(t, gauge(ms, "loss"), 0.5, 0)
			},
			[]Entry{stepped(10, "step", 10, 0)},
			[]rejection{{"no_step", "loss", `metric "loss": data point has neither a prime.step attribute nor a timestamp`}}},
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
			[]Entry{stepped(10, "step{rank=0}", 10, ts), stepped(11, "step{rank=1}", 11, ts)},
			[]rejection{{"bad_step", "loss", `metric "loss": the "step" gauge reports different steps at its timestamp`}}},
		{"step gauges that agree at one timestamp give the step",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				st := gauge(ms, "step")
				num(t, st, 10, ts, "rank", 0)
				num(t, st, 10, ts, "rank", 1)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{stepped(10, "step{rank=0}", 10, ts), stepped(10, "step{rank=1}", 10, ts), stepped(10, "loss", 0.5, ts)}, nil},
		{"the step metric's name comes from the options",
			Options{StepMetric: "trainer/step"},
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "trainer/step"), 7, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{stepped(7, "trainer/step", 7, ts), stepped(7, "loss", 0.5, ts)}, nil},
		{"a point with neither prime.step nor a step gauge is the row of its timestamp",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "inference/ttft"), 0.25, ts, "rank", 0) },
			[]Entry{timed("inference/ttft{rank=0}", 0.25, ts)}, nil},
		{"a step gauge at another timestamp leaves the point to the row of its own time",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 10, ts+1)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{stepped(10, "step", 10, ts+1), timed("loss", 0.5, ts)}, nil},
		{"a histogram with no step gives every entry of its time row",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "latency").AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetCount(2)
				dp.SetSum(3)
			},
			[]Entry{
				timed("latency/count", 2, ts),
				timed("latency/sum", 3, ts),
				timed("latency/mean", 1.5, ts),
			}, nil},
		{"a histogram named like the step metric is an ordinary metric, which gives no step",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) {
				dp := histogram(ms, "step").AppendEmpty()
				dp.SetTimestamp(ts)
				dp.SetCount(1)
				dbl(t, gauge(ms, "loss"), 0.5, ts)
			},
			[]Entry{timed("step/count", 1, ts), timed("loss", 0.5, ts)}, nil},
		{"with the step fallback off, the step metric is a time-keyed value like any other",
			Options{},
			func(t *testing.T, ms pmetric.MetricSlice) {
				num(t, gauge(ms, "step"), 7, ts)
				dbl(t, gauge(ms, "loss"), 0.5, ts, "prime.step", 7)
			},
			[]Entry{timed("step", 7, ts), stepped(7, "loss", 0.5, ts)}, nil},
		{"a prime.step of the wrong type is a bad step, never the row of the point's time",
			defaultOptions(),
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "lr"), 0.1, ts, "prime.step", []any{1}) },
			nil,
			[]rejection{{"bad_step", "lr", `metric "lr": attribute prime.step must be an int, got list`}}},
		{"an evaluation's point stays an entry of step 0, never time-keyed",
			Options{StepMetric: "step", Stepless: true},
			func(t *testing.T, ms pmetric.MetricSlice) { dbl(t, gauge(ms, "accuracy"), 0.5, ts) },
			[]Entry{stepped(0, "accuracy", 0.5, ts)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rm, ms := resource()
			tt.build(t, ms)
			entries, rejected, _ := FromResource(rm, tt.opts)
			assertEntries(t, entries, rejected, tt.want, tt.wantRj)
		})
	}
}

package stepmetrics

import (
	"math"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestFromEventMapsAPrimeMetricsEventToItsStepsEntries(t *testing.T) {
	tests := []struct {
		name   string
		attrs  []any
		body   func(t *testing.T) pcommon.Value
		want   []stepValue
		wantRj []rejection
	}{
		{"every other attribute is a metric, ints read as numbers",
			[]any{"event.name", "prime.metrics", "prime.step", int64(3), "loss", 0.25, "reward/mean", int64(1)},
			emptyBody,
			[]stepValue{{3, "loss", 0.25}, {3, "reward/mean", 1}}, nil},
		{"an integral double step is accepted",
			[]any{"prime.step", 3.0, "loss", 0.25},
			emptyBody,
			[]stepValue{{3, "loss", 0.25}}, nil},
		{"prime. attributes and log-bridge provenance are not metrics, code.pass_rate is",
			[]any{"prime.step", int64(3), "prime.run.key", "r", "code.lineno", int64(42), "thread.id", int64(7),
				"code.filepath", "train.py", "code.pass_rate", 0.5},
			emptyBody,
			[]stepValue{{3, "code.pass_rate", 0.5}}, nil},
		{"a non-number value is rejected on its own and the others still count",
			[]any{"prime.step", int64(3), "loss", 0.25, "note", "warmup", "cfg", map[string]any{"lr": 0.1}},
			emptyBody,
			[]stepValue{{3, "loss", 0.25}},
			[]rejection{
				{"bad_value", "note", `prime.metrics event: value of "note" must be a number, got string`},
				{"bad_value", "cfg", `prime.metrics event: value of "cfg" must be a number, got map`},
			}},
		{"a non-finite value is rejected by name",
			[]any{"prime.step", int64(3), "loss", math.Inf(1), "kl", 0.1},
			emptyBody,
			[]stepValue{{3, "kl", 0.1}},
			[]rejection{{"non_finite", "loss", `metric "loss": value +Inf is not finite and is not sent`}}},
		{"a body map holds the values; attributes then only give the step",
			[]any{"prime.step", int64(5), "code.lineno", int64(42), "stray", 1.0},
			func(t *testing.T) pcommon.Value {
				v := pcommon.NewValueMap()
				attrs(t, v.Map(), "loss", 0.5, "tokens", int64(100), "prime.step", int64(9), "bad", []any{1})
				return v
			},
			[]stepValue{{5, "loss", 0.5}, {5, "tokens", 100}},
			[]rejection{{"bad_value", "bad", `prime.metrics event: value of "bad" must be a number, got list`}}},
		{"a body string holding a JSON object is parsed, in document order",
			[]any{"prime.step", int64(6)},
			strBody(` {"z": 1, "a": 0.5, "lr": 1e-6, "name": "x"}`),
			[]stepValue{{6, "z", 1}, {6, "a", 0.5}, {6, "lr", 1e-6}},
			[]rejection{{"bad_value", "name", `prime.metrics event: value of "name" must be a number, got string`}}},
		{"a body string that is message text leaves the values to the attributes",
			[]any{"prime.step", int64(6), "loss", 0.5},
			strBody("step 6 metrics"),
			[]stepValue{{6, "loss", 0.5}}, nil},
		{"a body that looks like JSON but does not parse is named, and the attributes still count",
			[]any{"prime.step", int64(6), "loss", 0.5},
			strBody(`{"loss": 0.5,`),
			[]stepValue{{6, "loss", 0.5}},
			[]rejection{{"bad_value", "body", `prime.metrics event: body looks like a JSON object but does not parse: unexpected end of JSON input`}}},
		{"a body with data after its JSON object does not parse",
			[]any{"prime.step", int64(6)},
			strBody(`{"loss": 0.5} {}`),
			nil,
			[]rejection{{"bad_value", "body", `prime.metrics event: body looks like a JSON object but does not parse: invalid character '{' after top-level value`}}},
		{"an empty body map leaves the values to the attributes",
			[]any{"prime.step", int64(6), "loss", 0.5},
			func(*testing.T) pcommon.Value { return pcommon.NewValueMap() },
			[]stepValue{{6, "loss", 0.5}}, nil},
		{"a missing prime.step on a record with no time either is no step",
			[]any{"loss", 0.5},
			emptyBody,
			nil,
			[]rejection{{"no_step", "prime.step", `prime.metrics event has neither a prime.step attribute nor a timestamp`}}},
		{"a fractional prime.step is a bad step",
			[]any{"prime.step", 2.5, "loss", 0.5},
			emptyBody,
			nil,
			[]rejection{{"bad_step", "prime.step", `prime.metrics event: attribute prime.step must be an int, got double 2.5`}}},
		{"a string prime.step that is not a decimal integer is a bad step",
			[]any{"prime.step", "2.0", "loss", 0.5},
			emptyBody,
			nil,
			[]rejection{{"bad_step", "prime.step", `prime.metrics event: attribute prime.step must be an int, got string`}}},
		{"an event with only its step has no values",
			[]any{"event.name", "prime.metrics", "prime.step", int64(6)},
			emptyBody,
			nil,
			[]rejection{{"no_values", "prime.metrics", `prime.metrics event for step 6 carries no values`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, rejected, _ := FromEvent(record(t, tt.body(t), 0, 0, tt.attrs...))
			assertMapping(t, entries, rejected, tt.want, tt.wantRj)
		})
	}
}

func TestAPrimeMetricsEventWithNoStepIsKeyedByItsTime(t *testing.T) {
	const (
		recorded = 1_767_225_600_000_000_000
		observed = 1_767_225_600_500_000_000
	)
	tests := []struct {
		name            string
		attrs           []any
		body            func(t *testing.T) pcommon.Value
		timestamp, seen uint64
		want            []Entry
		wantRj          []rejection
	}{
		{"its values are one row at the record's timestamp",
			[]any{"event.name", "prime.metrics", "inference/ttft", 0.25, "inference/tokens_per_s", int64(900)},
			emptyBody, recorded, observed,
			[]Entry{
				timed("inference/ttft", 0.25, recorded),
				timed("inference/tokens_per_s", 900, recorded),
			}, nil},
		{"with no record timestamp, the observed timestamp keys the row",
			[]any{"loss", 0.5},
			emptyBody, 0, observed,
			[]Entry{timed("loss", 0.5, observed)}, nil},
		{"a body map gives a time row its values, and a value named step gives no step",
			nil,
			func(t *testing.T) pcommon.Value {
				v := pcommon.NewValueMap()
				attrs(t, v.Map(), "loss", 0.5, "step", int64(9))
				return v
			},
			recorded, 0,
			[]Entry{timed("loss", 0.5, recorded), timed("step", 9, recorded)}, nil},
		{"with neither timestamp there is nothing to key the values by",
			[]any{"loss", 0.5},
			emptyBody, 0, 0,
			nil,
			[]rejection{{"no_step", "prime.step", `prime.metrics event has neither a prime.step attribute nor a timestamp`}}},
		{"an event with a step carries the record's time, for the post's _timestamp",
			[]any{"prime.step", int64(4), "loss", 0.5},
			emptyBody, recorded, observed,
			[]Entry{stepped(4, "loss", 0.5, recorded)}, nil},
		{"a step event with only an observed timestamp carries that",
			[]any{"prime.step", "4", "loss", 0.5},
			emptyBody, 0, observed,
			[]Entry{stepped(4, "loss", 0.5, observed)}, nil},
		{"a bad prime.step is still a bad step, never the row of its time",
			[]any{"prime.step", "four", "loss", 0.5},
			emptyBody, recorded, observed,
			nil,
			[]rejection{{"bad_step", "prime.step", `prime.metrics event: attribute prime.step must be an int, got string`}}},
		{"a prime.step of the wrong type is still a bad step",
			[]any{"prime.step", map[string]any{"n": int64(4)}, "loss", 0.5},
			emptyBody, recorded, observed,
			nil,
			[]rejection{{"bad_step", "prime.step", `prime.metrics event: attribute prime.step must be an int, got map`}}},
		{"a time row with no values names its time",
			[]any{"event.name", "prime.metrics"},
			emptyBody, recorded, 0,
			nil,
			[]rejection{{"no_values", "prime.metrics", `prime.metrics event at 2026-01-01T00:00:00Z carries no values`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, rejected, _ := FromEvent(record(t, tt.body(t), tt.timestamp, tt.seen, tt.attrs...))
			assertEntries(t, entries, rejected, tt.want, tt.wantRj)
		})
	}
}

func emptyBody(*testing.T) pcommon.Value { return pcommon.NewValueEmpty() }

func strBody(s string) func(*testing.T) pcommon.Value {
	return func(*testing.T) pcommon.Value { return pcommon.NewValueStr(s) }
}

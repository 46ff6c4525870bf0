package evalsample

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/rft"
)

func TestTheVerifiersFixtureIsOneSampleOfItsEpisode(t *testing.T) {
	const (
		branch1 = `[{"role":"system","content":"Answer briefly."},{"role":"user","content":"What is 6*7?"},` +
			`{"role":"assistant","content":"Let me think... 42"}]`
		branch2 = `[{"role":"system","content":"Answer briefly."},{"role":"user","content":"Summary: asked 6*7. Answer now."},` +
			`{"role":"assistant","content":"42","reasoning_content":"6*7=42"}]`
	)
	record := compact(t, fixtureText(t))
	for _, form := range []struct {
		name string
		body pcommon.Value
	}{{"JSON text", pcommon.NewValueStr(fixtureText(t))}, {"a map", jsonValue(t, fixtureText(t))}} {
		t.Run(form.name, func(t *testing.T) {
			res, err := FromRecord(form.body, NewCounters(0))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Samples) != 1 || res.PerTrace {
				t.Fatalf("%d samples (per trace %v), want one", len(res.Samples), res.PerTrace)
			}
			s := res.Samples[0]
			for key, want := range map[string]string{
				"sample_id":      `"9b2e4f6a8c0d1e3f5a7b9c1d3e5f7a9b"`,
				"episode_id":     `"9b2e4f6a8c0d1e3f5a7b9c1d3e5f7a9b"`,
				"example_id":     `7`,
				"rollout_number": `1`,
				"agent":          `"solver"`,
				"trainable":      `true`,
				"prompt":         `[]`,
				"completion":     branch2,
				"answer":         `"42"`,
				"tool_defs":      `null`,
				"reward":         `1`,
				"is_completed":   `true`,
				"is_truncated":   `false`,
				"error":          `null`,
				"stop_condition": `"stop"`,
				"trajectory": `[{"messages":` + branch1 + `,"num_input_tokens":5,"num_output_tokens":3},` +
					`{"messages":` + branch2 + `,"num_input_tokens":6,"num_output_tokens":1}]`,
				"token_usage":    `{"prompt_tokens":9,"completion_tokens":4,"cached_input_tokens":2}`,
				"info":           `{"advantage":0.5,"native_wrapper":` + record + `,"native_trace_index":0}`,
				"correct_answer": `1.0`,
			} {
				got := field(t, s, key)
				if !reflect.DeepEqual(decoded(t, []byte(got)), decoded(t, []byte(want))) {
					t.Errorf("%s = %s, want %s", key, got, want)
				}
			}
			if !reflect.DeepEqual(decoded(t, res.Document), decoded(t, []byte(record))) {
				t.Errorf("document %s is not the record", res.Document)
			}
			want := Episode{OK: true, Traces: []Trace{{Trainable: true, Reward: 1, HasReward: true,
				Metrics: []Metric{{"correct_answer", 1}, {"num_turns", 2}}}}}
			if !reflect.DeepEqual(res.Episode, want) {
				t.Errorf("episode %+v, want %+v", res.Episode, want)
			}
		})
	}
}

func TestRolloutNumbersCountEachExamplesEpisodesAcrossRecords(t *testing.T) {
	tests := []struct {
		name     string
		counters *Counters
		examples []int
		want     []string
	}{
		{"one counter per example", NewCounters(0), []int{4, 4, 5, 4, 5}, []string{"1", "2", "1", "3", "2"}},
		{"no counters: every rollout is the first", nil, []int{4, 4}, []string{"1", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, idx := range tt.examples {
				res, err := FromRecord(pcommon.NewValueStr(doc(idx, trace(idx, true, ""))), tt.counters)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, field(t, res.Samples[0], "rollout_number"))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("rollout numbers %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRecordsThatGiveNoNumberedSampleTakeNoRolloutNumber(t *testing.T) {
	for name, body := range map[string]string{
		"a plain sample":              `{"sample_id":"s","example_id":4,"rollout_number":9}`,
		"a document without traces":   doc(4),
		"a document that is rejected": doc(4, trace(4, true, `"calls":[{"node":"x"}]`)),
	} {
		t.Run(name, func(t *testing.T) {
			c := NewCounters(0)
			_, _ = FromRecord(pcommon.NewValueStr(body), c)
			if c.Len() != 0 {
				t.Fatalf("%d examples counted", c.Len())
			}
		})
	}
}

func TestEveryEpisodeOfAnEvaluationIsASampleWhateverItsWork(t *testing.T) {
	train := strings.Replace(doc(1, trace(1, true, "")), `"run":{"type":"eval","id":"e-1"}`,
		`"run":{"type":"train","id":"p","work":{"type":"eval","step":3}}`, 1)
	for name, body := range map[string]string{"eval run": doc(1, trace(1, true, "")), "eval work of a train run": train} {
		t.Run(name, func(t *testing.T) {
			res, err := FromRecord(pcommon.NewValueStr(body), nil)
			if err != nil || len(res.Samples) != 1 {
				t.Fatalf("%d samples, %v; want one", len(res.Samples), err)
			}
		})
	}
}

func TestADocumentWithoutTracesHasNoSampleButIsAnEpisode(t *testing.T) {
	body := `{"id":"e","task":{"type":"T","data":{}},"ok":false,"errors":[{"type":"E","message":"hook"}],"traces":[]}`
	res, err := FromRecord(pcommon.NewValueStr(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != 0 || res.Document == nil || !reflect.DeepEqual(res.Episode, Episode{OK: false, Traces: []Trace{}}) {
		t.Fatalf("samples %d, document %q, episode %+v; want no sample and a failed episode", len(res.Samples), res.Document, res.Episode)
	}
}

func TestATracesMetricsReplaceItsScoresOfTheSameName(t *testing.T) {
	body := doc(1, trace(1, true, `"rewards":{"acc":{"score":1.0},"fmt":{"score":0.5}},"metrics":{"acc":0.25,"turns":3,"gone":null}`))
	res, err := FromRecord(pcommon.NewValueStr(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Metric{{"acc", 0.25}, {"fmt", 0.5}, {"turns", 3}}
	if got := res.Episode.Traces[0].Metrics; !reflect.DeepEqual(got, want) {
		t.Fatalf("metrics %v, want %v", got, want)
	}
	// The sample itself flattens the score, as the SDK does.
	if got := field(t, res.Samples[0], "acc"); got != "1.0" {
		t.Fatalf("acc = %s, want the score", got)
	}
}

func TestAPlainSampleIsPassedThroughUnchanged(t *testing.T) {
	nan := jsonValue(t, `{"sample_id":"s","reward":0}`)
	nan.Map().PutDouble("reward", math.Inf(1))
	tests := []struct {
		name string
		body pcommon.Value
		want string
	}{
		{"a map, its keys in order and ints as ints", jsonValue(t, `{"sample_id":"s","z":1,"a":{"y":[1,2.5]},"rollout_number":7}`),
			`{"sample_id":"s","z":1,"a":{"y":[1,2.5]},"rollout_number":7}`},
		{"a map's ±Inf as null", nan, `{"sample_id":"s","reward":null}`},
		{"a JSON object as text, compacted", pcommon.NewValueStr("{ \"sample_id\": 3,\n \"reward\": 1.0 }"), `{"sample_id":3,"reward":1.0}`},
		{"Python's NaN in text as null", pcommon.NewValueStr(`{"sample_id":"s","reward":NaN}`), `{"sample_id":"s","reward":null}`},
		{"a traces key that is not a list", pcommon.NewValueStr(`{"sample_id":"s","traces":"x"}`), `{"sample_id":"s","traces":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := FromRecord(tt.body, NewCounters(0))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Samples) != 1 || string(res.Samples[0]) != tt.want || res.Document != nil {
				t.Fatalf("samples %s, document %q; want %s", res.Samples, res.Document, tt.want)
			}
		})
	}
}

func TestAPlainSampleTellsTheSummaryWhatItsKeysSay(t *testing.T) {
	tests := []struct {
		name, body string
		want       Episode
	}{
		{"a bare sample: ok, not trainable, no reward", `{"sample_id":"s"}`, Episode{OK: true, Traces: []Trace{{}}}},
		{"reward, metrics and trainable", `{"sample_id":"s","trainable":true,"reward":0.5,"metrics":{"a":1,"b":null,"c":"x","a":2}}`,
			Episode{OK: true, Traces: []Trace{{Trainable: true, Reward: 0.5, HasReward: true, Metrics: []Metric{{"a", 2}}}}}},
		{"an error", `{"sample_id":"s","error":{"type":"E"}}`, Episode{OK: false, Traces: []Trace{{}}}},
		{"a null error is none", `{"sample_id":"s","error":null}`, Episode{OK: true, Traces: []Trace{{}}}},
		{"a null reward is none", `{"sample_id":"s","reward":null}`, Episode{OK: true, Traces: []Trace{{}}}},
		{"a reward past float64 is infinite", `{"sample_id":"s","reward":1e400}`,
			Episode{OK: true, Traces: []Trace{{Reward: math.Inf(1), HasReward: true}}}},
		{"trainable only when true", `{"sample_id":"s","trainable":"yes"}`, Episode{OK: true, Traces: []Trace{{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := FromRecord(pcommon.NewValueStr(tt.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Episode, tt.want) {
				t.Fatalf("episode %+v, want %+v", res.Episode, tt.want)
			}
		})
	}
}

func TestAPlainSampleWithoutSampleIDIsRejected(t *testing.T) {
	for name, body := range map[string]pcommon.Value{
		"a map without it":             jsonValue(t, `{"reward":1}`),
		"text without it":              pcommon.NewValueStr(`{"reward":1}`),
		"a null sample_id":             pcommon.NewValueStr(`{"sample_id":null}`),
		"traces that are not a list":   pcommon.NewValueStr(`{"traces":{}}`),
		"sample_id only in a sub-map":  pcommon.NewValueStr(`{"info":{"sample_id":"s"}}`),
		"an empty map":                 pcommon.NewValueMap(),
		"an empty JSON object as text": pcommon.NewValueStr(`{}`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := FromRecord(body, nil)
			wantRejection(t, err, reject.NoSampleID, "body.sample_id", "must carry sample_id")
		})
	}
}

func TestABodyThatHoldsNoSampleIsRejected(t *testing.T) {
	for name, body := range map[string]pcommon.Value{
		"no body":       pcommon.NewValueEmpty(),
		"an int":        pcommon.NewValueInt(3),
		"a log line":    pcommon.NewValueStr("rollout 3 done"),
		"broken JSON":   pcommon.NewValueStr(`{"sample_id":"s",`),
		"a list of two": jsonValue(t, `[{"sample_id":"a"},{"sample_id":"b"}]`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := FromRecord(body, nil)
			wantRejection(t, err, reject.BadBody, "body", "prime.episode: ")
		})
	}
}

func TestADocumentThatDoesNotFitIsRejectedNamingThePath(t *testing.T) {
	_, err := FromRecord(pcommon.NewValueStr(doc(1, trace(1, true, `"rewards":{"r":{"score":"high"}}`))), nil)
	wantRejection(t, err, reject.BadValue, "body.traces", "traces[0].rewards.r.score")
}

func TestASampleNoRequestCanCarryIsRejected(t *testing.T) {
	sample := `{"sample_id":"s","blob":"` + strings.Repeat("a", 100) + `"}`
	tests := []struct {
		name   string
		body   string
		limit  int
		reject bool
	}{
		{"a plain sample at the limit", sample, len(sample), false},
		{"a plain sample past it", sample, len(sample) - 1, true},
		// A document's per-trace samples are each still over a tiny limit.
		{"a document whose traces are each too large", doc(1, trace(1, true, `"info":{"blob":"`+strings.Repeat("b", 100)+`"}`)), 100, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fromRecord(pcommon.NewValueStr(tt.body), nil, tt.limit)
			if !tt.reject {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantRejection(t, err, reject.EpisodeTooLarge, "body", "cannot be sent")
		})
	}
}

func TestTheSampleLimitIsTheRequestsLessItsEnvelope(t *testing.T) {
	// The largest sample FromRecord takes is one rft.SampleBatches can send
	// alone; one byte more is one it cannot.
	for _, tt := range []struct {
		extra  int
		reject bool
	}{{0, false}, {1, true}} {
		prefix, suffix := `{"sample_id":"s","blob":"`, `"}`
		blob := strings.Repeat("a", maxSampleBytes-len(prefix)-len(suffix)+tt.extra)
		sample := prefix + blob + suffix
		res, err := FromRecord(pcommon.NewValueStr(sample), nil)
		if tt.reject {
			wantRejection(t, err, reject.EpisodeTooLarge, "body", "cannot be sent")
			_, tooLarge, _ := rft.SampleBatches([]json.RawMessage{json.RawMessage(sample)})
			if len(tooLarge) != 1 {
				t.Fatal("rft.SampleBatches would send what FromRecord rejects")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if batches, tooLarge, _ := rft.SampleBatches(res.Samples); len(batches) != 1 || len(tooLarge) != 0 {
			t.Fatalf("rft.SampleBatches cannot send a sample FromRecord takes (%d batches, too large %v)", len(batches), tooLarge)
		}
	}
}

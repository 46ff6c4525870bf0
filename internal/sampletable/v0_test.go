package sampletable

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/reject"
)

// projectV0 reads body as an evaluation's and projects it, every episode
// taking rollout number 1.
func projectV0(tb testing.TB, body pcommon.Value, limit int) V0Episode {
	tb.Helper()
	b, err := ReadEvalBody(body)
	if err != nil {
		tb.Fatalf("ReadEvalBody: %v", err)
	}
	if !b.IsDocument() {
		tb.Fatal("not a document")
	}
	ep, err := b.doc.projectV0(func(string) int64 { return 1 }, limit)
	if err != nil {
		tb.Fatalf("projectV0: %v", err)
	}
	return ep
}

// v0BothForms projects doc given as an OTLP map and as JSON text, and
// hands check each projection.
func v0BothForms(t *testing.T, doc string, check func(*testing.T, V0Episode)) {
	t.Helper()
	for _, form := range []struct {
		name string
		body pcommon.Value
	}{{"a map", jsonValue(t, doc)}, {"JSON text", pcommon.NewValueStr(doc)}} {
		t.Run(form.name, func(t *testing.T) { check(t, projectV0(t, form.body, maxSampleBytes)) })
	}
}

// sampleField is one key of a sample, as JSON text.
func sampleField(tb testing.TB, sample, key string) string {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(sample), &m); err != nil {
		tb.Fatalf("sample is not a JSON object: %v\n%s", err, sample)
	}
	v, ok := m[key]
	if !ok {
		tb.Fatalf("sample has no %s: %s", key, sample)
	}
	return string(v)
}

// sampleKeys are a sample's keys, in order.
func sampleKeys(tb testing.TB, sample string) []string {
	tb.Helper()
	var keys []string
	EachMember(sample, func(k, _ string) bool { keys = append(keys, k); return true })
	return keys
}

func TestTheVerifiersFixtureProjectsToTheV0SampleWorkedOutByHand(t *testing.T) {
	const (
		branch1 = `[{"role":"system","content":"Answer briefly."},{"role":"user","content":"What is 6*7?"},` +
			`{"role":"assistant","content":"Let me think... 42"}]`
		branch2 = `[{"role":"system","content":"Answer briefly."},{"role":"user","content":"Summary: asked 6*7. Answer now."},` +
			`{"role":"assistant","content":"42","reasoning_content":"6*7=42"}]`
	)
	doc := compact(t, fixtureText(t))
	want := `{"sample_id":"9b2e4f6a8c0d1e3f5a7b9c1d3e5f7a9b","example_id":7,"rollout_number":4,` +
		`"episode_id":"9b2e4f6a8c0d1e3f5a7b9c1d3e5f7a9b","agent":"solver","trainable":true,` +
		`"task":{"idx":7,"prompt":"What is 6*7?","network_allow":["*"],"network_block":[],"artifacts":[],` +
		`"timeout":{},"resources":{},"question":"What is 6*7?","answer":"42"},` +
		`"prompt":[],"completion":` + branch2 + `,"answer":"42","tool_defs":null,"reward":1,` +
		`"timing":{"start":1755800000.0,"boot":{"start":1755800000.0,"end":1755800000.05},` +
		`"setup":{"start":1755800000.05,"end":1755800000.1},` +
		`"agent":{"start":1755800000.1,"end":1755800003.0,"model":{"duration":1.9},"harness":{"duration":1.0}},` +
		`"finalize":{"start":1755800003.0,"end":1755800003.1},"scoring":{"start":1755800003.1,"end":1755800003.2}},` +
		`"is_completed":true,"is_truncated":false,"metrics":{"num_turns":2.0,"judge_latency":null},"error":null,` +
		`"stop_condition":"stop",` +
		`"trajectory":[{"messages":` + branch1 + `,"num_input_tokens":5,"num_output_tokens":3},` +
		`{"messages":` + branch2 + `,"num_input_tokens":6,"num_output_tokens":1}],` +
		`"token_usage":{"prompt_tokens":9,"completion_tokens":4,"cached_input_tokens":2},` +
		`"info":{"advantage":0.5,"native_wrapper":` + doc + `,"native_trace_index":0},` +
		`"correct_answer":1.0}`

	b, err := ReadEvalBody(pcommon.NewValueStr(fixtureText(t)))
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	ep, err := b.ProjectV0(func(id string) int64 { asked = append(asked, id); return 4 })
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Samples) != 1 || ep.PerTrace || !ep.OK || ep.Document != doc {
		t.Fatalf("%d samples, per trace %v, ok %v, document %q", len(ep.Samples), ep.PerTrace, ep.OK, ep.Document)
	}
	if ep.Samples[0] != want {
		t.Fatalf("sample\n got %s\nwant %s", ep.Samples[0], want)
	}
	if !reflect.DeepEqual(asked, []string{"7"}) {
		t.Fatalf("rollout number asked for %q, want once for example 7", asked)
	}
	wantValues := []TraceValues{{Trainable: true, Reward: 1, Scores: []NamedValue{{"correct_answer", 1}},
		Metrics: []NamedValue{{"num_turns", 2}}}}
	if !reflect.DeepEqual(ep.Traces, wantValues) {
		t.Fatalf("trace values %+v, want %+v", ep.Traces, wantValues)
	}
}

func TestAV0SampleIsTheSameFromAnOTLPMapOrJSONText(t *testing.T) {
	asMap := projectV0(t, jsonValue(t, fixtureText(t)), maxSampleBytes)
	asText := projectV0(t, pcommon.NewValueStr(fixtureText(t)), maxSampleBytes)
	var m, x any
	if err := json.Unmarshal([]byte(asMap.Samples[0]), &m); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(asText.Samples[0]), &x); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, x) {
		t.Fatalf("samples differ:\n%s\n%s", asMap.Samples[0], asText.Samples[0])
	}
	if !reflect.DeepEqual(sampleKeys(t, asMap.Samples[0]), sampleKeys(t, asText.Samples[0])) {
		t.Fatal("the two forms order keys differently")
	}
}

func TestAV0SampleHasTheSDKsKeysInItsOrderThenTheSubRewards(t *testing.T) {
	doc := nativeDoc(nativeTrace(chain(1) + `,"rewards":{"format":{"score":1.0,"weight":0.5},"skip":null,` +
		`"reward":{"score":9.0},"correct":{"score":0,"weight":2},"info":{"score":3}}`))
	v0BothForms(t, doc, func(t *testing.T, ep V0Episode) {
		want := []string{"sample_id", "example_id", "rollout_number", "episode_id", "agent", "trainable", "task", "prompt",
			"completion", "answer", "tool_defs", "reward", "timing", "is_completed", "is_truncated", "metrics", "error",
			"stop_condition", "trajectory", "token_usage", "info", "format", "correct"}
		s := ep.Samples[0]
		if got := sampleKeys(t, s); !reflect.DeepEqual(got, want) {
			t.Fatalf("keys %v\nwant %v", got, want)
		}
		// A sub-reward named like a field leaves the field alone (the
		// SDK's setdefault); the weight does not scale a flattened score.
		for key, want := range map[string]string{"reward": "12.5", "format": "1", "correct": "0"} {
			var got, w float64
			_ = json.Unmarshal([]byte(sampleField(t, s, key)), &got)
			_ = json.Unmarshal([]byte(want), &w)
			if got != w {
				t.Errorf("%s = %s, want %s", key, sampleField(t, s, key), want)
			}
		}
	})
}

func TestAKeyTheDocumentLeavesOutIsNull(t *testing.T) {
	doc := `{"traces":[{"nodes":[{"message":{"role":"user","content":"hi"}}]}]}`
	v0BothForms(t, doc, func(t *testing.T, ep V0Episode) {
		s := ep.Samples[0]
		for key, want := range map[string]string{
			"sample_id": "null", "example_id": "null", "episode_id": "null", "agent": "null", "trainable": "null",
			"task": "null", "answer": "null", "tool_defs": "null", "reward": "0", "timing": "null", "is_completed": "null",
			"is_truncated": "false", "metrics": "{}", "error": "null", "stop_condition": "null", "token_usage": "null",
			"prompt": "[]", "completion": `[{"role":"user","content":"hi"}]`,
		} {
			if got := sampleField(t, s, key); got != want {
				t.Errorf("%s = %s, want %s", key, got, want)
			}
		}
		if ep.OK {
			t.Error("a document without ok is taken as ok")
		}
	})
}

func TestAV0SampleTakesWhatTheTraceGives(t *testing.T) {
	tests := []struct {
		name, members, key, want string
	}{
		{"the last error of the trace", `"errors":[{"type":"A","message":"first"},{"type":"B","message":"last","status_code":500}]`,
			"error", `{"type":"B","message":"last","status_code":500}`},
		{"no error for an empty list", `"errors":[]`, "error", "null"},
		{"its tools as tool_defs", `"tools":[{"name":"calc","parameters":{}}]`, "tool_defs", `[{"name":"calc","parameters":{}}]`},
		{"no tool_defs for no tools", `"tools":[]`, "tool_defs", "null"},
		{"the answer of its task", `"task":{"type":"T","data":{"idx":9,"answer":42}}`, "answer", "42"},
		{"its task's idx as example_id", `"task":{"type":"T","data":{"idx":9}}`, "example_id", "9"},
		{"no example_id without an idx", `"task":{"type":"T","data":{"question":"q"}}`, "example_id", "null"},
		{"the stop condition", `"stop_condition":"max_turns"`, "stop_condition", `"max_turns"`},
		{"truncated by a framework limit", `"stop_condition":"max_total_tokens"`, "is_truncated", "true"},
		{"truncated by failed compaction", `"stop_condition":"compaction_failed"`, "is_truncated", "true"},
		{"truncated when the last call stopped for length",
			`"calls":[{"finish_reason":"stop"},{"finish_reason":"length"}]`, "is_truncated", "true"},
		{"not truncated when the last call stopped",
			`"calls":[{"finish_reason":"length"},{"finish_reason":"stop"}]`, "is_truncated", "false"},
		{"a failed last call does not count",
			`"calls":[{"finish_reason":"length"},{"finish_reason":"stop","error":{"type":"E","message":"m"}}]`, "is_truncated", "true"},
		{"a null error is no error",
			`"calls":[{"finish_reason":"stop"},{"finish_reason":"length","error":null}]`, "is_truncated", "true"},
		{"no token usage when no call has usage", `"calls":[{"node":1}]`, "token_usage", "null"},
		{"token usage summed over the calls",
			`"calls":[{"usage":{"prompt_tokens":5,"completion_tokens":3}},{"node":1},{"usage":{"prompt_tokens":4,"completion_tokens":1}}]`,
			"token_usage", `{"prompt_tokens":9,"completion_tokens":4}`},
		{"optional counts summed over the calls that report them",
			`"calls":[{"usage":{"prompt_tokens":5,"completion_tokens":3,"reasoning_tokens":2,"cost":0.1}},` +
				`{"usage":{"prompt_tokens":4,"completion_tokens":1,"cached_input_tokens":null,"cost":0.2}}]`,
			"token_usage", `{"prompt_tokens":9,"completion_tokens":4,"reasoning_tokens":2,"cost":0.30000000000000004}`},
		{"the metrics as they are", `"metrics":{"turns":2,"judge":null}`, "metrics", `{"turns":2,"judge":null}`},
		{"the reward as score × weight", `"rewards":{"a":{"score":0.5,"weight":2},"b":{"score":0.25}}`, "reward", "1.25"},
		{"a non-finite reward as null", `"rewards":{"a":{"score":null,"weight":1}}`, "reward", "null"},
		{"a null score as null", `"rewards":{"a":{"score":null,"weight":1}}`, "a", "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v0BothForms(t, nativeDoc(nativeTrace(chain(1)+","+tt.members)), func(t *testing.T, ep V0Episode) {
				if got := sampleField(t, ep.Samples[0], tt.key); got != tt.want {
					t.Fatalf("%s = %s, want %s", tt.key, got, tt.want)
				}
			})
		})
	}
}

func TestTheSummaryTraceIsTheFirstTrainableOne(t *testing.T) {
	judge := `{"id":"judge","task":{"type":"T","data":{"idx":1}},"agent":{"name":"judge","trainable":false},` + chain(1) +
		`,"rewards":{"r":{"score":0.0}}}`
	solver := `{"id":"solver","task":{"type":"T","data":{"idx":2}},"agent":{"name":"solver","trainable":true},` + chain(1) +
		`,"rewards":{"r":{"score":1.0}}}`
	b, err := ReadEvalBody(pcommon.NewValueStr(nativeDoc(judge, solver)))
	if err != nil {
		t.Fatal(err)
	}
	var asked string
	ep, err := b.ProjectV0(func(id string) int64 { asked = id; return 1 })
	if err != nil {
		t.Fatal(err)
	}
	s := ep.Samples[0]
	for key, want := range map[string]string{"agent": `"solver"`, "example_id": "2", "reward": "1", "sample_id": `"ep-1"`} {
		if got := sampleField(t, s, key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	if asked != "2" {
		t.Errorf("rollout number asked for example %s, want the summary trace's 2", asked)
	}
	if idx := sampleField(t, sampleField(t, s, "info"), "native_trace_index"); idx != "1" {
		t.Errorf("native_trace_index %s, want 1", idx)
	}
	want := []TraceValues{
		{Trainable: false, Reward: 0, Scores: []NamedValue{{"r", 0}}},
		{Trainable: true, Reward: 1, Scores: []NamedValue{{"r", 1}}},
	}
	if !reflect.DeepEqual(ep.Traces, want) {
		t.Fatalf("trace values %+v, want %+v", ep.Traces, want)
	}
}

func TestTraceValuesKeepNonFiniteScoresAndLeaveOutNullMetrics(t *testing.T) {
	doc := nativeDoc(nativeTrace(chain(1) + `,"rewards":{"a":{"score":null},"b":null,"c":{"score":2,"weight":0.5}},` +
		`"metrics":{"m":null,"n":3,"s":"text"}`))
	v0BothForms(t, doc, func(t *testing.T, ep V0Episode) {
		tv := ep.Traces[0]
		if !math.IsNaN(tv.Reward) {
			t.Errorf("reward %v, want NaN from a null score", tv.Reward)
		}
		if len(tv.Scores) != 2 || tv.Scores[0].Name != "a" || !math.IsNaN(tv.Scores[0].Value) || tv.Scores[1] != (NamedValue{"c", 2}) {
			t.Errorf("scores %+v, want a NaN and c 2", tv.Scores)
		}
		if !reflect.DeepEqual(tv.Metrics, []NamedValue{{"n", 3}}) {
			t.Errorf("metrics %+v, want only n", tv.Metrics)
		}
	})
}

func TestADocumentWithoutTracesHasNoSampleAndTakesNoRolloutNumber(t *testing.T) {
	for _, doc := range []string{nativeDoc(), `{"id":"e","ok":false,"traces":[]}`} {
		b, err := ReadEvalBody(pcommon.NewValueStr(doc))
		if err != nil {
			t.Fatal(err)
		}
		ep, err := b.ProjectV0(func(string) int64 { t.Fatal("rollout number asked"); return 0 })
		if err != nil {
			t.Fatal(err)
		}
		if len(ep.Samples) != 0 || len(ep.Traces) != 0 || ep.Document == "" {
			t.Fatalf("%d samples, %d traces, document %q", len(ep.Samples), len(ep.Traces), ep.Document)
		}
	}
}

func TestATraceWithoutNodesStillHasASample(t *testing.T) {
	v0BothForms(t, nativeDoc(nativeTrace(`"nodes":[]`)), func(t *testing.T, ep V0Episode) {
		if len(ep.Samples) != 1 {
			t.Fatalf("%d samples, want one, as the SDK keeps it", len(ep.Samples))
		}
		if c, tr := sampleField(t, ep.Samples[0], "completion"), sampleField(t, ep.Samples[0], "trajectory"); c != "[]" || tr != "[]" {
			t.Fatalf("completion %s trajectory %s, want [] and []", c, tr)
		}
	})
}

func TestAnEpisodeTooLargeForOneSampleGivesOneSamplePerTrace(t *testing.T) {
	doc := nativeDoc(
		`{"id":"t0","task":{"type":"T","data":{"idx":3}},"agent":{"name":"judge","trainable":false},"info":{},`+chain(1)+`}`,
		`{"id":"t1","task":{"type":"T","data":{"idx":3}},"agent":{"name":"solver","trainable":true},"info":{"k":"v"},"nodes":[]}`,
	)
	whole := projectV0(t, pcommon.NewValueStr(doc), maxSampleBytes)
	limit := sampleEnvelopeBytes + len(whole.Samples[0])
	if fits := projectV0(t, pcommon.NewValueStr(doc), limit); len(fits.Samples) != 1 || fits.PerTrace {
		t.Fatalf("a sample of exactly the limit: %d samples, want one", len(fits.Samples))
	}
	ep := projectV0(t, pcommon.NewValueStr(doc), limit-1)
	if !ep.PerTrace || len(ep.Samples) != 2 {
		t.Fatalf("per trace %v, %d samples; want one per trace", ep.PerTrace, len(ep.Samples))
	}
	for i, want := range []struct{ id, info, agent string }{{`"t0"`, "null", `"judge"`}, {`"t1"`, `{"k":"v"}`, `"solver"`}} {
		s := ep.Samples[i]
		if got := sampleField(t, s, "sample_id"); got != want.id {
			t.Errorf("sample %d: sample_id %s, want the trace's %s", i, got, want.id)
		}
		if got := sampleField(t, s, "info"); got != want.info {
			t.Errorf("sample %d: info %s, want the trace's own %s", i, got, want.info)
		}
		if got := sampleField(t, s, "agent"); got != want.agent {
			t.Errorf("sample %d: agent %s, want %s", i, got, want.agent)
		}
		if got := sampleField(t, s, "episode_id"); got != `"ep-1"` {
			t.Errorf("sample %d: episode_id %s", i, got)
		}
		if got := sampleField(t, s, "rollout_number"); got != "1" {
			t.Errorf("sample %d: rollout_number %s, want the episode's", i, got)
		}
	}
}

func TestTheTableRowsKeepTheirBranchAdvantage(t *testing.T) {
	// The v0 sample's branches have no advantage; the table's still do.
	doc := nativeDoc(nativeTrace(chain(1) + `,"info":{"advantage":0.5}`))
	row := oneRow(t, mustFromRecord(t, pcommon.NewMap(), pcommon.NewValueStr(doc)))
	if !strings.Contains(row.Trajectory, `"advantage":0.5}`) {
		t.Fatalf("table trajectory %s has no advantage", row.Trajectory)
	}
	ep := projectV0(t, pcommon.NewValueStr(doc), maxSampleBytes)
	if tr := sampleField(t, ep.Samples[0], "trajectory"); strings.Contains(tr, "advantage") {
		t.Fatalf("v0 trajectory %s has an advantage", tr)
	}
}

func TestAnEvaluationsObjectBodyIsKeptAsCompactJSON(t *testing.T) {
	nan := pcommon.NewValueMap()
	nan.Map().PutStr("sample_id", "s")
	nan.Map().PutDouble("reward", math.NaN())
	tests := []struct {
		name string
		body pcommon.Value
		want string
	}{
		{"a map, in its order, ints as ints", jsonValue(t, `{"sample_id":"s","b":1,"a":[1.5,{"z":null}]}`), `{"sample_id":"s","b":1,"a":[1.5,{"z":null}]}`},
		{"a map's NaN as null", nan, `{"sample_id":"s","reward":null}`},
		{"text, compacted", pcommon.NewValueStr(" {\n \"sample_id\": \"s\", \"n\": 1.0 }\n"), `{"sample_id":"s","n":1.0}`},
		{"Python's NaN and Infinity as null", pcommon.NewValueStr(`{"sample_id": "s", "a": NaN, "b": -Infinity}`), `{"sample_id":"s","a":null,"b":null}`},
		{"a traces key that is not a list", pcommon.NewValueStr(`{"sample_id":"s","traces":{}}`), `{"sample_id":"s","traces":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ReadEvalBody(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			if b.IsDocument() || b.Object() != tt.want {
				t.Fatalf("document %v, object %s; want %s", b.IsDocument(), b.Object(), tt.want)
			}
			if ep, err := b.ProjectV0(nil); err != nil || len(ep.Samples) != 0 {
				t.Fatalf("an object projects to %d samples, %v", len(ep.Samples), err)
			}
		})
	}
}

func TestAnEvaluationsBodyThatIsNoObjectIsRejected(t *testing.T) {
	tests := []struct {
		name string
		body pcommon.Value
		want string
	}{
		{"no body", pcommon.NewValueEmpty(), "got empty"},
		{"an int", pcommon.NewValueInt(1), "got int"},
		{"a list", jsonValue(t, `[{"sample_id":"s"}]`), "got list"},
		{"a log line", pcommon.NewValueStr("episode done"), "text that is not one"},
		{"broken JSON", pcommon.NewValueStr(`{"sample_id":`), "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadEvalBody(tt.body)
			rej, ok := errors.AsType[*reject.Rejection](err)
			if !ok || rej.Reason != reject.BadBody || rej.Field != "body" || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a bad_body rejection of the body saying %q", err, tt.want)
			}
		})
	}
}

func TestADocumentWhoseCallsDoNotFitIsRejectedForItsV0Sample(t *testing.T) {
	tests := []struct{ name, calls, path string }{
		{"calls not a list", `"calls":{}`, "traces[0].calls"},
		{"a call not a map", `"calls":[1]`, "traces[0].calls[0]"},
		{"usage not a map", `"calls":[{"usage":[]}]`, "traces[0].calls[0].usage"},
		{"a reasoning count not an int", `"calls":[{"usage":{"prompt_tokens":1,"completion_tokens":1,"reasoning_tokens":"2"}}]`,
			"traces[0].calls[0].usage.reasoning_tokens"},
		{"a cost not a number", `"calls":[{"usage":{"prompt_tokens":1,"completion_tokens":1,"cost":"0.1"}}]`, "traces[0].calls[0].usage.cost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Without nodes, so that the table's walk of the calls, which
			// follows the nodes, does not see them first.
			b, err := ReadEvalBody(pcommon.NewValueStr(nativeDoc(nativeTrace(tt.calls))))
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.ProjectV0(func(string) int64 { t.Fatal("rollout number asked for a rejected document"); return 0 })
			rej, ok := errors.AsType[*reject.Rejection](err)
			if !ok || rej.Reason != reject.BadValue || rej.Field != "body.traces" || !strings.Contains(err.Error(), tt.path+" ") {
				t.Fatalf("got %v, want a bad_value rejection naming %s", err, tt.path)
			}
		})
	}
}

func TestEachMemberStopsWhenAsked(t *testing.T) {
	var keys []string
	EachMember(`{"a":1,"b\u0021":2,"c":3}`, func(k, v string) bool { keys = append(keys, k+"="+v); return k != "b!" })
	if !reflect.DeepEqual(keys, []string{"a=1", "b!=2"}) {
		t.Fatalf("members %v", keys)
	}
	EachMember(`[1]`, func(string, string) bool { t.Fatal("a list has members"); return true })
}

func TestPySumSumsAsPython(t *testing.T) {
	// sum([0.1] * 10) == 1.0 in Python 3.12, where a naive sum gives
	// 0.9999999999999999.
	var s pySum
	for range 10 {
		s.add(0.1)
	}
	if s.value() != 1.0 {
		t.Fatalf("sum %v, want 1", s.value())
	}
}

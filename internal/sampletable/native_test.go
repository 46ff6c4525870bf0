package sampletable

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// fixtureText is testdata/verifiers-episode/episode.json, as its README
// describes it.
func fixtureText(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("testdata/verifiers-episode/episode.json")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// compact is s without its whitespace, by encoding/json: the scanner's
// compaction is held to it.
func compact(tb testing.TB, s string) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		tb.Fatal(err)
	}
	return buf.String()
}

// testCreatedAt is testNow in the column's microseconds.
func testCreatedAt() time.Time { return time.Date(2026, 3, 4, 5, 6, 7, 891234000, time.UTC) }

func TestTheVerifiersFixtureProjectsToTheColumnsWorkedOutByHand(t *testing.T) {
	const (
		branch1 = `[{"role":"system","content":"Answer briefly."},{"role":"user","content":"What is 6*7?"},` +
			`{"role":"assistant","content":"Let me think... 42"}]`
		branch2 = `[{"role":"system","content":"Answer briefly."},{"role":"user","content":"Summary: asked 6*7. Answer now."},` +
			`{"role":"assistant","content":"42","reasoning_content":"6*7=42"}]`
	)
	doc := fixtureText(t)
	rec := mustFromRecord(t, pcommon.NewMap(), pcommon.NewValueStr(doc))
	if rec.Step != 20 || rec.Eval || len(rec.Coerced()) != 0 || len(rec.Rows) != 1 {
		t.Fatalf("got step %d, eval %v, coerced %v, %d rows; want one train row of step 20", rec.Step, rec.Eval, rec.Coerced(), len(rec.Rows))
	}
	if got, want := string(rec.Document), compact(t, doc); got != want {
		t.Fatalf("document\n got %s\nwant %s", got, want)
	}
	want := Episode{
		Step:       20,
		ProblemID:  ptr[int64](7),
		EnvName:    ptr("primeintellect/gsm8k"),
		Completion: ptr(branch2),
		Trajectory: `[{"messages":` + branch1 + `,"num_input_tokens":5,"num_output_tokens":3,"advantage":0.5},` +
			`{"messages":` + branch2 + `,"num_input_tokens":6,"num_output_tokens":1,"advantage":0.5}]`,
		Task: ptr(`{"idx":7,"prompt":"What is 6*7?","network_allow":["*"],"network_block":[],"artifacts":[],` +
			`"timeout":{},"resources":{},"question":"What is 6*7?","answer":"42"}`),
		Info:      ptr(`{"advantage":0.5,"native_wrapper":` + compact(t, doc) + `,"native_trace_index":0}`),
		Reward:    ptr(1.0),
		Advantage: ptr(0.5),
		Metrics:   ptr(`{"num_turns":2.0,"judge_latency":null}`),
		Timing: ptr(`{"start":1755800000.0,"boot":{"start":1755800000.0,"end":1755800000.05},` +
			`"setup":{"start":1755800000.05,"end":1755800000.1},` +
			`"agent":{"start":1755800000.1,"end":1755800003.0,"model":{"duration":1.9},"harness":{"duration":1.0}},` +
			`"finalize":{"start":1755800003.0,"end":1755800003.1},"scoring":{"start":1755800003.1,"end":1755800003.2}}`),
		NumInputTokens:  ptr[int64](6),
		NumOutputTokens: ptr[int64](1),
		CreatedAt:       testCreatedAt(),
	}
	want.Size = want.size()
	checkEpisode(t, rec.Rows[0], want)

	// native_wrapper is the record itself, whatever its spelling.
	var info struct {
		Wrapper any `json:"native_wrapper"`
		Index   *int
	}
	var record any
	if err := json.Unmarshal([]byte(*rec.Rows[0].Info), &info); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(doc), &record); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(info.Wrapper, record) {
		t.Fatal("native_wrapper is not the record")
	}
}

// decodedRow is a row with its JSON columns decoded, so that rows compare
// as the viewer reads them: 2.0 and 2 are one number.
func decodedRow(tb testing.TB, ep Episode) map[string]any {
	tb.Helper()
	out := map[string]any{"step": ep.Step, "part": ep.Part, "tag": ep.Tag, "prompt": ep.Prompt, "answer": ep.Answer,
		"env_name": ep.EnvName, "problem_id": ep.ProblemID, "reward": ep.Reward, "advantage": ep.Advantage,
		"in": ep.NumInputTokens, "out": ep.NumOutputTokens, "created_at": ep.CreatedAt}
	for name, s := range map[string]*string{"trajectory": &ep.Trajectory, "completion": ep.Completion, "task": ep.Task,
		"info": ep.Info, "metrics": ep.Metrics, "timing": ep.Timing} {
		if s == nil {
			out[name] = "<nil>"
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(*s), &v); err != nil {
			tb.Fatalf("%s is not JSON: %v", name, err)
		}
		out[name] = v
	}
	return out
}

func TestADocumentGivesTheSameRowAsAnOTLPMapOrAsJSONText(t *testing.T) {
	doc := fixtureText(t)
	asMap := mustFromRecord(t, pcommon.NewMap(), jsonValue(t, doc))
	// A trainer's OTel SDK turns the record into a map; one that
	// serialises it itself sends the same record as text.
	asText := mustFromRecord(t, pcommon.NewMap(), pcommon.NewValueStr(pjson.Encode(jsonValue(t, doc))))
	if len(asMap.Rows) != 1 || len(asText.Rows) != 1 {
		t.Fatalf("%d and %d rows, want one each", len(asMap.Rows), len(asText.Rows))
	}
	checkEpisode(t, asText.Rows[0], asMap.Rows[0])
	if !bytes.Equal(asMap.Document, asText.Document) {
		t.Fatalf("documents differ:\n%s\n%s", asMap.Document, asText.Document)
	}

	// The fixture's own text spells doubles as Python does (2.0, not 2):
	// the same values.
	asWritten := mustFromRecord(t, pcommon.NewMap(), pcommon.NewValueStr(doc))
	if got, want := decodedRow(t, asWritten.Rows[0]), decodedRow(t, asMap.Rows[0]); !reflect.DeepEqual(got, want) {
		t.Fatalf("rows differ:\n got %v\nwant %v", got, want)
	}
}

// nativeDoc is a verifiers document of traces (their JSON text), stamped as
// train work of dispatch step 20.
func nativeDoc(traces ...string) string {
	return `{"id":"ep-1","env":{"id":"env-a","name":"a"},"task":{"type":"T","data":{"idx":3}},` +
		`"run":{"type":"train","id":"prl-1","work":{"type":"train","step":20}},"ok":true,"errors":[],` +
		`"traces":[` + strings.Join(traces, ",") + `]}`
}

// nativeTrace is a trainable trace of task idx 3 with members (JSON text
// of "key":value pairs) after its agent.
func nativeTrace(members string) string {
	return `{"version":1,"id":"t","task":{"type":"T","data":{"idx":3,"question":"q"}},` +
		`"agent":{"config":{},"name":"solver","trainable":true}` + cond(members != "", ","+members, "") + `}`
}

func cond[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}

// chain is the nodes of one branch: a user message and an assistant
// answer per turn, each the parent of the next.
func chain(turns int) string {
	var nodes []string
	for i := range 2 * turns {
		role := cond(i%2 == 0, "user", "assistant")
		parent := cond(i > 0, `"parent":`+itoa(i-1)+`,`, "")
		nodes = append(nodes, `{`+parent+`"message":{"role":"`+role+`","content":"m`+itoa(i)+`"},"sampled":`+cond(i%2 == 1, "true", "false")+`}`)
	}
	return `"nodes":[` + strings.Join(nodes, ",") + `]`
}

func itoa(i int) string { return strconv.Itoa(i) }

// usage is a call of node with that usage.
func usage(node int, prompt, completion, cached int) string {
	u := `"prompt_tokens":` + itoa(prompt) + `,"completion_tokens":` + itoa(completion)
	if cached > 0 {
		u += `,"cached_input_tokens":` + itoa(cached)
	}
	return `{"node":` + itoa(node) + `,"usage":{` + u + `},"time":{"start":1,"end":2}}`
}

// bothForms maps a document given as an OTLP map and as JSON text, and
// hands check each record.
func bothForms(t *testing.T, a pcommon.Map, doc string, check func(*testing.T, Record)) {
	t.Helper()
	for _, form := range []struct {
		name string
		body pcommon.Value
	}{{"a map", jsonValue(t, doc)}, {"JSON text", pcommon.NewValueStr(doc)}} {
		t.Run(form.name, func(t *testing.T) { check(t, mustFromRecord(t, a, form.body)) })
	}
}

// oneRow is a record's only row.
func oneRow(t *testing.T, rec Record) Episode {
	t.Helper()
	if len(rec.Rows) != 1 {
		t.Fatalf("%d rows, want one", len(rec.Rows))
	}
	return rec.Rows[0]
}

func TestADocumentsStepAndWorkComeFromTheAttributesElseItsRun(t *testing.T) {
	evalDoc := strings.Replace(nativeDoc(nativeTrace(chain(1))), `"work":{"type":"train"`, `"work":{"type":"eval"`, 1)
	tests := []struct {
		name    string
		attrs   pcommon.Map
		doc     string
		step    int64
		eval    bool
		coerced []reject.Reason
	}{
		{"run.work.step without the attribute", pcommon.NewMap(), nativeDoc(nativeTrace(chain(1))), 20, false, nil},
		{"attribute prime.work.step over run.work.step", trainAttrs(t, 30), nativeDoc(nativeTrace(chain(1))), 30, false, nil},
		{"a decimal string attribute, as Python sends a numpy int", attrs(t, "prime.work.step", "40"), nativeDoc(nativeTrace(chain(1))), 40, false,
			[]reject.Reason{reject.NumberString}},
		{"eval work named by run.work.type", pcommon.NewMap(), evalDoc, 20, true, nil},
		{"eval work named by attribute prime.work.type", attrs(t, "prime.work.type", "eval"), nativeDoc(nativeTrace(chain(1))), 20, true, nil},
		{"train work named by the attribute stays eval when the run says so", attrs(t, "prime.work.type", "train"), evalDoc, 20, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bothForms(t, tt.attrs, tt.doc, func(t *testing.T, rec Record) {
				if rec.Step != tt.step || rec.Eval != tt.eval || !slices.Equal(rec.Coerced(), tt.coerced) {
					t.Fatalf("step %d eval %v coerced %v, want %d %v %v", rec.Step, rec.Eval, rec.Coerced(), tt.step, tt.eval, tt.coerced)
				}
				if tt.eval && len(rec.Rows) != 0 {
					t.Fatalf("eval work has %d rows", len(rec.Rows))
				}
				if !tt.eval && len(rec.Rows) != 1 {
					t.Fatalf("train work has %d rows", len(rec.Rows))
				}
				if !json.Valid(rec.Document) {
					t.Fatalf("document %q", rec.Document)
				}
			})
		})
	}
}

func TestADocumentWithoutBranchesHasNoRowButIsStillADocument(t *testing.T) {
	for name, doc := range map[string]string{
		"no traces":                 nativeDoc(),
		"a trace without nodes":     nativeDoc(nativeTrace(`"calls":[]`)),
		"a trace with empty nodes":  nativeDoc(nativeTrace(`"nodes":[]`)),
		"a trace with null nodes":   nativeDoc(nativeTrace(`"nodes":null`)),
		"a summary without nodes":   nativeDoc(nativeTrace(`"nodes":[]`), nativeTrace(chain(1))),
		"traces, and nothing else":  `{"traces":[]}`,
		"traces after a text value": `{"text":"a log line","traces":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			bothForms(t, trainAttrs(t, 10), doc, func(t *testing.T, rec Record) {
				if len(rec.Rows) != 0 || rec.Eval || rec.Document == nil || rec.Step != 10 {
					t.Fatalf("got %+v, want a document of step 10 without rows", rec)
				}
			})
		})
	}
}

func TestADocumentIsProjectedAsTheSDKProjectsIt(t *testing.T) {
	tests := []struct {
		name  string
		doc   string
		check func(*testing.T, Record, Episode)
	}{
		{"the first trainable trace is the summary", nativeDoc(
			strings.Replace(nativeTrace(chain(1)+`,"info":{"advantage":9}`), `"trainable":true`, `"trainable":false`, 1),
			nativeTrace(chain(1)+`,"rewards":{"r":{"score":0.5,"weight":1.0}},"info":{"advantage":0.25,"k":"b"}`),
			nativeTrace(chain(2)+`,"info":{"advantage":7}`)),
			func(t *testing.T, rec Record, ep Episode) {
				want := `{"advantage":0.25,"k":"b","native_wrapper":` + string(rec.Document) + `,"native_trace_index":1}`
				if *ep.Info != want || *ep.Reward != 0.5 || *ep.Advantage != 0.25 {
					t.Fatalf("info %s reward %v advantage %v", *ep.Info, *ep.Reward, *ep.Advantage)
				}
			}},
		{"without a trainable trace the first is the summary", nativeDoc(
			strings.Replace(nativeTrace(chain(1)+`,"info":{"k":"a"}`), `"trainable":true`, `"trainable":false`, 1),
			strings.Replace(nativeTrace(chain(1)+`,"info":{"k":"b"}`), `"trainable":true`, `"trainable":"yes"`, 1)),
			func(t *testing.T, rec Record, ep Episode) {
				if want := `{"k":"a","native_wrapper":` + string(rec.Document) + `,"native_trace_index":0}`; *ep.Info != want {
					t.Fatalf("info %s", *ep.Info)
				}
			}},
		{"the last call naming a node gives its usage", nativeDoc(nativeTrace(chain(1) + `,"calls":[` + usage(1, 100, 100, 0) + `,` + usage(1, 5, 3, 0) + `]`)),
			func(t *testing.T, _ Record, ep Episode) { checkTokens(t, ep, 5, 3) }},
		{"input tokens are what each call adds to the last one's total, cached tokens included", nativeDoc(nativeTrace(chain(3) + `,"calls":[` +
			usage(1, 10, 5, 2) + `,` + usage(3, 20, 4, 0) + `,` + usage(5, 10, 1, 0) + `]`)),
			// 12 new; 20 - 17 = 3 new; 10 < 24: none new. Output: 5 + 4 + 1.
			func(t *testing.T, _ Record, ep Episode) { checkTokens(t, ep, 15, 10) }},
		{"calls without usage or naming no node of the branch count nothing", nativeDoc(nativeTrace(chain(1) + `,"calls":[` +
			`{"node":1},{"node":1,"usage":null},` + usage(7, 50, 50, 0) + `,{"usage":{"prompt_tokens":9,"completion_tokens":9}},{"node":null}]`)),
			func(t *testing.T, _ Record, ep Episode) { checkTokens(t, ep, 0, 0) }},
		{"every branch counts its own calls; the row takes the last branch's", nativeDoc(nativeTrace(
			`"nodes":[{"message":{"role":"system"}},{"parent":0,"message":{"role":"assistant","content":"a"}},{"parent":0,"message":{"role":"assistant","content":"b"}}],` +
				`"calls":[` + usage(1, 5, 3, 0) + `,` + usage(2, 4, 1, 2) + `]`)),
			func(t *testing.T, _ Record, ep Episode) {
				want := `[{"messages":[{"role":"system"},{"role":"assistant","content":"a"}],"num_input_tokens":5,"num_output_tokens":3,"advantage":null},` +
					`{"messages":[{"role":"system"},{"role":"assistant","content":"b"}],"num_input_tokens":6,"num_output_tokens":1,"advantage":null}]`
				if ep.Trajectory != want || *ep.Completion != `[{"role":"system"},{"role":"assistant","content":"b"}]` {
					t.Fatalf("trajectory %s\ncompletion %s", ep.Trajectory, *ep.Completion)
				}
				checkTokens(t, ep, 6, 1)
			}},
		{"a parent may come after its child, and leaves go in ascending order", nativeDoc(nativeTrace(
			`"nodes":[{"parent":2,"message":"c"},{"parent":2,"message":"b"},{"message":"a"}]`)),
			func(t *testing.T, _ Record, ep Episode) {
				if want := `[{"messages":["a","c"],"num_input_tokens":0,"num_output_tokens":0,"advantage":null},` +
					`{"messages":["a","b"],"num_input_tokens":0,"num_output_tokens":0,"advantage":null}]`; ep.Trajectory != want {
					t.Fatalf("trajectory %s", ep.Trajectory)
				}
			}},
		{"parents in a cycle that no leaf reaches are on no branch", nativeDoc(nativeTrace(`"nodes":[{"parent":1},{"parent":0},{"message":"a"}]`)),
			func(t *testing.T, _ Record, ep Episode) {
				if *ep.Completion != `["a"]` {
					t.Fatalf("completion %s", *ep.Completion)
				}
			}},
		{"a node without a message has null in its branch", nativeDoc(nativeTrace(`"nodes":[{"sampled":false}]`)),
			func(t *testing.T, _ Record, ep Episode) {
				if *ep.Completion != `[null]` {
					t.Fatalf("completion %s", *ep.Completion)
				}
			}},
		{"null rewards are left out of the sum, a weight defaults to 1, null metrics stay", nativeDoc(nativeTrace(chain(1) +
			`,"rewards":{"a":null,"b":{"score":0.5,"weight":2},"c":{"score":1}},"metrics":{"m":null,"n":1}`)),
			func(t *testing.T, _ Record, ep Episode) {
				if *ep.Reward != 2 || *ep.Metrics != `{"m":null,"n":1}` {
					t.Fatalf("reward %v metrics %s", *ep.Reward, *ep.Metrics)
				}
			}},
		{"the reward is summed as Python 3.12 sums, compensated", nativeDoc(nativeTrace(chain(1) +
			`,"rewards":{"a":{"score":1e16,"weight":1},"b":{"score":1,"weight":1},"c":{"score":-1e16,"weight":1}}`)),
			func(t *testing.T, _ Record, ep Episode) {
				if *ep.Reward != 1 {
					t.Fatalf("reward %v, want 1 (a naive sum gives 0)", *ep.Reward)
				}
			}},
		{"no rewards, metrics, timing or info", nativeDoc(nativeTrace(chain(1))),
			func(t *testing.T, rec Record, ep Episode) {
				if *ep.Reward != 0 || *ep.Metrics != `{}` || ep.Timing != nil || ep.Advantage != nil ||
					*ep.Info != `{"native_wrapper":`+string(rec.Document)+`,"native_trace_index":0}` {
					t.Fatalf("got %s", render(ep))
				}
				if !strings.HasSuffix(ep.Trajectory, `"advantage":null}]`) {
					t.Fatalf("trajectory %s, want a null advantage", ep.Trajectory)
				}
			}},
		{"a native_wrapper already in the info is replaced where it stands", nativeDoc(nativeTrace(chain(1) +
			`,"info":{"a":1,"native_wrapper":"old","b":2,"native_wrapper":"older","native_trace_index":99}`)),
			func(t *testing.T, rec Record, ep Episode) {
				if want := `{"a":1,"native_wrapper":` + string(rec.Document) + `,"b":2,"native_trace_index":0}`; *ep.Info != want {
					t.Fatalf("info %s\nwant %s", *ep.Info, want)
				}
			}},
		{"problem_id is task.data.idx when it is an int", nativeDoc(strings.Replace(nativeTrace(chain(1)), `"idx":3`, `"idx":3.0`, 1)),
			func(t *testing.T, _ Record, ep Episode) {
				if ep.ProblemID == nil || *ep.ProblemID != 3 {
					t.Fatalf("problem_id %v", ep.ProblemID)
				}
			}},
		{"else the sample_id stands in", nativeDoc(strings.Replace(nativeTrace(chain(1)), `"idx":3`, `"idx":"3"`, 1)),
			func(t *testing.T, _ Record, ep Episode) {
				if ep.ProblemID != nil {
					t.Fatalf("problem_id %d", *ep.ProblemID)
				}
			}},
		{"env_name is empty without an env id", strings.Replace(nativeDoc(nativeTrace(chain(1))), `"env":{"id":"env-a","name":"a"}`, `"env":{"name":"a"}`, 1),
			func(t *testing.T, _ Record, ep Episode) {
				if *ep.EnvName != "" {
					t.Fatalf("env_name %q", *ep.EnvName)
				}
			}},
		{"prime.episode columns are not the document's", nativeDoc(nativeTrace(chain(1))),
			func(t *testing.T, _ Record, ep Episode) {
				if ep.Tag != "" || ep.Prompt != "" || ep.Answer != "" || *ep.EnvName != "env-a" {
					t.Fatalf("got %s", render(ep))
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := trainAttrs(t, 20, "prime.episode.tag", "x", "prime.episode.env_name", "y")
			bothForms(t, a, tt.doc, func(t *testing.T, rec Record) { tt.check(t, rec, oneRow(t, rec)) })
		})
	}
}

func checkTokens(t *testing.T, ep Episode, in, out int64) {
	t.Helper()
	if *ep.NumInputTokens != in || *ep.NumOutputTokens != out {
		t.Fatalf("tokens %d and %d, want %d and %d (trajectory %s)", *ep.NumInputTokens, *ep.NumOutputTokens, in, out, ep.Trajectory)
	}
}

func TestNonFiniteNumbersInADocumentAreNull(t *testing.T) {
	// One document three ways: NaN and ±Inf as an OTLP map carries them
	// (doubles), as Python's json.dumps writes them, and as null.
	python := nativeDoc(nativeTrace(`"nodes":[{"message":{"role":"assistant","content":"x","score":NaN}}],` +
		`"rewards":{"r":{"score":NaN,"weight":1}},"metrics":{"m":Infinity,"n":-Infinity},"info":{"advantage":NaN,"k":1}`))
	nulled := strings.NewReplacer("-Infinity", "null", "Infinity", "null", "NaN", "null").Replace(python)
	asMap := jsonValue(t, nulled)
	get := func(v pcommon.Value, k string) pcommon.Value { m, _ := v.Map().Get(k); return m }
	trace := get(asMap, "traces").Slice().At(0)
	get(get(get(trace, "nodes").Slice().At(0), "message"), "score").SetDouble(math.NaN())
	get(get(get(trace, "rewards"), "r"), "score").SetDouble(math.NaN())
	get(get(trace, "metrics"), "m").SetDouble(math.Inf(1))
	get(get(trace, "metrics"), "n").SetDouble(math.Inf(-1))
	get(get(trace, "info"), "advantage").SetDouble(math.NaN())

	want := mustFromRecord(t, pcommon.NewMap(), pcommon.NewValueStr(nulled))
	for name, body := range map[string]pcommon.Value{"an OTLP map": asMap, "Python's JSON": pcommon.NewValueStr(python)} {
		t.Run(name, func(t *testing.T) {
			rec := mustFromRecord(t, pcommon.NewMap(), body)
			got, w := oneRow(t, rec), oneRow(t, want)
			if !json.Valid(rec.Document) || string(rec.Document) != string(want.Document) {
				t.Fatalf("document %s\nwant %s", rec.Document, want.Document)
			}
			if got.Reward != nil || *got.Metrics != `{"m":null,"n":null}` || *got.Completion != `[{"role":"assistant","content":"x","score":null}]` {
				t.Fatalf("got %s", render(got))
			}
			// The map's NaN advantage is a number to the advantage column
			// (null in the JSON); the text's null is no advantage.
			got.Advantage, w.Advantage = nil, nil
			checkEpisode(t, got, w)
		})
	}
}

func TestDocumentsWhoseShapeDoesNotFitAreRejected(t *testing.T) {
	tr := func(members string) string { return nativeDoc(nativeTrace(members)) }
	tests := []struct {
		name   string
		attrs  pcommon.Map
		doc    string
		reason reject.Reason
		field  string
		msg    string
	}{
		{"no step anywhere", pcommon.NewMap(), strings.Replace(tr(chain(1)), `"step":20`, `"policy":{}`, 1),
			reject.NoStep, "prime.work.step", "attribute prime.work.step is missing, and so is body key run.work.step"},
		{"a string run.work.step", pcommon.NewMap(), strings.Replace(tr(chain(1)), `"step":20`, `"step":"20"`, 1),
			reject.BadStep, "body.run.work.step", `body key run.work.step must be an int, got string "20"`},
		{"a fractional step attribute", attrs(t, "prime.work.step", 1.5), tr(chain(1)),
			reject.BadStep, "prime.work.step", "attribute prime.work.step must be an int, got double 1.5"},
		{"an unknown work type", trainAttrs(t, 1, "prime.work.type", "test"), tr(chain(1)),
			reject.BadWorkType, "prime.work.type", `attribute prime.work.type must be "train" or "eval", got string "test"`},
		{"a trace that is not a map", trainAttrs(t, 1), nativeDoc(nativeTrace(chain(1)), "1"),
			reject.BadValue, "body.traces", "body key traces[1] must be a map, got int"},
		{"nodes that are not a list", trainAttrs(t, 1), tr(`"nodes":{}`),
			reject.BadValue, "body.traces", "body key traces[0].nodes must be a list, got map"},
		{"a node that is not a map", trainAttrs(t, 1), tr(`"nodes":[{},"x"]`),
			reject.BadValue, "body.traces", `body key traces[0].nodes[1] must be a map, got string "x"`},
		{"a string parent", trainAttrs(t, 1), tr(`"nodes":[{},{"parent":"0"}]`),
			reject.BadValue, "body.traces", `body key traces[0].nodes[1].parent must be the index of a node, got string "0"`},
		{"a negative parent", trainAttrs(t, 1), tr(`"nodes":[{},{"parent":-1}]`),
			reject.BadValue, "body.traces", `body key traces[0].nodes[1].parent must be the index of a node, got int`},
		{"a parent past the nodes", trainAttrs(t, 1), tr(`"nodes":[{},{"parent":2}]`),
			reject.BadValue, "body.traces", `body key traces[0].nodes[1].parent must be the index of a node (0 to 1), got 2`},
		{"parents in a cycle", trainAttrs(t, 1), tr(`"nodes":[{"parent":1},{"parent":0},{"parent":0}]`),
			reject.BadValue, "body.traces", `body key traces[0].nodes must form a tree, but node 0 is its own ancestor`},
		{"a branch reaching a node its own parent", trainAttrs(t, 1), tr(`"nodes":[{"parent":0},{"parent":0}]`),
			reject.BadValue, "body.traces", `body key traces[0].nodes must form a tree, but node 0 is its own ancestor`},
		{"calls that are not a list", trainAttrs(t, 1), tr(chain(1) + `,"calls":"x"`),
			reject.BadValue, "body.traces", `body key traces[0].calls must be a list, got string "x"`},
		{"a call that is not a map", trainAttrs(t, 1), tr(chain(1) + `,"calls":[[]]`),
			reject.BadValue, "body.traces", `body key traces[0].calls[0] must be a map, got list`},
		{"a string call node", trainAttrs(t, 1), tr(chain(1) + `,"calls":[{"node":"1"}]`),
			reject.BadValue, "body.traces", `body key traces[0].calls[0].node must be an int, got string "1"`},
		{"a usage that is not a map", trainAttrs(t, 1), tr(chain(1) + `,"calls":[{"node":1,"usage":[]}]`),
			reject.BadValue, "body.traces", `body key traces[0].calls[0].usage must be a map, got list`},
		{"a string token count", trainAttrs(t, 1), tr(chain(1) + `,"calls":[{"node":1,"usage":{"prompt_tokens":"5"}}]`),
			reject.BadValue, "body.traces", `body key traces[0].calls[0].usage.prompt_tokens must be an int, got string "5"`},
		{"a fractional token count", trainAttrs(t, 1), tr(chain(1) + `,"calls":[{"node":1,"usage":{"completion_tokens":1.5}}]`),
			reject.BadValue, "body.traces", `body key traces[0].calls[0].usage.completion_tokens must be an int, got double 1.5`},
		{"rewards that are not a map", trainAttrs(t, 1), tr(chain(1) + `,"rewards":[]`),
			reject.BadValue, "body.traces", `body key traces[0].rewards must be a map, got list`},
		{"a reward that is neither a map nor null", trainAttrs(t, 1), tr(chain(1) + `,"rewards":{"a":1}`),
			reject.BadValue, "body.traces", `body key traces[0].rewards.a must be a map or null, got int`},
		{"a reward without a score", trainAttrs(t, 1), tr(chain(1) + `,"rewards":{"a":{"weight":1}}`),
			reject.BadValue, "body.traces", `body key traces[0].rewards.a.score must be a number, got null`},
		{"a string weight", trainAttrs(t, 1), tr(chain(1) + `,"rewards":{"a":{"score":1,"weight":"2"}}`),
			reject.BadValue, "body.traces", `body key traces[0].rewards.a.weight must be a number, got string "2"`},
		{"an info that is not a map", trainAttrs(t, 1), tr(chain(1) + `,"info":[1]`),
			reject.BadValue, "body.traces", `body key traces[0].info must be a map, got list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, body := range []pcommon.Value{jsonValue(t, tt.doc), pcommon.NewValueStr(tt.doc)} {
				rec, err := fromRecord(t, tt.attrs, body)
				rej, ok := errors.AsType[*reject.Rejection](err)
				if !ok {
					t.Fatalf("got %v (%+v), want a *reject.Rejection", err, rec)
				}
				if rej.Reason != tt.reason || rej.Field != tt.field || err.Error() != "prime.episode: "+tt.msg {
					t.Fatalf("got reason %q field %q %q\nwant reason %q field %q %q", rej.Reason, rej.Field, err, tt.reason, tt.field, "prime.episode: "+tt.msg)
				}
			}
		})
	}
}

func TestABodyWhoseTracesAreNotAListIsColumnKeyed(t *testing.T) {
	for _, body := range []string{`{"traces":"x","trajectory":[{}]}`, `{"traces":[],"traces":{},"trajectory":[{}]}`, `{"traces":null,"trajectory":[{}]}`} {
		for _, v := range []pcommon.Value{jsonValue(t, body), pcommon.NewValueStr(body)} {
			if rec := mustFromRecord(t, trainAttrs(t, 10), v); rec.Document != nil || oneRow(t, rec).Trajectory != `[{"advantage":null}]` {
				t.Fatalf("%s: got %+v, want a column-keyed row", body, rec)
			}
		}
	}
}

func TestTextThatDoesNotParseIsNotADocumentEvenWithPythonsNaN(t *testing.T) {
	for name, body := range map[string]string{
		"a document broken elsewhere":         `{"traces":[{"info":{"a":NaN}},]}`,
		"a column-keyed body with a NaN":      `{"reward":NaN,"trajectory":[{}]}`,
		"a document whose NaN is not a token": `{"traces":[{"info":{"a":-NaN}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := fromRecord(t, trainAttrs(t, 1), pcommon.NewValueStr(body))
			if rej, ok := errors.AsType[*reject.Rejection](err); !ok || rej.Reason != reject.BadBody {
				t.Fatalf("got %v, want bad_body", err)
			}
		})
	}
}

// fallbackDoc has three traces: a non-trainable one with an empty info and
// problem 1, the trainable summary with problem 2, and one without nodes.
func fallbackDoc() string {
	first := strings.Replace(strings.Replace(nativeTrace(chain(1)+`,"info":{}`), `"trainable":true`, `"trainable":false`, 1), `"idx":3`, `"idx":1`, 1)
	summary := strings.Replace(nativeTrace(chain(2)+`,"info":{"advantage":0.5,"x":1}`), `"idx":3`, `"idx":2`, 1)
	return nativeDoc(first, summary, nativeTrace(`"nodes":[]`))
}

func TestADocumentTooLargeForOneSampleGivesOneRowPerTrace(t *testing.T) {
	doc := fallbackDoc()
	for _, body := range []pcommon.Value{jsonValue(t, doc), pcommon.NewValueStr(doc)} {
		whole, err := mapRecord(nil, trainAttrs(t, 10), body, testCreatedAt(), maxSampleBytes)
		if err != nil {
			t.Fatal(err)
		}
		limit := sampleEnvelopeBytes + sampleFieldBytes + oneRow(t, whole).Size
		fits, err := mapRecord(nil, trainAttrs(t, 10), body, testCreatedAt(), limit)
		if err != nil || len(fits.Rows) != 1 {
			t.Fatalf("at the limit: %d rows, %v; want one", len(fits.Rows), err)
		}
		rec, err := mapRecord(nil, trainAttrs(t, 10), body, testCreatedAt(), limit-1)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Rows) != 2 || !bytes.Equal(rec.Document, whole.Document) {
			t.Fatalf("%d rows, want one per trace with nodes", len(rec.Rows))
		}
		first, summary := rec.Rows[0], rec.Rows[1]
		if first.Part != 0 || summary.Part != 1 {
			t.Fatalf("parts %d and %d, want the traces' indexes", first.Part, summary.Part)
		}
		if *first.Info != "null" || *summary.Info != `{"advantage":0.5,"x":1}` {
			t.Fatalf("infos %s and %s, want each trace's own, without the wrapper", *first.Info, *summary.Info)
		}
		if *first.ProblemID != 1 || *summary.ProblemID != 2 {
			t.Fatalf("problem ids %d and %d", *first.ProblemID, *summary.ProblemID)
		}
		// The episode's advantage is the summary's, on every row, as the
		// SDK looks it up by episode.
		for _, ep := range rec.Rows {
			if *ep.Advantage != 0.5 || !strings.HasSuffix(ep.Trajectory, `"advantage":0.5}]`) {
				t.Fatalf("advantage %v, trajectory %s", *ep.Advantage, ep.Trajectory)
			}
		}
		wholeRow := oneRow(t, whole)
		if summary.Trajectory != wholeRow.Trajectory || *summary.Completion != *wholeRow.Completion {
			t.Fatal("the summary trace's row differs from the whole document's but for its info")
		}
	}
}

func TestRowsOfIdenticalTracesDifferOnlyByTheirPart(t *testing.T) {
	same := nativeTrace(chain(1))
	rec, err := mapRecord(nil, trainAttrs(t, 10), pcommon.NewValueStr(nativeDoc(same, same)), testCreatedAt(), 0)
	if err != nil || len(rec.Rows) != 2 {
		t.Fatalf("%d rows, %v", len(rec.Rows), err)
	}
	a, b := rec.Rows[0], rec.Rows[1]
	b.Part = a.Part
	checkEpisode(t, b, a)
	if rec.Rows[1].Part != 1 {
		t.Fatalf("part %d, want 1", rec.Rows[1].Part)
	}
}

func TestTheFallbackStartsPast25MiBOfSample(t *testing.T) {
	// The sample holds the long answer three times: in the completion, the
	// trajectory and the info's native_wrapper.
	doc := func(answer int) string {
		long := `"nodes":[{"message":{"role":"assistant","content":"` + strings.Repeat("x", answer) + `"}}]`
		return nativeDoc(nativeTrace(long), strings.Replace(nativeTrace(chain(1)), `"trainable":true`, `"trainable":false`, 1))
	}
	tests := []struct {
		name   string
		answer int
		rows   int
	}{
		{"8 MiB of answer, 24 MiB of sample", 8 << 20, 1},
		{"9 MiB of answer, 27 MiB of sample", 9 << 20, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := mustFromRecord(t, trainAttrs(t, 10), pcommon.NewValueStr(doc(tt.answer)))
			if len(rec.Rows) != tt.rows {
				t.Fatalf("%d rows, want %d", len(rec.Rows), tt.rows)
			}
		})
	}
}

func TestPythonValuesAreTakenAsAPythonUserMeansThem(t *testing.T) {
	const traj = `"trajectory":[{}]`
	tests := []struct {
		name    string
		attrs   pcommon.Map
		body    pcommon.Value
		check   func(Episode) bool
		coerced []reject.Reason
	}{
		{"a decimal string step", attrs(t, "prime.work.step", "10"), jsonValue(t, `{`+traj+`}`),
			func(ep Episode) bool { return ep.Step == 10 }, []reject.Reason{reject.NumberString}},
		{"a negative decimal string step", attrs(t, "prime.work.step", "-3"), jsonValue(t, `{`+traj+`}`),
			func(ep Episode) bool { return ep.Step == -3 }, []reject.Reason{reject.NumberString}},
		{"a list of chat messages as the prompt", trainAttrs(t, 1), jsonValue(t, `{"prompt":[{"role":"user","content":"hi"}],`+traj+`}`),
			func(ep Episode) bool { return ep.Prompt == `[{"role":"user","content":"hi"}]` }, []reject.Reason{reject.JSONText}},
		{"a list prompt in JSON text keeps its text", trainAttrs(t, 1), pcommon.NewValueStr(`{"prompt": [ {"role": "user"} ],` + traj + `}`),
			func(ep Episode) bool { return ep.Prompt == `[ {"role": "user"} ]` }, []reject.Reason{reject.JSONText}},
		{"an int tag, a bool answer, a map prompt in attributes", trainAttrs(t, 1, "prime.episode.tag", int64(5),
			"prime.episode.answer", true, "prime.episode.prompt", map[string]any{"q": 1.5}), jsonValue(t, `{`+traj+`}`),
			func(ep Episode) bool { return ep.Tag == "5" && ep.Answer == "true" && ep.Prompt == `{"q":1.5}` },
			[]reject.Reason{reject.JSONText, reject.JSONText, reject.JSONText}},
		{"all at once, in table order", attrs(t, "prime.work.step", "20", "prime.episode.answer", 0.5),
			jsonValue(t, `{"tag":["a"],"prompt":{"x":null},`+traj+`}`),
			func(ep Episode) bool { return ep.Tag == `["a"]` && ep.Prompt == `{"x":null}` && ep.Answer == "0.5" },
			[]reject.Reason{reject.NumberString, reject.JSONText, reject.JSONText, reject.JSONText}},
		{"strings are taken as they are", trainAttrs(t, 1, "prime.episode.prompt", `["a"]`), jsonValue(t, `{"tag":"5",`+traj+`}`),
			func(ep Episode) bool { return ep.Prompt == `["a"]` && ep.Tag == "5" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := mustFromRecord(t, tt.attrs, tt.body)
			if ep := oneRow(t, rec); !tt.check(ep) || !slices.Equal(rec.Coerced(), tt.coerced) {
				t.Fatalf("got %s coerced %v, want coerced %v", render(ep), rec.Coerced(), tt.coerced)
			}
		})
	}
}

package sampletable

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/internal/pjson"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// episodeJSON is one full episode as a trainer's body carries it.
const episodeJSON = `{"tag":"rollout","problem_id":7,"prompt":"What is 2+2?","answer":"4","env_name":"gsm8k",` +
	`"task":{"kind":"math"},"info":{"source":"train","ids":[1,2]},"reward":1,"advantage":0.5,` +
	`"metrics":{"len":12,"ok":true},"timing":{"generation_ms":120.5},` +
	`"trajectory":[{"messages":[{"role":"user","content":"What is 2+2?"},{"role":"assistant","content":"4"}],` +
	`"num_input_tokens":10,"num_output_tokens":2}]}`

// episodeRow is episodeJSON's episode dispatched at step 10, at testNow.
func episodeRow() Episode {
	ep := Episode{
		Step:       10,
		Tag:        "rollout",
		ProblemID:  ptr[int64](7),
		Prompt:     "What is 2+2?",
		Completion: ptr(`[{"role":"user","content":"What is 2+2?"},{"role":"assistant","content":"4"}]`),
		Trajectory: `[{"messages":[{"role":"user","content":"What is 2+2?"},{"role":"assistant","content":"4"}],` +
			`"num_input_tokens":10,"num_output_tokens":2,"advantage":0.5}]`,
		Answer:          "4",
		EnvName:         ptr("gsm8k"),
		Task:            ptr(`{"kind":"math"}`),
		Info:            ptr(`{"source":"train","ids":[1,2]}`),
		Reward:          ptr(1.0),
		Advantage:       ptr(0.5),
		Metrics:         ptr(`{"len":12,"ok":true}`),
		Timing:          ptr(`{"generation_ms":120.5}`),
		NumInputTokens:  ptr[int64](10),
		NumOutputTokens: ptr[int64](2),
		CreatedAt:       time.Date(2026, 3, 4, 5, 6, 7, 891234000, time.UTC),
	}
	ep.Size = ep.size()
	return ep
}

// episodeAttrs is episodeJSON as prime.episode.* attributes.
func episodeAttrs(tb testing.TB) pcommon.Map {
	tb.Helper()
	m := trainAttrs(tb, 10)
	jsonValue(tb, episodeJSON).Map().Range(func(k string, v pcommon.Value) bool {
		v.CopyTo(m.PutEmpty(attrPrefix + k))
		return true
	})
	return m
}

func TestAnEpisodeMapsTheSameFromABodyMapAJSONBodyOrAttributes(t *testing.T) {
	tests := []struct {
		name  string
		attrs pcommon.Map
		body  pcommon.Value
	}{
		{"a body map", trainAttrs(t, 10), jsonValue(t, episodeJSON)},
		{"a body string holding a JSON object", trainAttrs(t, 10), pcommon.NewValueStr(episodeJSON)},
		{"prime.episode attributes and no body", episodeAttrs(t), pcommon.NewValueEmpty()},
		{"prime.episode attributes and a log line as the body", episodeAttrs(t), pcommon.NewValueStr("[rollout] episode done")},
		{"train work named explicitly", trainAttrs(t, 10, "prime.work.type", "train"), jsonValue(t, episodeJSON)},
		{"the step as an integral double", attrs(t, "prime.work.step", 10.0), jsonValue(t, episodeJSON)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkEpisode(t, mustRow(t, tt.attrs, tt.body), episodeRow())
		})
	}
}

func TestColumnsLeftOutTakeTheirDefaults(t *testing.T) {
	tests := []struct {
		name string
		body string
		want func(*Episode)
	}{
		{
			name: "tag, prompt and answer are empty, the rest null; tokens and completion come from the branch",
			body: `{"trajectory":[{"messages":[{"role":"assistant","content":"hi"}],"num_input_tokens":3,"num_output_tokens":1}]}`,
			want: func(ep *Episode) {
				ep.Trajectory = `[{"messages":[{"role":"assistant","content":"hi"}],"num_input_tokens":3,"num_output_tokens":1,"advantage":null}]`
				ep.Completion = ptr(`[{"role":"assistant","content":"hi"}]`)
				ep.NumInputTokens, ep.NumOutputTokens = ptr[int64](3), ptr[int64](1)
			},
		},
		{
			name: "a branch with neither messages nor token counts leaves completion and tokens null",
			body: `{"trajectory":[{"turn":1}]}`,
			want: func(ep *Episode) {
				ep.Trajectory = `[{"turn":1,"advantage":null}]`
			},
		},
		{
			name: "null values are values left out",
			body: `{"tag":null,"reward":null,"env_name":null,"metrics":null,"trajectory":[{"turn":1}]}`,
			want: func(ep *Episode) {
				ep.Trajectory = `[{"turn":1,"advantage":null}]`
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := Episode{Step: 3, CreatedAt: time.Date(2026, 3, 4, 5, 6, 7, 891234000, time.UTC)}
			tt.want(&want)
			want.Size = want.size()
			for _, body := range []pcommon.Value{pcommon.NewValueStr(tt.body), jsonValue(t, tt.body)} {
				checkEpisode(t, mustRow(t, trainAttrs(t, 3), body), want)
			}
		})
	}
}

func TestAnAttributeOverridesTheBodyKey(t *testing.T) {
	body := `{"tag":"body","problem_id":1,"reward":0.1,"completion":"body","env_name":"body",` +
		`"trajectory":[{"messages":["body"],"num_input_tokens":1}]}`
	tests := []struct {
		name  string
		attrs []any
		check func(*testing.T, Episode)
	}{
		{"tag", []any{"prime.episode.tag", "attr"}, func(t *testing.T, ep Episode) {
			if ep.Tag != "attr" {
				t.Fatalf("tag %q, want attr", ep.Tag)
			}
		}},
		{"problem_id", []any{"prime.episode.problem_id", int64(2)}, func(t *testing.T, ep Episode) {
			if *ep.ProblemID != 2 {
				t.Fatalf("problem_id %d, want 2", *ep.ProblemID)
			}
		}},
		{"reward", []any{"prime.episode.reward", 0.25}, func(t *testing.T, ep Episode) {
			if *ep.Reward != 0.25 {
				t.Fatalf("reward %v, want 0.25", *ep.Reward)
			}
		}},
		{"completion", []any{"prime.episode.completion", "attr"}, func(t *testing.T, ep Episode) {
			if *ep.Completion != `"attr"` {
				t.Fatalf("completion %s, want \"attr\"", *ep.Completion)
			}
		}},
		{"trajectory, and the tokens it gives", []any{"prime.episode.trajectory", `json:[{"messages":["attr"],"num_input_tokens":5}]`},
			func(t *testing.T, ep Episode) {
				if ep.Trajectory != `[{"messages":["attr"],"num_input_tokens":5,"advantage":null}]` || *ep.NumInputTokens != 5 {
					t.Fatalf("trajectory %s, tokens %d", ep.Trajectory, *ep.NumInputTokens)
				}
			}},
		{"an empty attribute leaves the column to the body", []any{"prime.episode.env_name", nil}, func(t *testing.T, ep Episode) {
			if *ep.EnvName != "body" {
				t.Fatalf("env_name %q, want body", *ep.EnvName)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, b := range []pcommon.Value{jsonValue(t, body), pcommon.NewValueStr(body)} {
				tt.check(t, mustRow(t, trainAttrs(t, 1, tt.attrs...), b))
			}
		})
	}
}

// A map body can hold a key twice (OTLP does not forbid it; pdata keeps
// both). Its column is the first, as pcommon.Map.Get finds, and an empty
// first value leaves the column empty.
func TestAMapBodyHoldingAColumnTwiceGivesItsFirstValue(t *testing.T) {
	twice := func(first, second any) pcommon.Value {
		// Keys of one length, renamed in the wire bytes: pdata's API
		// itself never puts a key twice.
		lr := plog.NewLogRecord()
		m := lr.Body().SetEmptyMap()
		if err := m.FromRaw(map[string]any{"trajectory": []any{map[string]any{"messages": []any{"m"}}}}); err != nil {
			t.Fatal(err)
		}
		if first != nil {
			m.PutStr("answer", first.(string))
		} else {
			m.PutEmpty("answer")
		}
		m.PutStr("answeR", second.(string))
		ld := plog.NewLogs()
		lr.CopyTo(ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty())
		raw, err := (&plog.ProtoMarshaler{}).MarshalLogs(ld)
		if err != nil {
			t.Fatal(err)
		}
		raw = bytes.Replace(raw, []byte("answeR"), []byte("answer"), 1)
		back, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(raw)
		if err != nil {
			t.Fatal(err)
		}
		body := back.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body()
		n := 0
		for k := range body.Map().All() {
			if k == "answer" {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("the body holds answer %d times, want 2", n)
		}
		return body
	}
	if ep := mustRow(t, trainAttrs(t, 1), twice("first", "second")); ep.Answer != "first" {
		t.Errorf("answer %q, want the first value, first", ep.Answer)
	}
	if ep := mustRow(t, trainAttrs(t, 1), twice(nil, "second")); ep.Answer != "" {
		t.Errorf("answer %q, want empty: the first value is empty", ep.Answer)
	}
}

func TestRecordsWhoseValuesDoNotFitAreRejectedNamingTheFieldAndTheType(t *testing.T) {
	const traj = `"trajectory":[{"turn":1}]`
	tests := []struct {
		name   string
		attrs  pcommon.Map
		body   pcommon.Value
		reason reject.Reason
		field  string
		msg    string
	}{
		{"no step", attrs(t, "prime.episode.tag", "x"), pcommon.NewValueEmpty(),
			reject.NoStep, "prime.work.step", "attribute prime.work.step is missing"},
		{"a string step that is not a decimal integer", attrs(t, "prime.work.step", "3.0"), pcommon.NewValueEmpty(),
			reject.BadStep, "prime.work.step", `attribute prime.work.step must be an int, got string "3.0"`},
		{"a word for a step", attrs(t, "prime.work.step", "ten"), pcommon.NewValueEmpty(),
			reject.BadStep, "prime.work.step", `attribute prime.work.step must be an int, got string "ten"`},
		{"a step string past int64", attrs(t, "prime.work.step", "9223372036854775808"), pcommon.NewValueEmpty(),
			reject.BadStep, "prime.work.step", `attribute prime.work.step must be an int, got string "9223372036854775808"`},
		{"a fractional step", attrs(t, "prime.work.step", 1.5), pcommon.NewValueEmpty(),
			reject.BadStep, "prime.work.step", `attribute prime.work.step must be an int, got double 1.5`},
		{"a map step", attrs(t, "prime.work.step", map[string]any{}), pcommon.NewValueEmpty(),
			reject.BadStep, "prime.work.step", `attribute prime.work.step must be an int, got map`},
		{"an unknown work type", trainAttrs(t, 1, "prime.work.type", "test"), pcommon.NewValueEmpty(),
			reject.BadWorkType, "prime.work.type", `attribute prime.work.type must be "train" or "eval", got string "test"`},
		{"an empty work type", trainAttrs(t, 1, "prime.work.type", ""), pcommon.NewValueEmpty(),
			reject.BadWorkType, "prime.work.type", `attribute prime.work.type must be "train" or "eval", got string ""`},
		{"a work type that is not a string", trainAttrs(t, 1, "prime.work.type", int64(1)), pcommon.NewValueEmpty(),
			reject.BadWorkType, "prime.work.type", `attribute prime.work.type must be "train" or "eval", got int`},
		{"a list body", trainAttrs(t, 1), jsonValue(t, `[{"reward":1}]`),
			reject.BadBody, "body", "body must be a map or a string holding a JSON object, got list"},
		{"a body that starts like JSON but does not parse", trainAttrs(t, 1), pcommon.NewValueStr(`{"reward": 1,`),
			reject.BadBody, "body", "body looks like a JSON object but does not parse: invalid JSON at offset 13"},
		{"a map reward", trainAttrs(t, 1), jsonValue(t, `{"reward":{"a":1},`+traj+`}`),
			reject.BadValue, "body.reward", "body key reward must be a number, got map"},
		{"a string reward in a JSON body", trainAttrs(t, 1), pcommon.NewValueStr(`{"reward":"0.5",` + traj + `}`),
			reject.BadValue, "body.reward", `body key reward must be a number, got string "0.5"`},
		{"a map reward attribute", trainAttrs(t, 1, "prime.episode.reward", map[string]any{"a": 1}), pcommon.NewValueEmpty(),
			reject.BadValue, "prime.episode.reward", "attribute prime.episode.reward must be a number, got map"},
		{"a bool advantage", trainAttrs(t, 1), jsonValue(t, `{"advantage":true}`),
			reject.BadValue, "body.advantage", "body key advantage must be a number, got bool"},
		{"a fractional problem_id", trainAttrs(t, 1), jsonValue(t, `{"problem_id":2.5}`),
			reject.BadValue, "body.problem_id", "body key problem_id must be an int, got double 2.5"},
		{"a problem_id past 2^53", trainAttrs(t, 1), pcommon.NewValueStr(`{"problem_id":1e300}`),
			reject.BadValue, "body.problem_id", "body key problem_id must be an int, got double 1e+300"},
		{"a map problem_id in a JSON body", trainAttrs(t, 1), pcommon.NewValueStr(`{"problem_id":{"id":3}}`),
			reject.BadValue, "body.problem_id", "body key problem_id must be an int, got map"},
		{"a string token count", trainAttrs(t, 1, "prime.episode.num_input_tokens", "12"), pcommon.NewValueEmpty(),
			reject.BadValue, "prime.episode.num_input_tokens", `attribute prime.episode.num_input_tokens must be an int, got string "12"`},
		{"a list output token count in a JSON body", trainAttrs(t, 1), pcommon.NewValueStr(`{"num_output_tokens":[1]}`),
			reject.BadValue, "body.num_output_tokens", "body key num_output_tokens must be an int, got list"},
		{"a list env_name", trainAttrs(t, 1, "prime.episode.env_name", []any{"gsm8k"}), pcommon.NewValueEmpty(),
			reject.BadValue, "prime.episode.env_name", "attribute prime.episode.env_name must be a string, got list"},
		{"a map env_name in a JSON body", trainAttrs(t, 1), pcommon.NewValueStr(`{"env_name":{"id":"gsm8k"}}`),
			reject.BadValue, "body.env_name", "body key env_name must be a string, got map"},
		{"a map trajectory", trainAttrs(t, 1), jsonValue(t, `{"trajectory":{"messages":[]}}`),
			reject.BadValue, "body.trajectory", "body key trajectory must be a list of maps (or a string holding a JSON array of objects), got map"},
		{"a map trajectory in a JSON body", trainAttrs(t, 1), pcommon.NewValueStr(`{"trajectory":{"messages":[]}}`),
			reject.BadValue, "body.trajectory", "body key trajectory must be a list of maps (or a string holding a JSON array of objects), got map"},
		{"a text trajectory", trainAttrs(t, 1, "prime.episode.trajectory", "hello"), pcommon.NewValueEmpty(),
			reject.BadValue, "prime.episode.trajectory", `attribute prime.episode.trajectory must be a list of maps (or a string holding a JSON array of objects), got string "hello"`},
		{"a branch that is not a map", trainAttrs(t, 1), jsonValue(t, `{"trajectory":[{"a":1},1]}`),
			reject.BadValue, "body.trajectory", "body key trajectory[1] must be a map, got int"},
		{"a branch that is not an object in a JSON body", trainAttrs(t, 1), pcommon.NewValueStr(`{"trajectory":["x"]}`),
			reject.BadValue, "body.trajectory", "body key trajectory[0] must be a map, got string"},
		{"a trajectory string that is broken JSON", trainAttrs(t, 1, "prime.episode.trajectory", `[{"a":1}`), pcommon.NewValueEmpty(),
			reject.BadValue, "prime.episode.trajectory", "attribute prime.episode.trajectory holds invalid JSON: invalid JSON at offset 8"},
		{"a last branch whose token count is a string", trainAttrs(t, 1),
			jsonValue(t, `{"trajectory":[{"num_input_tokens":1},{"num_input_tokens":"ten"}]}`),
			reject.BadValue, "body.trajectory", `body key trajectory[1].num_input_tokens must be an int, got string "ten"`},
		{"a last branch whose token count is fractional, in a JSON body", trainAttrs(t, 1),
			pcommon.NewValueStr(`{"trajectory":[{"num_output_tokens":1.5}]}`),
			reject.BadValue, "body.trajectory", "body key trajectory[0].num_output_tokens must be an int, got double 1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := fromRecord(t, tt.attrs, tt.body)
			rej, ok := errors.AsType[*reject.Rejection](err)
			if !ok {
				t.Fatalf("got %v (%+v), want a *reject.Rejection", err, rec)
			}
			if rej.Reason != tt.reason || rej.Field != tt.field || err.Error() != "prime.episode: "+tt.msg {
				t.Fatalf("got reason %q field %q %q\nwant reason %q field %q %q", rej.Reason, rej.Field, err, tt.reason, tt.field, "prime.episode: "+tt.msg)
			}
		})
	}
}

func TestNumbersAreReadLeniently(t *testing.T) {
	tests := []struct {
		name  string
		attrs pcommon.Map
		body  pcommon.Value
		check func(Episode) bool
	}{
		{"an int reward and advantage, as the JS SDK sends whole numbers", trainAttrs(t, 1),
			jsonValue(t, `{"reward":1,"advantage":0,"trajectory":[{}]}`),
			func(ep Episode) bool { return *ep.Reward == 1 && *ep.Advantage == 0 }},
		{"integral doubles for ints", trainAttrs(t, 1),
			jsonValue(t, `{"problem_id":3.0,"num_input_tokens":12.0,"num_output_tokens":1e2,"trajectory":[{}]}`),
			func(ep Episode) bool {
				return *ep.ProblemID == 3 && *ep.NumInputTokens == 12 && *ep.NumOutputTokens == 100
			}},
		{"integral doubles for ints in a JSON body, and in the last branch", trainAttrs(t, 1),
			pcommon.NewValueStr(`{"problem_id":3.0,"num_input_tokens":1E1,"trajectory":[{"num_output_tokens":7.0}]}`),
			func(ep Episode) bool {
				return *ep.ProblemID == 3 && *ep.NumInputTokens == 10 && *ep.NumOutputTokens == 7
			}},
		{"an integral double step", attrs(t, "prime.work.step", 20.0, "prime.episode.trajectory", "[{}]"), pcommon.NewValueEmpty(),
			func(ep Episode) bool { return ep.Step == 20 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ep := mustRow(t, tt.attrs, tt.body); !tt.check(ep) {
				t.Fatalf("got %s", render(ep))
			}
		})
	}
}

func TestEveryBranchTakesTheEpisodeAdvantage(t *testing.T) {
	tests := []struct {
		name      string
		traj      string
		advantage any // nil: none
		want      string
	}{
		{"a branch's own advantage is overridden where it stands", `[{"messages":[],"advantage":9,"x":1}]`, 0.5,
			`[{"messages":[],"advantage":0.5,"x":1}]`},
		{"no episode advantage gives every branch null", `[{"a":1},{"b":2,"advantage":3}]`, nil,
			`[{"a":1,"advantage":null},{"b":2,"advantage":null}]`},
		{"an empty branch gets the advantage alone", `[{}]`, 0.5, `[{"advantage":0.5}]`},
		{"an int advantage", `[{"a":1}]`, int64(2), `[{"a":1,"advantage":2}]`},
		{"a tiny advantage is written as encoding/json writes it", `[{"a":1}]`, 1e-7, `[{"a":1,"advantage":1e-7}]`},
		{"a non-finite advantage is null in the JSON", `[{"a":1}]`, math.Inf(1), `[{"a":1,"advantage":null}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var adv []any
			if tt.advantage != nil {
				adv = []any{"prime.episode.advantage", tt.advantage}
			}
			for _, form := range []struct {
				name string
				body pcommon.Value
			}{
				{"a list", jsonValue(t, `{"trajectory":`+tt.traj+`}`)},
				{"a JSON array string", jsonValue(t, `{"trajectory":`+quoteJSON(tt.traj)+`}`)},
				{"JSON body text", pcommon.NewValueStr(`{"trajectory":` + tt.traj + `}`)},
				{"a JSON array string in JSON body text", pcommon.NewValueStr(`{"trajectory":` + quoteJSON(tt.traj) + `}`)},
			} {
				ep := mustRow(t, trainAttrs(t, 1, adv...), form.body)
				if ep.Trajectory != tt.want {
					t.Fatalf("%s: trajectory %s, want %s", form.name, ep.Trajectory, tt.want)
				}
			}
		})
	}
}

func TestBranchesGivenAsJSONTextKeepTheirTextAndHaveOneAdvantage(t *testing.T) {
	tests := []struct{ name, traj, want string }{
		{"whitespace and number spellings inside values are kept", `[ { "a" : [1, 2.50] ,"b":1E3} ]`,
			`[{"a":[1, 2.50],"b":1E3,"advantage":0.5}]`},
		{"duplicate advantage keys become one", `[{"advantage":1,"a":3,"advantage":2}]`, `[{"advantage":0.5,"a":3}]`},
		{"an escaped advantage key is still the advantage", `[{"adv\u0061ntage":1}]`, `[{"adv\u0061ntage":0.5}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := mustRow(t, trainAttrs(t, 1, "prime.episode.advantage", 0.5, "prime.episode.trajectory", tt.traj), pcommon.NewValueEmpty())
			if ep.Trajectory != tt.want {
				t.Fatalf("trajectory %s, want %s", ep.Trajectory, tt.want)
			}
		})
	}
}

func TestTokenCountsAndCompletionComeFromTheLastBranchWhenAbsent(t *testing.T) {
	const twoBranches = `[{"messages":["first"],"num_input_tokens":1,"num_output_tokens":2},` +
		`{"messages":["last"],"num_input_tokens":3,"num_output_tokens":4}]`
	tests := []struct {
		name       string
		body       string
		in, out    *int64
		completion *string
	}{
		{"the last branch gives both counts and the completion", `{"trajectory":` + twoBranches + `}`,
			ptr[int64](3), ptr[int64](4), ptr(`["last"]`)},
		{"given values win over the branch", `{"num_input_tokens":30,"completion":"done","trajectory":` + twoBranches + `}`,
			ptr[int64](30), ptr[int64](4), ptr(`"done"`)},
		{"a given count spares the branch's misfit", `{"num_input_tokens":30,"trajectory":[{"num_input_tokens":"x"}]}`,
			ptr[int64](30), nil, nil},
		{"an earlier branch does not stand in for the last", `{"trajectory":[{"num_input_tokens":1,"messages":[]},{"num_output_tokens":2}]}`,
			nil, ptr[int64](2), nil},
		{"null counts in the branch are none", `{"trajectory":[{"num_input_tokens":null,"messages":null}]}`,
			nil, nil, nil},
		{"messages held as a JSON string are not double-encoded", `{"trajectory":[{"messages":"[{\"role\":\"user\"}]"}]}`,
			nil, nil, ptr(`[{"role":"user"}]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, body := range []pcommon.Value{jsonValue(t, tt.body), pcommon.NewValueStr(tt.body)} {
				ep := mustRow(t, trainAttrs(t, 1), body)
				got := Episode{NumInputTokens: ep.NumInputTokens, NumOutputTokens: ep.NumOutputTokens, Completion: ep.Completion}
				want := Episode{NumInputTokens: tt.in, NumOutputTokens: tt.out, Completion: tt.completion}
				checkEpisode(t, got, want)
			}
		})
	}
}

// The completion taken from the last branch is that branch's "messages"
// as the trajectory holds them, the same bytes in the same memory, whether
// the trajectory came as a list, as JSON text in a body string, or as a
// JSON string attribute: the Parquet writer then derives the completion's
// compression from the trajectory's (parquet_shared.go) instead of
// compressing the chat twice.
func TestTheCompletionSharesTheTrajectorysBytesInEveryBodyForm(t *testing.T) {
	const traj = `[{"messages":[{"role":"user","content":"first"}]},{"messages":[{"role":"user","content":"last"}], "num_input_tokens":3}]`
	for _, c := range []struct {
		name  string
		attrs pcommon.Map
		body  pcommon.Value
	}{
		{"a body map", trainAttrs(t, 1), jsonValue(t, `{"trajectory":`+traj+`}`)},
		{"a body string holding JSON", trainAttrs(t, 1), pcommon.NewValueStr(`{"trajectory":` + traj + `}`)},
		{"a JSON string attribute", trainAttrs(t, 1, "prime.episode.trajectory", traj), pcommon.NewValueEmpty()},
	} {
		t.Run(c.name, func(t *testing.T) {
			ep := mustRow(t, c.attrs, c.body)
			if ep.Completion == nil || *ep.Completion != `[{"role":"user","content":"last"}]` {
				t.Fatalf("completion %v, want the last branch's messages", ep.Completion)
			}
			traj := uintptr(unsafe.Pointer(unsafe.StringData(ep.Trajectory)))
			comp := uintptr(unsafe.Pointer(unsafe.StringData(*ep.Completion)))
			if comp < traj || comp+uintptr(len(*ep.Completion)) > traj+uintptr(len(ep.Trajectory)) {
				t.Fatalf("the completion is a copy, not the trajectory's bytes")
			}
		})
	}
}

// A trajectory in a body string is walked by its brackets and quotes
// alone, since the body's own scan checked it; a trajectory in a JSON
// string attribute is checked as it is walked. Both must write the same
// text: the same members, spaces and escapes kept, the advantage set.
func TestATrajectoryWalkedAfterTheBodysCheckIsWrittenAsACheckedWalkWritesIt(t *testing.T) {
	for _, traj := range []string{
		`[{"messages":[{"role":"user","content":"a \"quoted\" [x] {y}"}],"token_ids":[1, 2,3 ,-4e2],"logprobs":[-0.5,-1.25E-3]}]`,
		`[ { "advantage" : 9 , "messages" : [ ] , "advantage" : 7 } , {"info":{"a":[{"b":[[],{}]}],"c":null,"d":true}} ]`,
		`[{"x":"\u00e9\n\t"},{},{"advantage":null,"n":[0.0,1,2]}]`,
	} {
		body := mustRow(t, trainAttrs(t, 1, "prime.episode.advantage", 0.5), pcommon.NewValueStr(`{"trajectory":`+traj+`}`))
		attr := mustRow(t, trainAttrs(t, 1, "prime.episode.advantage", 0.5, "prime.episode.trajectory", traj), pcommon.NewValueEmpty())
		if body.Trajectory != attr.Trajectory {
			t.Errorf("trajectory %s\nfrom the body: %s\nfrom an attribute: %s", traj, body.Trajectory, attr.Trajectory)
		}
		var branches []map[string]any
		if err := json.Unmarshal([]byte(body.Trajectory), &branches); err != nil {
			t.Fatalf("the trajectory written from %s is not JSON (%v): %s", traj, err, body.Trajectory)
		}
		for i, b := range branches {
			if b["advantage"] != 0.5 {
				t.Errorf("branch %d of %s has advantage %v, want the episode's 0.5", i, body.Trajectory, b["advantage"])
			}
		}
	}
}

func TestEpisodesWithAnEmptyTrajectoryHaveNoRow(t *testing.T) {
	tests := []struct {
		name  string
		attrs pcommon.Map
		body  pcommon.Value
	}{
		{"no trajectory", trainAttrs(t, 1), jsonValue(t, `{"reward":1}`)},
		{"an empty list", trainAttrs(t, 1), jsonValue(t, `{"reward":1,"trajectory":[]}`)},
		{"an empty array in a JSON body", trainAttrs(t, 1), pcommon.NewValueStr(`{"trajectory": [ ] }`)},
		{"null in a JSON body", trainAttrs(t, 1), pcommon.NewValueStr(`{"trajectory":null}`)},
		{"an empty JSON array string", trainAttrs(t, 1, "prime.episode.trajectory", " [ ] "), pcommon.NewValueEmpty()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := mustFromRecord(t, tt.attrs, tt.body)
			if len(rec.Rows) != 0 || rec.Eval || rec.Step != 1 || rec.Document != nil {
				t.Fatalf("got %+v, want a step 1 record without rows", rec)
			}
		})
	}
}

func TestEvalWorkHasNoRowSoItsColumnsAreNotRead(t *testing.T) {
	for _, body := range []pcommon.Value{jsonValue(t, `{"reward":{"not":"a number"}}`), pcommon.NewValueStr(`{"reward":`), jsonValue(t, `[1]`)} {
		rec := mustFromRecord(t, trainAttrs(t, 4, "prime.work.type", "eval"), body)
		if !rec.Eval || rec.Step != 4 || len(rec.Rows) != 0 || rec.Document != nil || len(rec.Coerced()) != 0 {
			t.Fatalf("got %+v, want eval work of step 4 without rows", rec)
		}
	}
}

// quoteJSON is s as a JSON string literal.
func quoteJSON(s string) string {
	var sb pjson.Buffer
	pjson.WriteString(&sb, s)
	return sb.String()
}

func TestJSONColumnsHoldTheValueEncodedOnceAndNoMore(t *testing.T) {
	tests := []struct {
		name  string
		value any // set as attribute prime.episode.metrics
		want  string
	}{
		{"a string holding a JSON object is stored as it is", `{"a": 1}`, `{"a": 1}`},
		{"a string holding a JSON array, after spaces, is stored as it is", "\n [1,2]", "\n [1,2]"},
		{"a string that starts like JSON but is not is a JSON string", `{"a":`, `"{\"a\":"`},
		{"plain text is a JSON string", "hello", `"hello"`},
		{"a string holding a JSON string is encoded: only objects and arrays pass", `"quoted"`, `"\"quoted\""`},
		{"a string holding a number is encoded", "42", `"42"`},
		{"an int", int64(42), `42`},
		{"a double", 0.5, `0.5`},
		{"a large double", 1e21, `1e+21`},
		{"NaN is null", math.NaN(), `null`},
		{"a bool", true, `true`},
		{"a map keeps its key order", "json:" + `{"b":[1,"x",null],"a":{"c":1.5}}`, `{"b":[1,"x",null],"a":{"c":1.5}}`},
		{"a list", []any{int64(1), "two"}, `[1,"two"]`},
		{"bytes are base64", []byte{0xff, 0x00}, `"/wA="`},
		{"control characters, quotes and line separators are escaped; other text is kept",
			"line\nbreak\t\"q\\\" é \u2028\x01", `"line\nbreak\t\"q\\\" é \u2028\u0001"`},
		{"invalid UTF-8 becomes U+FFFD", "a\xffb", `"a\ufffdb"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := mustRow(t, trainAttrs(t, 1, "prime.episode.metrics", tt.value, "prime.episode.trajectory", "[{}]"), pcommon.NewValueEmpty())
			if ep.Metrics == nil || *ep.Metrics != tt.want {
				t.Fatalf("metrics %s, want %s", render(Episode{Metrics: ep.Metrics}), tt.want)
			}
		})
	}
}

func TestJSONColumnsInAJSONBodyKeepTheirText(t *testing.T) {
	body := `{"task": {"a" : 1},"info":"{\"b\":2}","metrics":"text","timing":[ 1 ],"trajectory":[{}]}`
	ep := mustRow(t, trainAttrs(t, 1), pcommon.NewValueStr(body))
	got := Episode{Task: ep.Task, Info: ep.Info, Metrics: ep.Metrics, Timing: ep.Timing}
	want := Episode{Task: ptr(`{"a" : 1}`), Info: ptr(`{"b":2}`), Metrics: ptr(`"text"`), Timing: ptr(`[ 1 ]`)}
	checkEpisode(t, got, want)
}

func TestTextColumnsTakeStringsAsTheyAreWithInvalidUTF8Replaced(t *testing.T) {
	ep := mustRow(t, trainAttrs(t, 1,
		"prime.episode.tag", `{"not":"parsed"}`,
		"prime.episode.prompt", "bad \xff byte",
		"prime.episode.trajectory", "[{}]"), pcommon.NewValueStr("{\"answer\":\"x\xfey\"}"))
	if ep.Tag != `{"not":"parsed"}` || ep.Prompt != "bad \uFFFD byte" || ep.Answer != "x\uFFFDy" {
		t.Fatalf("got %s", render(ep))
	}
}

func TestCreatedAtIsTheRecordTimeElseTheObservedTimeElseNowInUTCMicroseconds(t *testing.T) {
	local := time.FixedZone("X", 3600)
	tests := []struct {
		name         string
		ts, observed pcommon.Timestamp
		now          time.Time
		want         time.Time
	}{
		{"the record's timestamp", 1_700_000_000_123_456_789, 1_800_000_000_000_000_000, testNow(),
			time.Date(2023, 11, 14, 22, 13, 20, 123456000, time.UTC)},
		{"the observed timestamp", 0, 1_700_000_000_123_456_999, testNow(),
			time.Date(2023, 11, 14, 22, 13, 20, 123456000, time.UTC)},
		{"now, in UTC", 0, 0, time.Date(2026, 1, 2, 3, 4, 5, 6_789, local),
			time.Date(2026, 1, 2, 2, 4, 5, 6_000, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := FromRecord(trainAttrs(t, 1, "prime.episode.trajectory", "[{}]"), pcommon.NewValueEmpty(), tt.ts, tt.observed, tt.now)
			if err != nil {
				t.Fatal(err)
			}
			ep := rec.Rows[0]
			if !ep.CreatedAt.Equal(tt.want) || ep.CreatedAt.Location() != time.UTC {
				t.Fatalf("created_at %v, want %v", ep.CreatedAt, tt.want)
			}
		})
	}
}

func TestSizeCountsTheRowTextAndItsNumbers(t *testing.T) {
	ep := episodeRow()
	want := 8*8 + len(ep.Tag) + len(ep.Prompt) + len(ep.Answer) + len(ep.Trajectory) + len(*ep.EnvName) +
		len(*ep.Completion) + len(*ep.Task) + len(*ep.Info) + len(*ep.Metrics) + len(*ep.Timing)
	if got := mustRow(t, trainAttrs(t, 10), jsonValue(t, episodeJSON)).Size; got != want {
		t.Fatalf("size %d, want %d", got, want)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// testShapes is every shape, or the test stops.
func testShapes(t testing.TB) []shape {
	t.Helper()
	all, err := newShapes()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// records decodes every request of l.
func records(t *testing.T, l *load) []plog.LogRecord {
	t.Helper()
	var out []plog.LogRecord
	for _, raw := range l.requests {
		req := plogotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			t.Fatal(err)
		}
		for _, rl := range req.Logs().ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					out = append(out, lr)
				}
			}
		}
	}
	return out
}

func TestEveryShapesEpisodesAreRowsOfTheExporterOfAboutTheAskedSize(t *testing.T) {
	for _, sh := range testShapes(t) {
		for _, size := range []struct {
			bytes, episodes int
		}{{2 << 10, 40}, {200 << 10, 4}} {
			t.Run(fmt.Sprintf("%s/%s", sh.name, sizeName(size.bytes)), func(t *testing.T) {
				spec := loadSpec{name: "t", shape: sh, episodes: size.episodes, episodeBytes: size.bytes, perRequest: 16, perStep: 20, runs: 2}
				l, err := buildLoad(spec, 2)
				if err != nil {
					t.Fatal(err)
				}
				// A shape whose fixed part is already larger than the asked
				// size (native's document is 3 KB) is sent at that part.
				want := float64(size.bytes)
				if episodePadding(sh, size.bytes) == 0 {
					lr := plog.NewLogRecord()
					sh.fill(lr, episode{seed: 1, step: 10, problemID: 1, timestamp: 1})
					var m plog.ProtoMarshaler
					want = float64(m.LogRecordSize(lr))
					if want < float64(size.bytes) {
						t.Fatalf("no padding though the fixed part, %.0f bytes, is below %d", want, size.bytes)
					}
				}
				if per := float64(l.bytes) / float64(spec.episodes); per < 0.9*want || per > 1.1*want {
					t.Errorf("%.0f bytes per episode, want about %.0f", per, want)
				}
				bodies := map[string]bool{}
				for _, lr := range records(t, l) {
					step, _ := lr.Attributes().Get("prime.work.step")
					rec, err := sampletable.FromRecord(lr.Attributes(), lr.Body(), lr.Timestamp(), lr.ObservedTimestamp(), time.Now())
					if err != nil {
						t.Fatalf("the exporter rejects the episode: %v", err)
					}
					if len(rec.Rows) != 1 || rec.Rows[0].Step != step.Int() || rec.Eval {
						t.Fatalf("%d rows at step %d (eval %v), want one at %d", len(rec.Rows), rec.Step, rec.Eval, step.Int())
					}
					if bodies[lr.Body().AsString()] {
						t.Error("two episodes alike")
					}
					bodies[lr.Body().AsString()] = true
				}
				if len(bodies) != spec.episodes {
					t.Errorf("%d episodes, want %d", len(bodies), spec.episodes)
				}
			})
		}
	}
}

// bodyValue is a record's body as Go values: JSON text decoded.
func bodyValue(t *testing.T, lr plog.LogRecord) map[string]any {
	t.Helper()
	if m, ok := lr.Body().AsRaw().(map[string]any); ok {
		return m
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lr.Body().Str()), &m); err != nil {
		t.Fatalf("the body is neither a map nor JSON text of an object: %v", err)
	}
	return m
}

// strings collects every string in v.
func collectStrings(v any, out map[string]bool) {
	switch v := v.(type) {
	case string:
		out[v] = true
	case map[string]any:
		for _, e := range v {
			collectStrings(e, out)
		}
	case []any:
		for _, e := range v {
			collectStrings(e, out)
		}
	}
}

func TestEveryShapesTextIsVariedWordsThatCompressAsProseDoes(t *testing.T) {
	for _, sh := range testShapes(t) {
		t.Run(sh.name, func(t *testing.T) {
			lr := plog.NewLogRecord()
			sh.fill(lr, episode{seed: 3, step: 10, problemID: 2, timestamp: 1, padding: episodePadding(sh, 200<<10)})
			set := map[string]bool{}
			collectStrings(bodyValue(t, lr), set)
			// Each distinct string once: a document's repeats are its own
			// business, the text itself must not be one word over and over.
			texts := make([]string, 0, len(set))
			for s := range set {
				texts = append(texts, s)
			}
			slices.Sort(texts)
			text := strings.Join(texts, "\n")
			// native's and tokens' episodes are mostly arrays of numbers.
			if (sh.name == "plain" || sh.name == "verifiers") && len(text) < 50<<10 {
				t.Fatalf("%d bytes of distinct text in a 200 KB episode", len(text))
			}
			words := map[string]bool{}
			for _, w := range strings.Fields(text) {
				words[w] = true
			}
			if len(words) < 300 {
				t.Errorf("%d distinct words", len(words))
			}
			if ratio := float64(len(s2.EncodeSnappy(nil, []byte(text)))) / float64(len(text)); ratio < 0.4 {
				t.Errorf("Snappy takes the distinct text to %.2f of its size; prose stays above 0.4", ratio)
			}
		})
	}
}

func TestAVerifiersEpisodeRepeatsItsCompletionInEveryStepWithToolCallsAndReasoning(t *testing.T) {
	shapes := testShapes(t)
	lr := plog.NewLogRecord()
	fillVerifiers(lr, episode{seed: 5, step: 20, problemID: 4, timestamp: 1, padding: 4000})
	var doc columnEpisode
	if err := json.Unmarshal([]byte(lr.Body().Str()), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Trajectory) != 2 {
		t.Fatalf("%d steps, want 2", len(doc.Trajectory))
	}
	for i, st := range doc.Trajectory {
		want := append(slices.Clone(doc.Prompt), doc.Completion[:2*i+1]...)
		if !slices.EqualFunc(st.Messages, want, func(a, b chatMessage) bool { return jsonText(a) == jsonText(b) }) {
			t.Errorf("step %d's messages are not the prompt and the completion up to its turn", i)
		}
	}
	roles := ""
	for _, m := range doc.Completion {
		roles += m.Role[:1]
		if m.Role == "assistant" && m.ReasoningContent == "" {
			t.Error("an assistant turn without reasoning_content")
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			t.Error("a tool message without tool_call_id")
		}
	}
	if roles != "ata" || len(doc.Completion[0].ToolCalls) != 1 || !json.Valid([]byte(doc.Completion[0].ToolCalls[0].Function.Arguments)) {
		t.Errorf("completion roles %q, first turn's tool calls %+v", roles, doc.Completion[0].ToolCalls)
	}
	if sh, _ := pickShapes(shapes, "verifiers"); sh[0].scope != "prime_otel" {
		t.Errorf("scope %q, want prime-otel's", sh[0].scope)
	}
}

func TestALargeTokensEpisodeIsMostlyTokenArrays(t *testing.T) {
	sh, err := pickShapes(testShapes(t), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	lr := plog.NewLogRecord()
	fillTokens(lr, episode{seed: 5, step: 20, timestamp: 1, padding: episodePadding(sh[0], 200<<10)})
	var doc columnEpisode
	if err := json.Unmarshal([]byte(lr.Body().Str()), &doc); err != nil {
		t.Fatal(err)
	}
	arrays := doc.Trajectory[0].Tokens
	if arrays == nil || len(arrays.CompletionIDs) != len(arrays.CompletionLogprobs) || len(arrays.CompletionIDs) != len(arrays.CompletionMask) {
		t.Fatalf("token arrays %v", arrays)
	}
	if share := float64(len(jsonText(arrays))) / float64(len(lr.Body().Str())); share < 0.8 {
		t.Errorf("the arrays are %.2f of the body, want most of it", share)
	}
}

func TestPickingShapesNamesThemInTheOrderGivenAndRefusesAnUnknownOne(t *testing.T) {
	all := testShapes(t)
	got, err := pickShapes(all, "tokens,plain")
	if err != nil || len(got) != 2 || got[0].name != "tokens" || got[1].name != "plain" {
		t.Fatalf("pickShapes = %v, %v", got, err)
	}
	if _, err := pickShapes(all, "plain,chat"); err == nil || !strings.Contains(err.Error(), `"chat"`) || !strings.Contains(err.Error(), "plain,verifiers,native,tokens") {
		t.Errorf("an unknown shape: %v", err)
	}
}

// plainShape is the bench's first shape, which the older tests use.
func plainShape(t testing.TB) shape {
	t.Helper()
	all, err := newShapes()
	if err != nil {
		t.Fatal(err)
	}
	return all[0]
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib/otlptest"
)

// runEval runs the whole program against c with quick defaults plus args.
func runEval(t *testing.T, c *otlptest.Collector, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	all := append([]string{"-endpoint", c.URL, "-episodes", "6", "-export-timeout", "2s"}, args...)
	err := trainerlib.Execute(context.Background(), all, &stdout, &stderr, noEnv, parseConfig, run)
	return stdout.String(), err
}

func stringArray(v *commonpb.AnyValue) []string {
	out := []string{}
	for _, e := range v.GetArrayValue().GetValues() {
		out = append(out, e.GetStringValue())
	}
	return out
}

func TestEveryRequestCarriesTheEvaluationsResource(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		strings map[string]string // "" means absent
		arrays  map[string][]string
	}{
		{
			name: "the defaults",
			strings: map[string]string{
				"service.name": "evalrunner", "prime.run.kind": "eval", "prime.run.key": "demo-eval", "prime.run.id": "",
				"prime.run.model": "Qwen/Qwen3-4B", "prime.run.name": "", "prime.run.team_id": "",
				"prime.eval.framework": "verifiers", "prime.eval.description": "",
			},
			arrays: map[string][]string{
				"prime.run.environments": {"primeintellect/gsm8k", "primeintellect/vf-math@v3"},
				"prime.eval.tags":        {},
			},
		},
		{
			name: "every attribute set",
			args: []string{"-run-key", "k-1", "-name", "gsm8k-nightly", "-model", "m/1", "-environments", "gsm8k,owner/env@v2",
				"-team-id", "team-9", "-tags", "nightly,qwen", "-framework", "lm-eval", "-description", "a nightly eval"},
			strings: map[string]string{
				"prime.run.kind": "eval", "prime.run.key": "k-1", "prime.run.name": "gsm8k-nightly", "prime.run.model": "m/1",
				"prime.run.team_id": "team-9", "prime.eval.framework": "lm-eval", "prime.eval.description": "a nightly eval",
			},
			arrays: map[string][]string{
				"prime.run.environments": {"gsm8k", "owner/env@v2"},
				"prime.eval.tags":        {"nightly", "qwen"},
			},
		},
		{
			name:    "attached to an evaluation",
			args:    []string{"-run-id", "ev-123", "-framework", ""},
			strings: map[string]string{"prime.run.kind": "eval", "prime.run.id": "ev-123", "prime.run.key": "", "prime.eval.framework": ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := otlptest.NewCollector(t, 0)
			if _, err := runEval(t, c, tc.args...); err != nil {
				t.Fatal(err)
			}
			resources := c.Resources()
			if len(resources) == 0 {
				t.Fatal("nothing received")
			}
			for _, res := range resources {
				for key, want := range tc.strings {
					v, ok := res[key]
					if want == "" && ok {
						t.Errorf("%s = %v, want it absent", key, v)
					} else if got := v.GetStringValue(); got != want {
						t.Errorf("%s = %q, want %q", key, got, want)
					}
				}
				for key, want := range tc.arrays {
					if got := stringArray(res[key]); !slices.Equal(got, want) {
						t.Errorf("%s = %q, want the string array %q", key, got, want)
					}
				}
				var evalConfig struct {
					RolloutsPerExample int `json:"rollouts_per_example"`
					NumExamples        int `json:"num_examples"`
				}
				if err := json.Unmarshal([]byte(res["prime.run.config"].GetStringValue()), &evalConfig); err != nil || evalConfig.RolloutsPerExample != 2 || evalConfig.NumExamples != 3 {
					t.Errorf("prime.run.config = %q (%v), want a JSON object with the eval's config", res["prime.run.config"].GetStringValue(), err)
				}
			}
		})
	}
}

func TestEveryEpisodeArrivesAsItsNativeDocument(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// decode turns a received body back into the document.
		decode func(t *testing.T, body *commonpb.AnyValue) any
		// want is what the document should have become on the way.
		want func(doc object) any
	}{
		{
			name:   "a map body, whose keys the Go SDK sorts",
			decode: func(t *testing.T, body *commonpb.AnyValue) any { return fromAnyValue(body) },
			want:   func(doc object) any { return sortedKeys(doc) },
		},
		{
			name: "a JSON string body, in declaration order",
			args: []string{"-json-body"},
			decode: func(t *testing.T, body *commonpb.AnyValue) any {
				if _, ok := body.GetValue().(*commonpb.AnyValue_StringValue); !ok {
					t.Fatalf("body is a %T, want a string", body.GetValue())
				}
				return parseJSON(t, []byte(body.GetStringValue()))
			},
			want: func(doc object) any { return doc },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := otlptest.NewCollector(t, 0)
			if _, err := runEval(t, c, append([]string{"-episodes", "5", "-batch", "2", "-error-rate", "0.4"}, tc.args...)...); err != nil {
				t.Fatal(err)
			}
			ev := planEvaluation(testConfig(t, append([]string{"-episodes", "5", "-error-rate", "0.4"}, tc.args...)...))
			episodes := otlptest.ByEvent(c.Records(), trainerlib.EventEpisode)
			if len(episodes) != 5 {
				t.Fatalf("%d prime.episode records, want 5", len(episodes))
			}
			for i, r := range episodes {
				if got, want := tc.decode(t, r.GetBody()), tc.want(ev.document(i)); !reflect.DeepEqual(got, want) {
					t.Errorf("episode %d: body\n%.300s\nwant\n%.300s", i, jsonText(got), jsonText(want))
				}
				if r.GetTimeUnixNano() == 0 || r.GetObservedTimeUnixNano() == 0 {
					t.Errorf("episode %d has no timestamp", i)
				}
				if len(r.GetAttributes()) != 0 {
					t.Errorf("episode %d has attributes %v, want none: an evaluation has no steps", i, r.GetAttributes())
				}
			}
		})
	}
}

func TestTheRunEndsWithTheSummaryAndTheEndEvent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		wantSummary bool
		wantStatus  string // "" for no end event
		wantError   string
	}{
		{"completed", nil, true, "completed", ""},
		{"failed with a reason", []string{"-status", "failed", "-error", "sandbox quota exceeded"}, true, "failed", "sandbox quota exceeded"},
		{"cancelled without a reason", []string{"-status", "cancelled"}, true, "cancelled", "evalrunner: simulated cancelled evaluation"},
		{"crashed", []string{"-status", "crashed", "-error", "segfault"}, true, "crashed", "segfault"},
		{"none: the runner dies", []string{"-status", "none"}, true, "", ""},
		{"no summary", []string{"-summary=false"}, false, "completed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := otlptest.NewCollector(t, 0)
			if _, err := runEval(t, c, tc.args...); err != nil {
				t.Fatal(err)
			}
			records := c.Records()
			var names []string
			for _, r := range records {
				names = append(names, r.GetEventName())
			}
			want := slices.Repeat([]string{trainerlib.EventEpisode}, 6)
			if tc.wantSummary {
				want = append(want, trainerlib.EventMetrics)
			}
			if tc.wantStatus != "" {
				want = append(want, trainerlib.EventRunEnd)
			}
			if !slices.Equal(names, want) {
				t.Fatalf("records %q, want %q", names, want)
			}
			if tc.wantSummary {
				summary := otlptest.ByEvent(records, trainerlib.EventMetrics)[0]
				var keys []string
				for _, kv := range summary.GetBody().GetKvlistValue().GetValues() {
					keys = append(keys, kv.GetKey())
				}
				if !slices.Equal(keys, []string{"accuracy", "avg_metrics/judge_latency", "num_examples"}) {
					t.Errorf("summary body keys %q", keys)
				}
				if len(summary.GetAttributes()) != 0 {
					t.Errorf("summary attributes %v, want none", summary.GetAttributes())
				}
			}
			if tc.wantStatus == "" {
				return
			}
			otlptest.CheckRunEnd(t, records[len(records)-1], tc.wantStatus, tc.wantError)
		})
	}
}

func TestTheManifestListsWhatWasSent(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	path := filepath.Join(t.TempDir(), "manifest.json")
	out, err := runEval(t, c, "-episodes", "7", "-rollouts-per-example", "3", "-error-rate", "0.3", "-manifest", path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	records := c.Records()
	episodes := otlptest.ByEvent(records, trainerlib.EventEpisode)
	if len(m.Episodes) != len(episodes) {
		t.Fatalf("manifest lists %d episodes, the collector got %d", len(m.Episodes), len(episodes))
	}
	failed := 0
	for i, r := range episodes {
		doc := fromAnyValue(r.GetBody()).(object)
		e := m.Episodes[i]
		got := sentEpisode{
			ID: doc.get("id").(string), Env: lookup(t, doc, "env", "id").(string),
			ExampleIdx: lookup(t, doc, "task", "data", "idx").(int), Rollout: i % 3,
			Reward: e.Reward, OK: doc.get("ok").(bool), Bytes: len(jsonText(sortedKeys(doc))),
		}
		if got != e {
			t.Errorf("manifest episode %d = %+v, the record says %+v", i, e, got)
		}
		if score, ok := lookup(t, doc, "traces", "0", "rewards", "correct_answer").(object); ok && score.get("score") != e.Reward {
			t.Errorf("episode %d: reward %v in the manifest, score %v in the document", i, e.Reward, score.get("score"))
		}
		if !e.OK {
			failed++
		}
	}
	if m.Counts != (counts{Episodes: 7, Failed: 2, Examples: 3, LogRecords: int64(len(records))}) || failed != 2 {
		t.Errorf("counts %+v (%d failed)", m.Counts, failed)
	}
	if m.RunKey != "demo-eval" || m.RunID != "" || m.Status != "completed" || m.RunnerID == "" || len(m.Environments) != 2 {
		t.Errorf("manifest header %+v", m)
	}
	summary := otlptest.ByEvent(records, trainerlib.EventMetrics)[0].GetBody().GetKvlistValue().GetValues()
	if len(m.Summary) != len(summary) {
		t.Errorf("manifest summary %v, sent %v", m.Summary, summary)
	}
	for _, kv := range summary {
		sent := fromAnyValue(kv.GetValue())
		if n, ok := sent.(int); ok {
			sent = float64(n) // JSON numbers decode as float64
		}
		if m.Summary[kv.GetKey()] != sent {
			t.Errorf("summary %s: manifest %v, sent %v", kv.GetKey(), m.Summary[kv.GetKey()], sent)
		}
	}
	if m.Expected.AvgError == nil || *m.Expected.AvgError != 2.0/7 || m.Expected.AvgReward == nil {
		t.Errorf("expected %+v, want avg_error 2/7", m.Expected)
	}
	for _, want := range []string{"evaluation key demo-eval:", "7 episodes (2 failed) of 3 examples", "3 summary keys", "prime.run.end completed", "9 log records"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary line %q lacks %q", out, want)
		}
	}
}

func TestLargeEpisodesAreSplitIntoRequestsUnderTheBudget(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	if _, err := runEval(t, c, "-episodes", "6", "-episode-bytes", "3000000", "-export-timeout", "20s"); err != nil {
		t.Fatal(err)
	}
	if got := len(otlptest.ByEvent(c.Records(), trainerlib.EventEpisode)); got != 6 {
		t.Fatalf("%d episodes arrived, want 6", got)
	}
	// 5 episodes fit the 16 MiB budget: two requests of episodes, and the
	// summary and the end in a third.
	if n := c.Requests(); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	if c.LargestRequest() > maxRequestBytes {
		t.Fatalf("a request of %d bytes, over the %d budget", c.LargestRequest(), maxRequestBytes)
	}
}

// With -batch 4, the processor sends each batch on its own as soon as it is
// queued; the flush after it must still report the failure.
func TestAFailedDeliveryFailsTheRunNamingTheBatch(t *testing.T) {
	otlptest.CheckFailedDelivery(t, func(c *otlptest.Collector) (string, error) { return runEval(t, c, "-batch", "4") }, "episode 4")
}

func TestAnInterruptedEvaluationEndsAsCancelled(t *testing.T) {
	c := otlptest.NewCollector(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := parseConfig([]string{"-endpoint", c.URL, "-episodes", "10", "-batch", "3", "-export-timeout", "2s"}, new(bytes.Buffer), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tel, err := newTelemetry(ctx, cfg, &trainerlib.ErrorSink{})
	if err != nil {
		t.Fatal(err)
	}
	r := runner{cfg: cfg, eval: planEvaluation(cfg), play: trainerlib.Play{
		Events: trainerlib.Events{Logger: tel.logs.Provider.Logger(instrumentationScope), Now: time.Now, StampObserved: true},
		Flush:  tel.flush,
		// The interrupt arrives while waiting after the second batch.
		Sleep: func(ctx context.Context, _ time.Duration) error {
			if len(otlptest.ByEvent(c.Records(), trainerlib.EventEpisode)) == 6 {
				cancel()
			}
			return ctx.Err()
		},
	}}
	out, err := r.run(ctx)
	if shutErr := tel.logs.Provider.Shutdown(context.Background()); shutErr != nil {
		t.Fatal(shutErr)
	}
	if !errors.Is(err, context.Canceled) || len(out.sent) != 6 || out.status != trainerlib.StatusCancelled {
		t.Fatalf("run = %d sent, %s, %v; want 6 sent, cancelled, context.Canceled", len(out.sent), out.status, err)
	}
	records := c.Records()
	last := records[len(records)-1]
	if last.GetEventName() != trainerlib.EventRunEnd || otlptest.RecordAttrs(last)["prime.run.status"].GetStringValue() != trainerlib.StatusCancelled {
		t.Fatalf("last record %q %v, want prime.run.end cancelled", last.GetEventName(), otlptest.RecordAttrs(last))
	}
	if got := len(otlptest.ByEvent(records, trainerlib.EventMetrics)); got != 1 {
		t.Fatalf("%d summary events, want the summary of what was sent", got)
	}
}

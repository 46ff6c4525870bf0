package primeexporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/testkit/fuzzbytes"
)

// resourceKeys are the resource attributes the logs language picks from.
func resourceKeys() []string {
	return []string{
		attrRunID, attrRunKey, attrRunKind, attrRunModel, attrRunConfig, "prime.run.team_id",
		"service.instance.id", "prime.run.name", "prime.training.max_steps",
	}
}

// Resource attributes the seeds use.
const (
	attrRunID     = "prime.run.id"
	attrRunKey    = "prime.run.key"
	attrRunKind   = "prime.run.kind"
	attrRunModel  = "prime.run.model"
	attrRunConfig = "prime.run.config"
	attrRunStatus = "prime.run.status"
	attrRunError  = "prime.run.error"
	attrStep      = "prime.step"
)

// Config bits of the first fuzz byte: which run defaults the exporter has.
const (
	fzCfgRunKey = 1 << iota
	fzCfgModel
	fzCfgStepEvery
)

func fuzzConfig(bits byte) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.TeamID = "team-1"
	if bits&fzCfgRunKey != 0 {
		cfg.Run.Key = "cfg-key"
	}
	if bits&fzCfgModel != 0 {
		cfg.Run.Model = "cfg/model"
	}
	if bits&fzCfgStepEvery != 0 {
		cfg.Samples.StepInterval = 1
	}
	return cfg
}

// --- the whole logs push ---

// The names the logs language picks from: event names, record attributes
// and body keys the exporter reads.
func fzEventNames() []string {
	return []string{eventEpisode, eventMetrics, eventRunEnd, "prime.unknown", ""}
}

func fzRecordKeys() []string {
	return []string{
		"prime.work.step", "prime.work.type", attrStep, attrEventName,
		"prime.episode.reward", "prime.episode.advantage", "prime.episode.trajectory",
		"prime.episode.prompt", "prime.episode.completion", "prime.episode.num_input_tokens",
		"prime.episode.info", attrRunStatus, attrRunError, "loss", "reward/mean", "code.lineno",
	}
}

func fzBodyKeys() []string {
	return []string{
		"prompt", "completion", "trajectory", "answer", "env_name", "task", "info",
		"reward", "advantage", "metrics", "timing", "num_input_tokens", "num_output_tokens",
		"tag", "problem_id", "messages", "role", "content", "loss",
	}
}

// Record flag bits of the logs language.
const (
	fzRecNameAttr = 1 << iota // the event name as an event.name attribute
	fzRecTimestamp
	fzRecObserved
)

// logsSeed is a push of one resource with the given records, each a name,
// flags, attributes and a body.
type fzRecord struct {
	name  string
	flags byte
	attrs fuzzbytes.MapOf
	body  any
}

func logsSeed(cfgBits byte, res fuzzbytes.MapOf, records ...fzRecord) []byte {
	e := (&fuzzbytes.Encoder{}).Byte(cfgBits).Byte(0) // one resource
	e.Attrs(resourceKeys(), res).Byte(byte(len(records)))
	for _, rec := range records {
		e.Key(fzEventNames(), rec.name)
		e.Byte(rec.flags)
		e.Attrs(fzRecordKeys(), rec.attrs)
		e.Value(fzBodyKeys(), rec.body)
	}
	return e.B
}

func decodeLogs(r *fuzzbytes.Reader) plog.Logs {
	ld := plog.NewLogs()
	for n := int(r.Byte()%2) + 1; n > 0; n-- {
		rl := ld.ResourceLogs().AppendEmpty()
		r.Attrs(rl.Resource().Attributes(), resourceKeys(), 0)
		sl := rl.ScopeLogs().AppendEmpty()
		for m := int(r.Byte() % 12); m > 0 && len(r.B) > 0; m-- {
			lr := sl.LogRecords().AppendEmpty()
			name := r.Key(fzEventNames())
			flags := r.Byte()
			r.Attrs(lr.Attributes(), fzRecordKeys(), 0)
			r.Value(lr.Body(), fzBodyKeys(), 0)
			if flags&fzRecNameAttr != 0 {
				lr.Attributes().PutStr(attrEventName, name)
			} else {
				lr.SetEventName(name)
			}
			if flags&fzRecTimestamp != 0 {
				lr.SetTimestamp(pcommon.Timestamp(1_800_000_000_000_000_000 + uint64(flags)))
			}
			if flags&fzRecObserved != 0 {
				lr.SetObservedTimestamp(pcommon.Timestamp(1_800_000_000_000_000_123))
			}
		}
	}
	return ld
}

// FuzzPushLogs drives the whole logs push, offline into a temporary
// directory, with arbitrary event names, attributes and bodies: no panic,
// no error (offline nothing can fail that a retry would fix, and bad input
// is counted, never an error), and everything written is what a reader
// can read: run.json and every metrics.jsonl line are JSON, every sample
// object is Parquet that parquet-go opens.
func FuzzPushLogs(f *testing.F) {
	good := fuzzbytes.MapOf{{attrRunKey, "k"}, {attrRunModel, "m"}}
	traj := []any{fuzzbytes.MapOf{{"messages", []any{fuzzbytes.MapOf{{"role", "assistant"}, {"content", "hi"}}}}, {"num_input_tokens", 3}}}
	for _, seed := range [][]byte{
		logsSeed(0, good,
			fzRecord{name: eventEpisode, flags: fzRecTimestamp, attrs: fuzzbytes.MapOf{{"prime.work.step", 10}}, body: fuzzbytes.MapOf{{"prompt", "q"}, {"reward", 1}, {"trajectory", traj}}},
			fzRecord{name: eventMetrics, attrs: fuzzbytes.MapOf{{attrStep, 10}, {"loss", 0.5}, {"reward/mean", 1.0}}},
			fzRecord{name: eventRunEnd, attrs: fuzzbytes.MapOf{{attrRunStatus, "failed"}, {attrRunError, "OOM"}}}),
		logsSeed(fzCfgStepEvery, good,
			fzRecord{name: eventEpisode, flags: fzRecNameAttr | fzRecObserved, attrs: fuzzbytes.MapOf{{"prime.work.step", 3.0}, {"prime.episode.trajectory", `[{"messages":[]}]`}}, body: `{"reward": 0.5, "advantage": null}`},
			fzRecord{name: eventEpisode, attrs: fuzzbytes.MapOf{{"prime.work.step", "3"}}, body: fuzzbytes.MapOf{{"trajectory", traj}}},
			fzRecord{name: eventEpisode, attrs: fuzzbytes.MapOf{{"prime.work.step", 3}, {"prime.work.type", "eval"}}},
			fzRecord{name: eventEpisode, attrs: fuzzbytes.MapOf{{"prime.work.step", 3}}, body: fuzzbytes.MapOf{{"reward", fuzzbytes.MapOf{}}, {"trajectory", traj}}},
			fzRecord{name: eventMetrics, attrs: fuzzbytes.MapOf{{attrStep, 2.5}}},
			fzRecord{name: eventMetrics, attrs: fuzzbytes.MapOf{{attrStep, 4}}, body: `{"loss": "x", "kl": 0.1}`},
			fzRecord{name: eventMetrics, attrs: fuzzbytes.MapOf{{attrStep, 4}, {"loss", math.NaN()}, {"code.lineno", 3}}},
			fzRecord{name: "prime.unknown"}, fzRecord{name: "", body: "an ordinary log line"}),
		logsSeed(fzCfgModel, fuzzbytes.MapOf{{attrRunID, "../../x"}}, fzRecord{name: eventMetrics, attrs: fuzzbytes.MapOf{{attrStep, 1}, {"loss", 1}}}),
		logsSeed(0, fuzzbytes.MapOf{{attrRunKind, "eval"}, {attrRunKey, "k"}}, fzRecord{name: eventRunEnd}),
		logsSeed(0, fuzzbytes.MapOf{}, fzRecord{name: eventMetrics, attrs: fuzzbytes.MapOf{{attrStep, 1}, {"loss", 1}}}),
		logsSeed(fzCfgRunKey, fuzzbytes.MapOf{}, fzRecord{name: eventEpisode, attrs: fuzzbytes.MapOf{{"prime.work.step", 10}}, body: fuzzbytes.MapOf{{"trajectory", traj}}}),
		logsSeed(0, good, fzRecord{name: eventRunEnd, attrs: fuzzbytes.MapOf{{attrRunStatus, 1}}}, fzRecord{name: eventMetrics, attrs: fuzzbytes.MapOf{{attrStep, 1}, {"loss", 1}}}),
		logsSeed(0, fuzzbytes.MapOf{{attrRunKey, "k"}, {attrRunModel, "m"}, {attrRunConfig, fuzzbytes.MapOf{{"lr", math.Inf(-1)}}}}, fzRecord{name: eventMetrics, attrs: fuzzbytes.MapOf{{attrStep, 1}, {"loss", 1}}}),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzbytes.Reader{B: data}
		cfg := fuzzConfig(r.Byte())
		cfg.Mode, cfg.Directory = ModeOffline, t.TempDir()
		cfg.FinalizeGrace, cfg.FinalizeTimeout = 0, 5*time.Second
		ld := decodeLogs(r)

		h := newHarnessWithHost(t, nil, cfg, componenttest.NewNopHost())
		if err := h.exp.pushLogs(context.Background(), ld); err != nil {
			t.Fatalf("pushLogs: %v", err)
		}
		h.shutdown() // finishes the close-outs the records asked for
		checkOfflineFiles(t, cfg.Directory)
	})
}

// checkOfflineFiles reads back everything offline mode wrote.
func checkOfflineFiles(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case d.Name() == platform.RunFile:
			var run platform.RunRecord
			if err := json.Unmarshal(body, &run); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		case d.Name() == platform.MetricsFile:
			for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
				var post struct {
					RunID   string             `json:"run_id"`
					Metrics map[string]float64 `json:"metrics"`
				}
				if err := json.Unmarshal(line, &post); err != nil || post.RunID == "" || len(post.Metrics) < 2 {
					t.Fatalf("%s: line %q: %v", path, line, err)
				}
			}
		case strings.HasSuffix(d.Name(), ".parquet"):
			if rows := readRows(t, body); len(rows) == 0 {
				t.Fatalf("%s holds no rows", path)
			}
		case strings.HasPrefix(d.Name(), "."):
			// a temporary file of an atomic replace
		default:
			t.Fatalf("unexpected file %s", path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

package primeexporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// resourceKeys are the names a resource can say something about its run
// with (telemetry.md §1), and prime.run.end's, which parseEnd reads.
func resourceKeys() []string {
	return []string{
		attrRunID, attrRunKey, attrServiceInstance, attrRunKind,
		attrRunName, attrRunModel, attrRunEnvironments, attrRunTeamID, attrRunConfig,
		attrMaxSteps, attrBatchSize, attrRolloutsPerExample, attrSeqLen,
		attrWandbProject, attrWandbEntity, attrWandbRunName,
		attrRunStatus, attrRunError,
	}
}

// Config bits of the first fuzz byte: which run defaults the exporter has.
const (
	fzCfgRunID = 1 << iota
	fzCfgRunKey
	fzCfgModel
	fzCfgEnvironments
	fzCfgRunConfig
	fzCfgSizes
	fzCfgStepEvery
)

func fuzzConfig(bits byte) *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.TeamID = "team-1"
	rc := &cfg.Run
	if bits&fzCfgRunID != 0 {
		rc.ID = "cfg-run"
	} else if bits&fzCfgRunKey != 0 {
		rc.Key = "cfg-key" // exclusive with run.id (Validate)
	}
	if bits&fzCfgModel != 0 {
		rc.Model = "cfg/model"
	}
	if bits&fzCfgEnvironments != 0 {
		rc.Environments = []string{"owner/env", "env-1@v2"}
	}
	if bits&fzCfgRunConfig != 0 {
		rc.Config = map[string]any{"trainer": map[string]any{"lr": 1e-6}}
	}
	if bits&fzCfgSizes != 0 {
		rc.MaxSteps, rc.BatchSize, rc.SeqLen = 100, 64, 4096
	}
	if bits&fzCfgStepEvery != 0 {
		cfg.Samples.StepInterval = 1
	}
	return cfg
}

func resourceSeed(cfgBits byte, attrs fzMapOf) []byte {
	e := (&fuzzEncoder{}).byte(cfgBits)
	return e.attrs(resourceKeys(), attrs).b
}

// FuzzResourceToRun feeds arbitrary resource attributes through the
// resource → run mapping: resolveIdentity, buildCreateRequest and parseEnd
// (the same attributes as a prime.run.end record's). None may panic; every
// rejection is an error naming an attribute the resource carries (or the
// model it lacks); and every create body that is accepted marshals to JSON
// the fake platform's strict create route takes with a 201.
func FuzzResourceToRun(f *testing.F) {
	for _, seed := range [][]byte{
		resourceSeed(0, fzMapOf{{attrRunKey, "k"}, {attrRunModel, "Qwen/Qwen3-8B"}}),
		resourceSeed(fzCfgModel|fzCfgEnvironments|fzCfgRunConfig|fzCfgSizes, fzMapOf{{attrServiceInstance, "i-1"}}),
		resourceSeed(fzCfgRunID, fzMapOf{{attrRunKey, "k"}, {attrRunStatus, "failed"}, {attrRunError, "OOM"}}),
		resourceSeed(0, fzMapOf{{attrRunID, "run-1"}, {attrRunKind, "eval"}}),
		resourceSeed(fzCfgRunKey, fzMapOf{
			{attrRunModel, "m"}, {attrRunName, "n"}, {attrRunTeamID, "t"},
			{attrRunEnvironments, []any{"a/b", "c@v1", "@x", "y@"}},
			{attrRunConfig, fzMapOf{{"lr", 1e-6}, {"nested", fzMapOf{{"k", []any{1, "two", true}}}}}},
			{attrMaxSteps, 100}, {attrBatchSize, 64.0}, {attrRolloutsPerExample, 8}, {attrSeqLen, 4096},
			{attrWandbProject, "p"}, {attrWandbEntity, "e"},
		}),
		resourceSeed(0, fzMapOf{{attrRunKey, "k"}, {attrRunModel, "m"}, {attrRunEnvironments, " a , ,b@v "}, {attrRunConfig, `{"a":[1,{"b":null}]}`}}),
		resourceSeed(0, fzMapOf{{attrRunKey, "k"}, {attrRunModel, "m"}, {attrRunConfig, "null"}, {attrMaxSteps, -1}, {attrSeqLen, 2.5}}),
		resourceSeed(0, fzMapOf{{attrRunKey, "k"}, {attrRunModel, "m"}, {attrRunConfig, fzMapOf{{"x", math.NaN()}}}}),
		resourceSeed(0, fzMapOf{{attrRunKey, 7}, {attrRunModel, []any{"m"}}, {attrRunEnvironments, []any{"a", 1}}, {attrRunStatus, true}}),
		resourceSeed(0, fzMapOf{{attrRunID, []byte("run")}, {attrServiceInstance, ""}}),
		resourceSeed(0, fzMapOf{{attrRunKey, "\xff\xfe"}, {attrRunModel, "m\x00"}, {attrRunEnvironments, []any{" "}}, {attrRunStatus, "done"}}),
		resourceSeed(0, fzMapOf{{attrServiceInstance, "i"}, {attrMaxSteps, math.Inf(1)}, {attrBatchSize, 1e300}, {attrRunError, fzMapOf{{"e", 1}}}}),
	} {
		f.Add(seed)
	}
	platform := newCreateChecker(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{b: data}
		cfg := fuzzConfig(r.byte())
		res := pcommon.NewResource()
		r.attrs(res.Attributes(), resourceKeys(), 0)

		checkIdentity(t, res, cfg)
		if kind := runKind(res); kind == "" {
			t.Fatal("runKind is empty")
		}
		checkCreateRequest(t, res, cfg, platform)
		checkEnd(t, res.Attributes())
	})
}

func checkIdentity(t *testing.T, res pcommon.Resource, cfg *Config) {
	t.Helper()
	id, err := resolveIdentity(res, cfg.Run)
	if err != nil {
		checkNamesAnAttribute(t, err, res.Attributes(), attrRunID, attrRunKey, attrServiceInstance)
		return
	}
	if id.value == "" || id.registryKey() == "" || id.String() == "" {
		t.Fatalf("identity %#v is empty", id)
	}
	wantAttach := id.source == attrRunID || id.source == "run.id"
	if id.attach != wantAttach || !slices.Contains([]string{attrRunID, "run.id", attrRunKey, "run.key", attrServiceInstance}, id.source) {
		t.Fatalf("identity %#v: source and attach disagree", id)
	}
	if v, ok := res.Attributes().Get(attrRunID); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" && id.source != attrRunID {
		t.Fatalf("a resource with %s=%q resolved to %v", attrRunID, v.Str(), id)
	}
}

func checkCreateRequest(t *testing.T, res pcommon.Resource, cfg *Config, platform *createChecker) {
	t.Helper()
	req, err := buildCreateRequest(res, cfg)
	if err != nil {
		var leaves []error
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			leaves = j.Unwrap()
		} else {
			leaves = []error{err}
		}
		for _, leaf := range leaves {
			if !strings.Contains(leaf.Error(), attrRunModel) {
				checkNamesAnAttribute(t, leaf, res.Attributes())
			}
		}
		return
	}
	if req.BaseModel == "" || req.Environments == nil {
		t.Fatalf("accepted a create body without a model or with null environments: %+v", req)
	}
	if v, ok := res.Attributes().Get(attrRunModel); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" && req.BaseModel != v.Str() {
		t.Fatalf("base_model %q, but the resource says %q", req.BaseModel, v.Str())
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("the create body does not marshal: %v (%+v)", err, req)
	}
	if status, answer := platform.create(body); status != http.StatusCreated {
		t.Fatalf("the fake platform refused the create body %s: %d %s", body, status, answer)
	}
}

func checkEnd(t *testing.T, attrs pcommon.Map) {
	t.Helper()
	end, err := parseEnd(attrs)
	if !slices.Contains([]string{statusCompleted, statusFailed, statusCancelled, statusCrashed}, end.status) {
		t.Fatalf("parseEnd gave status %q", end.status)
	}
	if err != nil {
		if end.status != statusFailed {
			t.Fatalf("a bad prime.run.end closes the run as %q, not failed", end.status)
		}
		checkNamesAnAttribute(t, err, attrs, attrRunStatus)
	}
	if msg := end.statusMessage(); (end.status == statusCompleted) != (msg == "") {
		t.Fatalf("status %q with message %q", end.status, msg)
	}
}

// checkNamesAnAttribute: the error is clean (no fmt artefacts) and names
// one of names, or when names is empty one of the attributes present.
func checkNamesAnAttribute(t *testing.T, err error, attrs pcommon.Map, names ...string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "%!") {
		t.Fatalf("error %q has a formatting artefact", msg)
	}
	if len(names) == 0 {
		for k := range attrs.All() {
			names = append(names, k)
		}
	}
	for _, n := range names {
		if n != "" && strings.Contains(msg, n) {
			return
		}
	}
	t.Fatalf("error %q names none of %q", msg, names)
}

// createChecker posts create bodies to the fake platform's handler in
// process (no socket), starting a fresh fake now and then so that its
// request log does not grow for the whole fuzz run.
type createChecker struct {
	tb   testing.TB
	srv  *rfttest.Server
	path string
	n    int
}

func newCreateChecker(tb testing.TB) *createChecker {
	c := &createChecker{tb: tb}
	tb.Cleanup(func() {
		if c.srv != nil {
			c.srv.Close()
		}
	})
	return c
}

func (c *createChecker) create(body []byte) (int, string) {
	if c.srv == nil || c.n%1000 == 0 {
		if c.srv != nil {
			c.srv.Close()
		}
		c.srv = rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
		u, err := url.Parse(c.srv.BaseURL())
		if err != nil {
			c.tb.Fatal(err)
		}
		c.path = u.Path + "/rft/external-runs"
	}
	c.n++
	req := httptest.NewRequest(http.MethodPost, c.path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testAPIKey)
	req.Header.Set("X-Api-Key", testAPIKey)
	w := httptest.NewRecorder()
	c.srv.Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String()
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
	attrs fzMapOf
	body  any
}

func logsSeed(cfgBits byte, res fzMapOf, records ...fzRecord) []byte {
	e := (&fuzzEncoder{}).byte(cfgBits).byte(0) // one resource
	e.attrs(resourceKeys(), res).byte(byte(len(records)))
	for _, rec := range records {
		e.key(fzEventNames(), rec.name)
		e.byte(rec.flags)
		e.attrs(fzRecordKeys(), rec.attrs)
		e.value(fzBodyKeys(), rec.body)
	}
	return e.b
}

func decodeLogs(r *fuzzReader) plog.Logs {
	ld := plog.NewLogs()
	for n := int(r.byte()%2) + 1; n > 0; n-- {
		rl := ld.ResourceLogs().AppendEmpty()
		r.attrs(rl.Resource().Attributes(), resourceKeys(), 0)
		sl := rl.ScopeLogs().AppendEmpty()
		for m := int(r.byte() % 12); m > 0 && len(r.b) > 0; m-- {
			lr := sl.LogRecords().AppendEmpty()
			name := r.key(fzEventNames())
			flags := r.byte()
			r.attrs(lr.Attributes(), fzRecordKeys(), 0)
			r.value(lr.Body(), fzBodyKeys(), 0)
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
	good := fzMapOf{{attrRunKey, "k"}, {attrRunModel, "m"}}
	traj := []any{fzMapOf{{"messages", []any{fzMapOf{{"role", "assistant"}, {"content", "hi"}}}}, {"num_input_tokens", 3}}}
	for _, seed := range [][]byte{
		logsSeed(0, good,
			fzRecord{name: eventEpisode, flags: fzRecTimestamp, attrs: fzMapOf{{"prime.work.step", 10}}, body: fzMapOf{{"prompt", "q"}, {"reward", 1}, {"trajectory", traj}}},
			fzRecord{name: eventMetrics, attrs: fzMapOf{{attrStep, 10}, {"loss", 0.5}, {"reward/mean", 1.0}}},
			fzRecord{name: eventRunEnd, attrs: fzMapOf{{attrRunStatus, "failed"}, {attrRunError, "OOM"}}}),
		logsSeed(fzCfgStepEvery, good,
			fzRecord{name: eventEpisode, flags: fzRecNameAttr | fzRecObserved, attrs: fzMapOf{{"prime.work.step", 3.0}, {"prime.episode.trajectory", `[{"messages":[]}]`}}, body: `{"reward": 0.5, "advantage": null}`},
			fzRecord{name: eventEpisode, attrs: fzMapOf{{"prime.work.step", "3"}}, body: fzMapOf{{"trajectory", traj}}},
			fzRecord{name: eventEpisode, attrs: fzMapOf{{"prime.work.step", 3}, {"prime.work.type", "eval"}}},
			fzRecord{name: eventEpisode, attrs: fzMapOf{{"prime.work.step", 3}}, body: fzMapOf{{"reward", fzMapOf{}}, {"trajectory", traj}}},
			fzRecord{name: eventMetrics, attrs: fzMapOf{{attrStep, 2.5}}},
			fzRecord{name: eventMetrics, attrs: fzMapOf{{attrStep, 4}}, body: `{"loss": "x", "kl": 0.1}`},
			fzRecord{name: eventMetrics, attrs: fzMapOf{{attrStep, 4}, {"loss", math.NaN()}, {"code.lineno", 3}}},
			fzRecord{name: "prime.unknown"}, fzRecord{name: "", body: "an ordinary log line"}),
		logsSeed(fzCfgModel, fzMapOf{{attrRunID, "../../x"}}, fzRecord{name: eventMetrics, attrs: fzMapOf{{attrStep, 1}, {"loss", 1}}}),
		logsSeed(0, fzMapOf{{attrRunKind, "eval"}, {attrRunKey, "k"}}, fzRecord{name: eventRunEnd}),
		logsSeed(0, fzMapOf{}, fzRecord{name: eventMetrics, attrs: fzMapOf{{attrStep, 1}, {"loss", 1}}}),
		logsSeed(fzCfgRunKey, fzMapOf{}, fzRecord{name: eventEpisode, attrs: fzMapOf{{"prime.work.step", 10}}, body: fzMapOf{{"trajectory", traj}}}),
		logsSeed(0, good, fzRecord{name: eventRunEnd, attrs: fzMapOf{{attrRunStatus, 1}}}, fzRecord{name: eventMetrics, attrs: fzMapOf{{attrStep, 1}, {"loss", 1}}}),
		logsSeed(0, fzMapOf{{attrRunKey, "k"}, {attrRunModel, "m"}, {attrRunConfig, fzMapOf{{"lr", math.Inf(-1)}}}}, fzRecord{name: eventMetrics, attrs: fzMapOf{{attrStep, 1}, {"loss", 1}}}),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{b: data}
		cfg := fuzzConfig(r.byte())
		cfg.Mode, cfg.Directory = ModeOffline, t.TempDir()
		cfg.FinalizeGrace, cfg.FinalizeTimeout = 0, 5*time.Second
		ld := decodeLogs(r)

		h := startHarness(t, nil, cfg)
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
		case d.Name() == offlineRunFile:
			var run offlineRun
			if err := json.Unmarshal(body, &run); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		case d.Name() == offlineMetricsFn:
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

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// evalConfig takes evaluations online; EVAL_ID attaches them (eval.id).
func evalConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-e2e", EvalID: "${env:EVAL_ID:-}", FinalizeGrace: "2s",
		Queue: queueParams{Enabled: true, NumConsumers: 2, FlushTimeout: "300ms"},
	})
}

// evalManifest is the part of the eval runner's -manifest the tests read.
type evalManifest struct {
	Counts struct {
		Episodes int `json:"episodes"`
		Failed   int `json:"failed"`
	} `json:"counts"`
	Summary  map[string]any `json:"summary"`
	Expected struct {
		AvgError float64 `json:"avg_error"`
	} `json:"expected"`
	Episodes []struct {
		ID string `json:"id"`
		OK bool   `json:"ok"`
	} `json:"episodes"`
}

func evalRunner(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PRIME_EVALRUNNER")
	if bin == "" {
		t.Fatal("PRIME_EVALRUNNER must name the built eval runner: run bash scripts/test.sh")
	}
	return bin
}

// runEval plays an evaluation against the collector and returns its
// manifest.
func runEval(t *testing.T, addr string, args ...string) evalManifest {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.json")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, evalRunner(t), append([]string{"-endpoint", addr, "-manifest", path, "-export-timeout", "60s"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("eval runner failed: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m evalManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// evalPlatform is a fake platform whose hub knows the runner's slugs.
func evalPlatform(t *testing.T) *rfttest.Server {
	t.Helper()
	p := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	t.Cleanup(p.Close)
	p.AddEnvironment(rfttest.HubEnvironment{Owner: "primeintellect", Name: "gsm8k"})
	p.AddEnvironment(rfttest.HubEnvironment{Owner: "primeintellect", Name: "vf-math", Versions: []string{"v3"}})
	return p
}

func startEvalCollector(t *testing.T, p *rfttest.Server, config string, env ...string) (*collector, string) {
	t.Helper()
	otelcol, _ := binaries(t)
	addr := freeAddr(t)
	c := startCollector(t, otelcol, config, append([]string{"PRIME_OTLP_HTTP=" + addr, "PRIME_API_BASE=" + p.BaseURL(), "PRIME_API_KEY=" + e2eKey}, env...)...)
	return c, addr
}

// evalRequests counts the platform's requests by route, e.g.
// "POST /api/v1/evaluations/", with an evaluation's id as {id}.
func evalRequests(p *rfttest.Server, id string) map[string]int {
	out := map[string]int{}
	for _, r := range p.Requests() {
		path := r.Path
		if id != "" {
			path = strings.ReplaceAll(path, id, "{id}")
		}
		out[r.Method+" "+path]++
	}
	return out
}

// checkSamplesOnce asserts the evaluation holds every episode the runner
// sent exactly once, in requests within the contract's 25 MiB.
func checkSamplesOnce(t *testing.T, p *rfttest.Server, ev rfttest.Evaluation, m evalManifest) {
	t.Helper()
	seen := map[string]int{}
	for _, s := range ev.Samples {
		seen[fmt.Sprint(s["sample_id"])]++
	}
	for _, e := range m.Episodes {
		if seen[e.ID] != 1 {
			t.Errorf("episode %s is on the platform %d times, want once", e.ID, seen[e.ID])
		}
	}
	if len(ev.Samples) != len(m.Episodes) {
		t.Errorf("%d samples on the platform, the runner sent %d episodes", len(ev.Samples), len(m.Episodes))
	}
	for _, r := range p.Requests() {
		if strings.HasSuffix(r.Path, "/samples") && len(r.Body) > 25<<20 {
			t.Errorf("a samples request of %d bytes, over 25 MiB", len(r.Body))
		}
	}
}

func onlyEvaluation(t *testing.T, p *rfttest.Server, c *collector) rfttest.Evaluation {
	t.Helper()
	evs := p.Evaluations()
	if len(evs) != 1 {
		fatalf(t, c, "want exactly one evaluation, got %d", len(evs))
	}
	return evs[0]
}

func TestAnEvaluationOfThreeEnvironmentsLandsEverySampleOnceWithItsSummary(t *testing.T) {
	p := evalPlatform(t)
	c, addr := startEvalCollector(t, p, evalConfig(t))
	// ~60 KB episodes: 500 of them take two samples requests.
	m := runEval(t, addr, "-episodes", "500", "-batch", "100", "-episode-bytes", "60000", "-run-key", "eval-e2e",
		"-environments", "primeintellect/gsm8k,primeintellect/vf-math@v3,math-python", "-tags", "nightly,e2e")
	eventually(t, "the evaluation's finalize", func() bool {
		evs := p.Evaluations()
		return len(evs) == 1 && evs[0].Finalized
	}, c.out.String)
	c.stop()

	ev := onlyEvaluation(t, p, c)
	checkSamplesOnce(t, p, ev, m)
	if len(ev.Appends) < 2 {
		t.Errorf("%d samples requests: the test wants the 25 MiB limit to cut at least once", len(ev.Appends))
	}
	envs, _ := ev.Spec["environments"].([]any)
	if len(envs) != 3 {
		t.Fatalf("environments %v, want three resolved ones", ev.Spec["environments"])
	}
	if pinned, _ := envs[1].(map[string]any); pinned["version_id"] != "v3" {
		t.Errorf("the pinned environment is %v, want version_id v3", envs[1])
	}
	if fmt.Sprint(ev.Spec["tags"]) != "[nightly e2e]" || ev.Spec["dataset"] != "gsm8k" || ev.Spec["team_id"] != "team-e2e" {
		t.Errorf("create body %v", ev.Spec)
	}
	routes := map[rfttest.Route]map[string]any{}
	for _, u := range ev.Updates {
		routes[u.Route] = u.Metrics
	}
	for _, route := range []rfttest.Route{rfttest.RouteEvalUpdate, rfttest.RouteEvalFinalize} {
		sum := routes[route]
		if sum == nil {
			t.Fatalf("no summary on %s: %+v", route, ev.Updates)
		}
		if fmt.Sprint(sum["accuracy"]) != fmt.Sprint(m.Summary["accuracy"]) {
			t.Errorf("%s: accuracy %v, the runner's summary event said %v", route, sum["accuracy"], m.Summary["accuracy"])
		}
		if _, ok := sum["avg_reward"]; !ok {
			t.Errorf("%s: no computed avg_reward in %v", route, sum)
		}
		if got, want := fmt.Sprint(sum["avg_error"]), fmt.Sprint(m.Expected.AvgError); got != want {
			t.Errorf("%s: avg_error %v, want %v", route, got, want)
		}
		if nested, _ := sum["avg_metrics"].(map[string]any); nested["judge_latency"] == nil {
			t.Errorf("%s: avg_metrics/judge_latency is not nested as avg_metrics.judge_latency: %v", route, sum["avg_metrics"])
		}
	}
	if ev.Metadata == nil {
		t.Error("the evaluation's config was not sent as its metadata")
	}
	if !strings.Contains(c.out.String(), "Created evaluation") {
		fatalf(t, c, "no 'Created evaluation' line")
	}
	t.Logf("routes: %v", evalRequests(p, ev.ID))
}

func TestAHostedEvaluationIsAttachedThroughEvalIDAndOnlyFinalized(t *testing.T) {
	p := evalPlatform(t)
	p.AddEvaluation("eval-hosted-1")
	c, addr := startEvalCollector(t, p, evalConfig(t), "EVAL_ID=eval-hosted-1")
	m := runEval(t, addr, "-episodes", "60")
	eventually(t, "the attached evaluation's finalize", func() bool {
		ev, ok := p.Evaluation("eval-hosted-1")
		return ok && ev.Finalized
	}, c.out.String)
	c.stop()

	ev := onlyEvaluation(t, p, c)
	checkSamplesOnce(t, p, ev, m)
	reqs := evalRequests(p, ev.ID)
	if reqs["POST /api/v1/evaluations/"] != 0 {
		fatalf(t, c, "an attached evaluation is never created: %v", reqs)
	}
	for _, u := range ev.Updates {
		if u.Metadata != nil {
			t.Errorf("an attached evaluation's config is the launcher's; the exporter sent %v", u.Metadata)
		}
	}
	t.Logf("routes: %v", reqs)
}

func TestAFailedEvaluationIsMarkedFailedWithItsReason(t *testing.T) {
	p := evalPlatform(t)
	c, addr := startEvalCollector(t, p, evalConfig(t))
	m := runEval(t, addr, "-episodes", "40", "-status", "failed", "-error", "judge timed out")
	eventually(t, "the evaluation marked failed", func() bool {
		evs := p.Evaluations()
		return len(evs) == 1 && evs[0].Status == rfttest.StatusFailed
	}, c.out.String)
	c.stop()
	ev := onlyEvaluation(t, p, c)
	checkSamplesOnce(t, p, ev, m)
	if ev.Finalized || ev.ErrorMessage != "judge timed out" {
		t.Fatalf("finalized %v, error %q", ev.Finalized, ev.ErrorMessage)
	}
	if len(ev.Updates) == 0 || ev.Updates[0].Metrics == nil {
		t.Errorf("the summary goes out before the status: %+v", ev.Updates)
	}
	t.Logf("routes: %v", evalRequests(p, ev.ID))
}

func TestASamplesAppendWhoseAnswerIsLostIsCountedNotReplayed(t *testing.T) {
	p := evalPlatform(t)
	// The first append is stored, then its answer is lost.
	p.Inject(rfttest.RouteEvalSamples, rfttest.Fault{Status: 502, AfterProcessing: true})
	c, addr := startEvalCollector(t, p, evalConfig(t))
	m := runEval(t, addr, "-episodes", "150", "-batch", "50", "-batch-delay", "700ms")
	eventually(t, "the evaluation's finalize", func() bool {
		evs := p.Evaluations()
		return len(evs) == 1 && evs[0].Finalized
	}, c.out.String)
	c.stop()
	if n := p.PendingFaults(rfttest.RouteEvalSamples); n != 0 {
		t.Fatal("the fault never fired")
	}
	ev := onlyEvaluation(t, p, c)
	// Stored once by the lost append, never sent again: exactly once here.
	checkSamplesOnce(t, p, ev, m)
	if !strings.Contains(c.out.String(), "lost its answer") || !strings.Contains(c.out.String(), "eval_samples_uncertain") {
		fatalf(t, c, "the uncertain append is not logged with its reason")
	}
	t.Logf("routes: %v, appends %v", evalRequests(p, ev.ID), ev.Appends)
}

func TestAnEnvironmentTheHubCannotResolveFailsTheEvaluationBeforeAnyCreate(t *testing.T) {
	p := evalPlatform(t)
	c, addr := startEvalCollector(t, p, evalConfig(t))
	runEval(t, addr, "-episodes", "10", "-environments", "primeintellect/gsm8k,nobody/no-such-env")
	eventually(t, "the refusal's log line", func() bool {
		return strings.Contains(c.out.String(), "no-such-env")
	}, c.out.String)
	c.stop()
	reqs := evalRequests(p, "")
	if len(p.Evaluations()) != 0 || reqs["POST /api/v1/evaluations/"] != 0 {
		fatalf(t, c, "an evaluation with an unknown environment must not be created: %v", reqs)
	}
	if reqs["GET /api/v1/environmentshub/nobody/no-such-env/@latest"] == 0 {
		fatalf(t, c, "the environment was never looked up: %v", reqs)
	}
	t.Logf("routes: %v", reqs)
}

// evalPersistentConfig keeps the registry and the queue on file_storage.
func evalPersistentConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-e2e", Storage: true, FinalizeGrace: "2s",
		Queue: queueParams{Enabled: true, NumConsumers: 2, FlushTimeout: "300ms"},
	})
}

func TestAKilledCollectorWithStorageNeverCreatesASecondEvaluation(t *testing.T) {
	p := evalPlatform(t)
	storage := "PRIME_STORAGE_DIR=" + t.TempDir()
	first, addr := startEvalCollector(t, p, evalPersistentConfig(t), storage)
	m1 := runEval(t, addr, "-episodes", "80", "-status", "none", "-summary=false", "-run-key", "eval-restart")
	eventually(t, "the first half's samples", func() bool {
		evs := p.Evaluations()
		return len(evs) == 1 && len(evs[0].Samples) == 80
	}, first.out.String)
	first.kill()

	otelcol, _ := binaries(t)
	second := startCollector(t, otelcol, evalPersistentConfig(t), "PRIME_OTLP_HTTP="+addr, "PRIME_API_BASE="+p.BaseURL(), "PRIME_API_KEY="+e2eKey, storage)
	m2 := runEval(t, addr, "-episodes", "40", "-seed", "2", "-run-key", "eval-restart")
	eventually(t, "the evaluation's finalize after the restart", func() bool {
		evs := p.Evaluations()
		return len(evs) >= 1 && evs[0].Finalized
	}, func() string { return first.out.String() + "\n--- after the restart ---\n" + second.out.String() })
	second.stop()

	ev := onlyEvaluation(t, p, second)
	all := m1
	all.Episodes = slices.Concat(m1.Episodes, m2.Episodes)
	checkSamplesOnce(t, p, ev, all)
	if n := evalRequests(p, "")["POST /api/v1/evaluations/"]; n != 1 {
		t.Fatalf("%d creates, want one across the restart", n)
	}
	t.Logf("routes: %v", evalRequests(p, ev.ID))
}

// evalTracesConfig sends native documents to Prime Traces.
func evalTracesConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "${env:PRIME_TEAM}", Traces: true, FinalizeGrace: "2s", LogsOnly: true,
		Queue: queueParams{Enabled: true, FlushTimeout: "300ms"},
	})
}

func TestAnEvaluationsDocumentsGoToPrimeTracesAndItsSummaryCountsThem(t *testing.T) {
	p := evalPlatform(t)
	c, addr := startEvalCollector(t, p, evalTracesConfig(t), "PRIME_TRACES_URL="+p.URL(), "PRIME_TEAM=team-e2e")
	m := runEval(t, addr, "-episodes", "60", "-batch", "30")
	eventually(t, "the evaluation's finalize", func() bool {
		evs := p.Evaluations()
		return len(evs) == 1 && evs[0].Finalized
	}, c.out.String)
	c.stop()
	ev := onlyEvaluation(t, p, c)
	if len(ev.Samples) != 0 {
		fatalf(t, c, "with Prime Traces on, no samples route: %d samples", len(ev.Samples))
	}
	docs := p.TraceDocuments()
	ids := map[string]int{}
	for _, d := range docs {
		ids[fmt.Sprint(d.Doc["id"])]++
		run, _ := d.Doc["run"].(map[string]any)
		if run["type"] != "eval" || run["id"] != ev.ID {
			t.Fatalf("a document carries run %v, want type eval and the evaluation's id %s", run, ev.ID)
		}
	}
	for _, e := range m.Episodes {
		if ids[e.ID] != 1 {
			t.Errorf("episode %s committed %d times, want once", e.ID, ids[e.ID])
		}
	}
	var final map[string]any
	for _, u := range ev.Updates {
		if u.Route == rfttest.RouteEvalFinalize {
			final = u.Metrics
		}
	}
	pr, _ := final["prime_runs"].(map[string]any)
	if fmt.Sprint(pr["traces_episodes_written"]) != fmt.Sprint(len(m.Episodes)) {
		t.Fatalf("finalize summary %v: want prime_runs.traces_episodes_written %d", final, len(m.Episodes))
	}
	t.Logf("routes: %v, trace uploads %d", evalRequests(p, ev.ID), len(p.TraceUploads()))
}

func TestAnEvaluationWhoseAccountHasNoPrimeTracesFallsBackToTheSamplesRoute(t *testing.T) {
	p := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, TracesDisabledTeams: []string{"team-plain"}})
	t.Cleanup(p.Close)
	p.AddEnvironment(rfttest.HubEnvironment{Owner: "primeintellect", Name: "gsm8k"})
	p.AddEnvironment(rfttest.HubEnvironment{Owner: "primeintellect", Name: "vf-math", Versions: []string{"v3"}})
	c, addr := startEvalCollector(t, p, evalTracesConfig(t), "PRIME_TRACES_URL="+p.URL(), "PRIME_TEAM=team-plain")
	m := runEval(t, addr, "-episodes", "60", "-batch", "30")
	eventually(t, "the evaluation's finalize", func() bool {
		evs := p.Evaluations()
		return len(evs) == 1 && evs[0].Finalized
	}, c.out.String)
	c.stop()
	ev := onlyEvaluation(t, p, c)
	checkSamplesOnce(t, p, ev, m)
	if n := len(p.TraceDocuments()); n != 0 {
		t.Fatalf("%d documents committed to a Prime Traces the account does not have", n)
	}
	t.Logf("routes: %v, trace requests %d", evalRequests(p, ev.ID), p.TraceRequests())
}

func TestAnOfflineEvaluationIsWrittenToItsDirectory(t *testing.T) {
	otelcol, _ := binaries(t)
	dir, addr := t.TempDir(), freeAddr(t)
	c := startCollector(t, otelcol, offlineSyncConfig(t), "PRIME_OTLP_HTTP="+addr, "PRIME_OFFLINE_DIR="+dir)
	m := runEval(t, addr, "-episodes", "20")
	var evalDir string
	eventually(t, "evaluation.json recording the end", func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "evaluation.json"))
			if err == nil && strings.Contains(string(raw), `"status": "completed"`) {
				evalDir = filepath.Join(dir, e.Name())
				return true
			}
		}
		return false
	}, c.out.String)
	c.stop()
	if !strings.HasPrefix(filepath.Base(evalDir), "offline-eval-") {
		t.Fatalf("offline evaluation ids are offline-eval-<16 hex>, got %s", filepath.Base(evalDir))
	}
	raw, err := os.ReadFile(filepath.Join(evalDir, "samples.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(raw)), "\n") {
		var s map[string]any
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("samples.jsonl line is not a sample: %v", err)
		}
		ids[fmt.Sprint(s["sample_id"])]++
	}
	for _, e := range m.Episodes {
		if ids[e.ID] != 1 {
			t.Errorf("episode %s is in samples.jsonl %d times", e.ID, ids[e.ID])
		}
	}
	var rec struct {
		Summary map[string]any `json:"summary"`
		Spec    map[string]any `json:"spec"`
	}
	raw, _ = os.ReadFile(filepath.Join(evalDir, "evaluation.json"))
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Summary["avg_reward"] == nil || rec.Spec["dataset"] != "gsm8k" {
		t.Fatalf("evaluation.json: %v\n%s", err, raw)
	}
}

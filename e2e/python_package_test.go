package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The prime_otel tests replay what the python/ package sent through the real
// OpenTelemetry Python SDK 1.44.0 (scripts/record-python-fixture.sh: its
// example trainer, prime-rl's monitor driven as the orchestrator drives it,
// an evaluation, a crash) to the built collector, and check what landed on
// the fake platform against the recorded bytes, read by otlpwire_test.go.

// packageSets are the prime_otel recordings and the example each came from.
var packageSets = map[string]string{
	"prime-otel-trainer": "python/examples/trainer.py",
	"prime-otel-monitor": "python/examples/prime_rl_orchestrator.py",
	"prime-otel-eval":    "python/examples/eval.py",
	"prime-otel-crash":   "python/examples/crash.py",
	"prime-otel-late":    "python/examples/late_collector.py",
}

// A recording is of the package as it is in the tree: every source file of
// prime_otel (and the example) has the SHA-256 it was recorded with, and no
// source file was added since.
func TestThePrimeOtelRecordingsAreOfThePackageInTheTree(t *testing.T) {
	sources, err := filepath.Glob(filepath.Join("..", "python", "src", "prime_otel", "*.py"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("no package sources: %v", err)
	}
	for set, example := range packageSets {
		t.Run(set, func(t *testing.T) {
			recorded := recordedSums(t, filepath.Join(pythonFixtures, set, "source.sha256"))
			for _, src := range sources {
				rel := filepath.ToSlash(strings.TrimPrefix(src, ".."+string(filepath.Separator)))
				if _, ok := recorded[rel]; !ok {
					t.Errorf("%s is not among the sources %s was recorded from: run bash scripts/record-python-fixture.sh %s", rel, set, set)
				}
			}
			if _, ok := recorded[example]; !ok {
				t.Errorf("%s was not recorded from %s", set, example)
			}
			for file, sum := range recorded {
				body, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(file)))
				if err != nil {
					t.Errorf("%s was recorded from %s, which is gone: %v", set, file, err)
					continue
				}
				if got := sha256.Sum256(body); hex.EncodeToString(got[:]) != sum {
					t.Errorf("%s changed since %s was recorded: run bash scripts/record-python-fixture.sh %s", file, set, set)
				}
			}
		})
	}
}

func recordedSums(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s: a line that is not sha256sum's: %q", path, sc.Text())
		}
		sums[file] = sum
	}
	return sums
}

// packageWire is what a set's recorded bytes say the trainer sent.
type packageWire struct {
	resource  []wireKV
	stepRows  map[int64]map[string]float64  // prime.metrics events with prime.step
	stepTimes map[int64]uint64              // the newest event time of each step row
	timeRows  map[uint64]map[string]float64 // prime.metrics events without one, by time
	episodes  map[int64][]map[string]any    // native documents by run.work.step
	ends      []wireRecord
	starts    int // prime.run.start events (init()'s, sent as OTLP/JSON)
}

func readPackageWire(t *testing.T, set string) packageWire {
	t.Helper()
	w := packageWire{stepRows: map[int64]map[string]float64{}, stepTimes: map[int64]uint64{},
		timeRows: map[uint64]map[string]float64{}, episodes: map[int64][]map[string]any{}}
	for _, f := range fixtureFiles(t, filepath.Join(pythonFixtures, set)) {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "-logs.json") {
			w.starts += readStartEvents(t, f, body)
			continue
		}
		if !strings.HasSuffix(f, "-logs.pb") {
			t.Fatalf("%s: prime_otel sends events only", f)
		}
		records, err := decodeWireLogs(body)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range records {
			w.resource = r.Resource
			switch r.EventName {
			case "prime.metrics":
				values := metricsBody(t, f, r.Body)
				if step, ok := wireGet(r.Attrs, "prime.step"); ok {
					s := step.(int64)
					if w.stepRows[s] == nil {
						w.stepRows[s] = map[string]float64{}
					}
					for k, v := range values {
						w.stepRows[s][k] = v
					}
					w.stepTimes[s] = max(w.stepTimes[s], r.Time)
				} else {
					w.timeRows[r.Time] = values
				}
			case "prime.episode":
				text, ok := r.Body.(string)
				if !ok {
					t.Fatalf("%s: an episode body is %T, want the JSON text prime_otel makes at the call", f, r.Body)
				}
				var doc map[string]any
				if err := json.Unmarshal([]byte(text), &doc); err != nil {
					t.Fatalf("%s: an episode body that is not a JSON object: %v", f, err)
				}
				step := int64(doc["run"].(map[string]any)["work"].(map[string]any)["step"].(float64))
				if s, ok := wireGet(r.Attrs, "prime.work.step"); ok && s.(int64) != step {
					t.Fatalf("%s: an episode of step %d carries prime.work.step %v", f, step, s)
				}
				w.episodes[step] = append(w.episodes[step], doc)
			case "prime.run.end":
				w.ends = append(w.ends, r)
			default:
				t.Fatalf("%s: an event %q prime_otel does not send", f, r.EventName)
			}
		}
	}
	return w
}

// readStartEvents reads init()'s request, OTLP/JSON written by the standard
// library: one prime.run.start record and the run's resource.
func readStartEvents(t *testing.T, f string, body []byte) int {
	t.Helper()
	var req struct {
		ResourceLogs []struct {
			Resource struct {
				Attributes []struct {
					Key string `json:"key"`
				} `json:"attributes"`
			} `json:"resource"`
			ScopeLogs []struct {
				LogRecords []struct {
					EventName string `json:"eventName"`
				} `json:"logRecords"`
			} `json:"scopeLogs"`
		} `json:"resourceLogs"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("%s: not OTLP/JSON: %v", f, err)
	}
	n := 0
	for _, rl := range req.ResourceLogs {
		if !slices.ContainsFunc(rl.Resource.Attributes, func(a struct {
			Key string `json:"key"`
		}) bool {
			return a.Key == "prime.run.key" || a.Key == "prime.run.id"
		}) {
			t.Fatalf("%s: a start event whose resource names no run", f)
		}
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				if lr.EventName != "prime.run.start" {
					t.Fatalf("%s: a JSON request holds %q, want only prime.run.start", f, lr.EventName)
				}
				n++
			}
		}
	}
	return n
}

// metricsBody reads a prime.metrics body: the JSON text of the row's values
// (what prime_otel sends since issue 45), or a map (what it sent before,
// through the SDK's encoder). Either way every value is a number.
func metricsBody(t *testing.T, f string, body any) map[string]float64 {
	t.Helper()
	values := map[string]float64{}
	switch b := body.(type) {
	case string:
		var row map[string]any
		if err := json.Unmarshal([]byte(b), &row); err != nil {
			t.Fatalf("%s: a metrics body that is not a JSON object: %v", f, err)
		}
		for k, v := range row {
			n, ok := v.(float64)
			if !ok {
				t.Fatalf("%s: metric %s was sent as %T, not a number", f, k, v)
			}
			values[k] = n
		}
	case []wireKV:
		for _, kv := range b {
			values[kv.Key] = wireNumber(t, f, kv)
		}
	default:
		t.Fatalf("%s: a metrics body is %T, want JSON text or a map", f, body)
	}
	return values
}

// wireNumber is a metric value as the package must send it: an int or a
// double, never a string (a numpy value the SDK would have stringified).
func wireNumber(t *testing.T, f string, kv wireKV) float64 {
	switch v := kv.Value.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	}
	t.Fatalf("%s: metric %s was sent as %T, not a number", f, kv.Key, kv.Value)
	return 0
}

// replayPackage posts a set to a fresh collector and fake platform and waits
// until done says the platform has what it needs.
func replayPackage(t *testing.T, set string, platform *rfttest.Server, done func() bool) *collector {
	t.Helper()
	otelcol, _ := binaries(t)
	addr := freeAddr(t)
	_, metricsPort, _ := strings.Cut(freeAddr(t), ":")
	c := startCollector(t, otelcol, replayConfig(t), "PRIME_OTLP_HTTP="+addr, "PRIME_METRICS_PORT="+metricsPort,
		"PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+e2eKey)
	for _, f := range fixtureFiles(t, filepath.Join(pythonFixtures, set)) {
		postFixture(t, c, f)
	}
	eventually(t, set+" landing", done, c.out.String)
	return c
}

func trainingPlatform(t *testing.T) *rfttest.Server {
	p := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	t.Cleanup(p.Close)
	return p
}

// replayTrainingRun replays a training set until its one run is closed
// out, and gives what the trainer sent and what landed.
func replayTrainingRun(t *testing.T, set string) (packageWire, *rfttest.Server, *collector, rfttest.Run) {
	t.Helper()
	w := readPackageWire(t, set)
	p := trainingPlatform(t)
	c := replayPackage(t, set, p, func() bool {
		runs := p.Runs()
		return len(runs) > 1 || len(runs) == 1 && runs[0].Status != rfttest.StatusRunning
	})
	c.stop()
	runs := p.Runs()
	if len(runs) != 1 {
		fatalf(t, c, "%d runs on the platform, want 1", len(runs))
	}
	return w, p, c, runs[0]
}

// checkMetricRows: every step row and every time-keyed row the trainer
// sent, and nothing else; and every post of a step carried the newest time
// of the events that made it as its _timestamp.
func checkMetricRows(t *testing.T, c *collector, p *rfttest.Server, run rfttest.Run, w packageWire) {
	t.Helper()
	if len(run.Metrics) != len(w.stepRows) {
		fatalf(t, c, "%d step rows landed, the trainer sent %d", len(run.Metrics), len(w.stepRows))
	}
	for step, want := range w.stepRows {
		if got := run.Metrics[step]; !sameRow(got, want) {
			fatalf(t, c, "step %d landed as %v, want %v", step, got, want)
		}
	}
	if len(run.TimeMetrics) != len(w.timeRows) {
		fatalf(t, c, "%d time-keyed rows landed, the trainer sent %d", len(run.TimeMetrics), len(w.timeRows))
	}
	for ns, want := range w.timeRows {
		found := false
		for ts, got := range run.TimeMetrics {
			found = found || math.Abs(ts-seconds(ns)) <= 1e-6 && sameRow(got, want)
		}
		if !found {
			fatalf(t, c, "no time-keyed row %v at %v among %v", want, seconds(ns), run.TimeMetrics)
		}
	}
	for _, r := range p.Requests() {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.Path, "/rft/metrics") {
			continue
		}
		var post struct {
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(r.Body, &post); err != nil {
			fatalf(t, c, "a metrics post that is not JSON numbers: %s", r.Body)
		}
		step, stepped := post.Metrics["step"]
		ts, stamped := post.Metrics["_timestamp"]
		if !stamped {
			fatalf(t, c, "a metrics post without _timestamp: %s", r.Body)
		}
		if stepped && math.Abs(ts-seconds(w.stepTimes[int64(step)])) > 1e-6 {
			fatalf(t, c, "step %v was posted with _timestamp %v, want its newest event's time %v", step, ts, seconds(w.stepTimes[int64(step)]))
		}
	}
}

func seconds(ns uint64) float64 { return float64(ns) / 1e9 }

func sameRow(got, want map[string]float64) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			return false
		}
	}
	return true
}

// checkEpisodeRows: every episode of a cadence step is one row carrying its
// document's reward, problem and environment.
func checkEpisodeRows(t *testing.T, c *collector, run rfttest.Run, w packageWire) int {
	t.Helper()
	rows := map[int64][]tableRow{}
	for _, o := range run.Objects {
		if !o.Confirmed {
			fatalf(t, c, "object %s was never confirmed", o.Key)
		}
		rows[o.Step] = append(rows[o.Step], readTableRows(t, o.Body)...)
	}
	n := 0
	for step, docs := range w.episodes {
		if step%replayStepInterval != 0 {
			if len(rows[step]) != 0 {
				fatalf(t, c, "off-cadence step %d has %d rows", step, len(rows[step]))
			}
			continue
		}
		if len(rows[step]) != len(docs) {
			fatalf(t, c, "step %d has %d rows, the trainer sent %d episodes", step, len(rows[step]), len(docs))
		}
		for _, doc := range docs {
			trace := doc["traces"].([]any)[0].(map[string]any)
			idx := trace["task"].(map[string]any)["data"].(map[string]any)["idx"].(float64)
			reward := trace["rewards"].(map[string]any)["correct_answer"].(map[string]any)["score"].(float64)
			i := slices.IndexFunc(rows[step], func(r tableRow) bool { return r["problem_id"] == int64(idx) })
			if i < 0 {
				fatalf(t, c, "step %d: no row of problem %v", step, idx)
			}
			r := rows[step][i]
			if r["reward"] != reward || r["env_name"] != "primeintellect/gsm8k" || r["run_id"] != run.ID {
				fatalf(t, c, "step %d problem %v landed as %v", step, idx, r)
			}
			n++
		}
	}
	return n
}

func TestThePrimeRunsTrainerOnPrimeOtelLandsWholeWithItsTimeKeyedRows(t *testing.T) {
	t.Parallel()
	w, p, c, run := replayTrainingRun(t, "prime-otel-trainer")
	if run.Status != rfttest.StatusCompleted || len(w.ends) != 1 || w.starts != 1 {
		fatalf(t, c, "run %s ended %s after %d start and %d end events, want completed after 1 and 1", run.ID, run.Status, w.starts, len(w.ends))
	}
	spec := fmt.Sprint(run.Spec)
	for _, want := range []string{"base_model:Qwen/Qwen3-0.6B", "max_steps:20", "batch_size:4", "rollouts_per_example:4", "seq_len:2048", "name:gsm8k-demo", "id:gsm8k", "run_config:map[lr:0.000001 seed:7]"} {
		if !strings.Contains(spec, want) {
			fatalf(t, c, "the create lacks %s: %s", want, spec)
		}
	}
	if len(w.stepRows) != 20 || len(w.timeRows) != 20 {
		t.Fatalf("the recording holds %d step rows and %d time rows, want 20 and 20", len(w.stepRows), len(w.timeRows))
	}
	checkMetricRows(t, c, p, run, w)
	if n := checkEpisodeRows(t, c, run, w); n != 16 {
		fatalf(t, c, "%d rows, want 16 (4 episodes at each of steps 5, 10, 15, 20)", n)
	}
}

func TestPrimeRlsOrchestratorThroughOtelMonitorLandsWholeNumpyValuesIncluded(t *testing.T) {
	t.Parallel()
	w, p, c, run := replayTrainingRun(t, "prime-otel-monitor")
	if run.Status != rfttest.StatusCompleted {
		fatalf(t, c, "run ended %s, want completed", run.Status)
	}
	if len(w.stepRows) != 30 || len(w.timeRows) != 30 {
		t.Fatalf("the recording holds %d step rows and %d time rows, want 30 and 30", len(w.stepRows), len(w.timeRows))
	}
	checkMetricRows(t, c, p, run, w)
	// Only the train "effective" cohort was sent: 4 episodes a step.
	for step, docs := range w.episodes {
		if len(docs) != 4 {
			t.Fatalf("step %d: the monitor sent %d episodes, want the 4 of the effective train cohort", step, len(docs))
		}
	}
	if n := checkEpisodeRows(t, c, run, w); n != 24 {
		fatalf(t, c, "%d rows, want 24 (4 at each of steps 5 … 30)", n)
	}
	// The np.float32 inside every document landed, as a number, in the metrics column.
	for _, o := range run.Objects {
		for _, r := range readTableRows(t, o.Body) {
			if m, _ := r["metrics"].(string); !strings.Contains(m, `"judge_score":0.25`) {
				fatalf(t, c, "a row's metrics lack the np.float32 judge_score: %v", r["metrics"])
			}
		}
	}
}

func TestAPrimeOtelEvaluationLandsItsSamplesAndSummary(t *testing.T) {
	t.Parallel()
	w := readPackageWire(t, "prime-otel-eval")
	p := trainingPlatform(t)
	p.AddEnvironment(rfttest.HubEnvironment{Owner: "primeintellect", Name: "gsm8k"})
	c := replayPackage(t, "prime-otel-eval", p, func() bool {
		evals := p.Evaluations()
		return len(evals) == 1 && evals[0].Status != rfttest.StatusRunning
	})
	c.stop()
	e := p.Evaluations()[0]
	if e.Status != rfttest.StatusCompleted || len(e.Samples) != len(w.episodes[0]) || len(e.Samples) != 12 {
		fatalf(t, c, "evaluation %s: status %s, %d samples, want completed with 12", e.ID, e.Status, len(e.Samples))
	}
	sent := w.timeRows
	if len(sent) != 1 {
		t.Fatalf("the recording holds %d summary events, want 1", len(sent))
	}
	for _, values := range sent {
		summary := fmt.Sprint(e.Summary)
		for _, want := range []string{fmt.Sprintf("avg_reward:%v", values["avg_reward"]), "avg_metrics:map[num_turns:1]"} {
			if !strings.Contains(summary, want) {
				fatalf(t, c, "the summary lacks %s: %s", want, summary)
			}
		}
	}
	if got := fmt.Sprint(e.Spec["tags"]); got != "[nightly]" {
		fatalf(t, c, "the evaluation's tags are %s, want [nightly]", got)
	}
}

// The trainer ran 30 s with no collector (scripts/record-python-fixture.sh
// starts the recorder late): what it logged meanwhile waited in prime_otel's
// queue and reached the collector once it came, every step of it.
func TestATrainerThatStartedBeforeItsCollectorLandsWhole(t *testing.T) {
	t.Parallel()
	w, p, c, run := replayTrainingRun(t, "prime-otel-late")
	if run.Status != rfttest.StatusCompleted || len(w.ends) != 1 {
		fatalf(t, c, "run %s ended %s after %d end events, want completed after 1", run.ID, run.Status, len(w.ends))
	}
	if len(w.stepRows) != 20 {
		t.Fatalf("the recording holds %d step rows, want the 20 logged before the collector came", len(w.stepRows))
	}
	checkMetricRows(t, c, p, run, w)
	if n := checkEpisodeRows(t, c, run, w); n != 16 {
		fatalf(t, c, "%d rows, want 16 (4 episodes at each of steps 5, 10, 15, 20)", n)
	}
}

func TestAPrimeOtelTrainerThatDiesWithoutFinishingIsClosedOutAsCrashed(t *testing.T) {
	t.Parallel()
	w, p, c, run := replayTrainingRun(t, "prime-otel-crash")
	const reason = "crashed: process exited without finishing the run"
	if run.Status != rfttest.StatusFailed || run.ErrorMessage != reason {
		fatalf(t, c, "run ended %s (%q), want failed (%q)", run.Status, run.ErrorMessage, reason)
	}
	if len(w.stepRows) != 5 {
		t.Fatalf("the recording holds %d step rows, want the 5 before the crash", len(w.stepRows))
	}
	checkMetricRows(t, c, p, run, w)
}

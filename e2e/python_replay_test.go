package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The replay tests POST request bodies recorded from the real OpenTelemetry
// Python SDK 1.44.0 (testdata/python-sdk-1.44/, see its README) to the built
// collector, in the order the SDK sent them, and check what landed on the
// fake platform against what the bytes on the wire say (read by
// otlpwire_test.go, not by the collector's pdata): every metric value of
// every step, every episode of a cadence step as a Parquet row with its
// columns, the close-out, and the collector's own counters of what it
// rejected, coerced and skipped.

const pythonFixtures = "testdata/python-sdk-1.44"

// replayStepInterval suits every set: steps 0, 5, 10, 15 and 20 carry rows.
const replayStepInterval = 5

// replayConfig is a plain online collector with a short finalize_grace (the
// replay sends everything at once) and its own metrics served for the
// counters.
func replayConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-e2e", FinalizeGrace: "2s", StepInterval: "5", SelfMetrics: true,
		Queue: queueParams{FlushTimeout: "200ms"},
	})
}

const (
	counterRejected = "otelcol_exporter_prime_records_rejected"
	counterSkipped  = "otelcol_exporter_prime_records_skipped"
	counterCoerced  = "otelcol_exporter_prime_records_coerced"
)

func TestAPythonRunWithChatPromptListsLandsWholeWithEachPromptAsItsJSONText(t *testing.T) {
	t.Parallel()
	r := replayPythonSet(t, "prompt-list")
	r.checkEverythingLanded(t)
	for step, rows := range r.rows {
		for _, row := range rows {
			p, _ := row["prompt"].(string)
			var msgs []map[string]any
			if err := json.Unmarshal([]byte(p), &msgs); err != nil || len(msgs) != 2 || msgs[1]["role"] != "user" {
				fatalf(t, r.c, "step %d: prompt %q is not the JSON text of the chat list", step, p)
			}
		}
	}
	rows := r.rowCount()
	if got := r.counters.sum(counterCoerced, "signal", "logs", "reason", "json_text"); got < float64(rows) || got > float64(r.want.episodes) {
		fatalf(t, r.c, "coerced{logs,json_text} = %v, want between the %d rows and the %d episodes with a list prompt; counters %v",
			got, rows, r.want.episodes, r.counters.byReason(counterCoerced))
	}
}

func TestAPythonRunWithBoolAndIntMetricValuesLandsWholeWithTheBoolsAsOneAndZero(t *testing.T) {
	t.Parallel()
	r := replayPythonSet(t, "prompt-str-extra")
	r.checkEverythingLanded(t)
	for step, want := range map[int64]float64{0: 1, 1: 1, 2: 0, 19: 0} {
		if got, ok := r.run.Metrics[step]["is_warmup"]; !ok || got != want {
			fatalf(t, r.c, "step %d: is_warmup = %v (present %v), want %v", step, got, ok, want)
		}
	}
	if got := r.run.Metrics[7]["reward/max"]; got != 1 {
		fatalf(t, r.c, "step 7: reward/max = %v, want 1", got)
	}
	if got := r.counters.sum(counterCoerced, "signal", "logs", "reason", "bool"); got != 20 {
		fatalf(t, r.c, "coerced{logs,bool} = %v, want 20 (one is_warmup per step); counters %v", got, r.counters.byReason(counterCoerced))
	}
}

func TestNumpyValuesLandWhereTheSDKKeptTheirStepAndThePointWhoseStepItDroppedInTheRowOfItsTime(t *testing.T) {
	t.Parallel()
	r := replayPythonSet(t, "numpy-probe")
	r.checkEverythingLanded(t)
	// prime.work.step=np.int64(10) reached the wire as the string "10".
	tags := []string{}
	for _, row := range r.rows[10] {
		tags = append(tags, fmt.Sprint(row["tag"]))
	}
	slices.Sort(tags)
	if want := []string{"attr-mixed-list", "mixed-list-attr", "np-float64-reward", "np-int64-step"}; !slices.Equal(tags, want) {
		fatalf(t, r.c, "step 10's rows are tagged %v, want %v", tags, want)
	}
	// m/f32=np.float32(0.5) reached the wire as "0.5"; prime.step=np.int64(20) as "20".
	for _, m := range []struct {
		step int64
		name string
		want float64
	}{{10, "m/f32", 0.5}, {10, "m/f64", 0.5}, {20, "m/py", 0.5}, {20, "loss", 0.25}, {0, "loss", 1}} {
		if got, ok := r.run.Metrics[m.step][m.name]; !ok || got != m.want {
			fatalf(t, r.c, "step %d: %s = %v (present %v), want %v", m.step, m.name, got, ok, m.want)
		}
	}
	// The loss point whose np.int64 prime.step the SDK dropped has no step
	// at all: it is the row of its time, as log_metrics(step=None) would be.
	if len(r.want.timeRows) != 1 {
		fatalf(t, r.c, "the wire has %d times with points without a step, want 1: %v", len(r.want.timeRows), r.want.timeRows)
	}
	for at, row := range r.want.timeRows {
		if _, ok := row["loss"]; !ok || !maps.Equal(r.run.TimeMetrics[at], row) {
			fatalf(t, r.c, "time-keyed rows %v, want the loss point's row %v at %v", r.run.TimeMetrics, row, at)
		}
	}
	if got := r.counters.sum(counterRejected, "signal", "metrics", "reason", "no_step"); got != 0 {
		fatalf(t, r.c, "rejected{metrics,no_step} = %v, want 0", got)
	}
	if got := r.counters.sum(counterCoerced, "signal", "logs", "reason", "number_string"); got != 3 {
		fatalf(t, r.c, `coerced{logs,number_string} = %v, want 3 (prime.work.step "10", prime.step "20", m/f32 "0.5"); counters %v`,
			got, r.counters.byReason(counterCoerced))
	}
}

func TestTheReadmePythonTrainerRunLandsWhole(t *testing.T) {
	t.Parallel()
	r := replayPythonSet(t, "readme-fixed")
	r.checkEverythingLanded(t)
	if len(r.run.Metrics) != 20 {
		fatalf(t, r.c, "%d steps of metrics, want 20", len(r.run.Metrics))
	}
}

func TestTheDocsPythonTrainerRecordingLandsWholeAndNothingIsRefusedAfterItsCloseOut(t *testing.T) {
	t.Parallel()
	r := replayPythonSet(t, "docs-trainer")
	r.checkEverythingLanded(t)
	if got := r.counters.sum(counterRejected, "reason", "run_closed"); got != 0 {
		fatalf(t, r.c, "rejected{run_closed} = %v: the trainer's last data reached the collector after the close-out", got)
	}
	if strings.Contains(r.log, "run_closed") {
		fatalf(t, r.c, "the collector logged a run_closed rejection")
	}
	if len(r.run.Metrics) != 20 || r.rowCount() == 0 {
		fatalf(t, r.c, "%d steps of metrics and %d rows, want 20 steps and some rows", len(r.run.Metrics), r.rowCount())
	}
}

// replay is what one fixture set sent and what landed.
type replay struct {
	c        *collector
	want     replayWant
	run      rfttest.Run
	rows     map[int64][]tableRow // by step
	counters counters
	log      string
}

// replayPythonSet replays every file of a set to a fresh collector and
// platform, waits for the run's close-out, and collects what landed.
func replayPythonSet(t *testing.T, set string) *replay {
	t.Helper()
	otelcol, _ := binaries(t)
	files := fixtureFiles(t, filepath.Join(pythonFixtures, set))
	want := expectFromWire(t, files)

	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	t.Cleanup(platform.Close)
	addr := freeAddr(t)
	_, metricsPort, _ := strings.Cut(freeAddr(t), ":")
	c := startCollector(t, otelcol, replayConfig(t), "PRIME_OTLP_HTTP="+addr, "PRIME_METRICS_PORT="+metricsPort,
		"PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+e2eKey)
	for _, f := range files {
		postFixture(t, c, f)
	}
	eventually(t, "the run's close-out", func() bool {
		runs := platform.Runs()
		return len(runs) > 1 || len(runs) == 1 && runs[0].Status != rfttest.StatusRunning
	}, c.out.String)
	r := &replay{c: c, want: want, counters: scrapeCounters(t, c, metricsPort)}
	c.stop()
	r.log = c.out.String()

	runs := platform.Runs()
	if len(runs) != 1 {
		fatalf(t, c, "%d runs on the platform, want one for prime.run.key %s", len(runs), want.runKey)
	}
	r.run = runs[0]
	r.rows = map[int64][]tableRow{}
	for _, o := range r.run.Objects {
		if !o.Confirmed {
			fatalf(t, c, "object %s was uploaded but never confirmed", o.Key)
		}
		for _, row := range readTableRows(t, o.Body) {
			if row["run_id"] != r.run.ID || row["step"] != o.Step {
				fatalf(t, c, "an object of step %d holds a row of run %v step %v", o.Step, row["run_id"], row["step"])
			}
			r.rows[o.Step] = append(r.rows[o.Step], row)
		}
	}
	return r
}

func (r *replay) rowCount() int {
	n := 0
	for _, rows := range r.rows {
		n += len(rows)
	}
	return n
}

// checkEverythingLanded asserts what every set must show: the one run,
// completed; every metric value of every step and nothing else; every
// cadence episode as one row with its columns; and counters that account
// for everything else (the wire's missing steps rejected, coercions and
// off-cadence episodes counted, nothing else rejected or skipped).
func (r *replay) checkEverythingLanded(t *testing.T) {
	t.Helper()
	c, run, want := r.c, r.run, r.want
	if run.Status != rfttest.StatusCompleted || !run.Finalized {
		fatalf(t, c, "run %s is %s (finalized %v), want completed by the trainer's prime.run.end", run.ID, run.Status, run.Finalized)
	}
	if got := run.Spec["base_model"]; got != want.model {
		fatalf(t, c, "base_model = %v, want %s", got, want.model)
	}
	if !logHasLine(r.log, "Created run", want.runKey) {
		fatalf(t, c, "no \"Created run\" line names the run key %s", want.runKey)
	}
	if strings.Contains(r.log, e2eKey) {
		t.Fatal("the API key appears in the collector's output")
	}

	// Metrics: exactly the steps and values on the wire.
	if len(run.Metrics) != len(want.metrics) {
		fatalf(t, c, "metrics for %d steps %v, want %d %v", len(run.Metrics), slices.Sorted(maps.Keys(run.Metrics)), len(want.metrics), slices.Sorted(maps.Keys(want.metrics)))
	}
	for step, values := range want.metrics {
		got := run.Metrics[step]
		for name, v := range values {
			if g, ok := got[name]; !ok || g != v {
				fatalf(t, c, "step %d: %s = %v (present %v), want %v; the step has %v", step, name, g, ok, v, got)
			}
		}
		if len(got) != len(values) {
			fatalf(t, c, "step %d has %v, want exactly %v", step, got, values)
		}
	}

	// Episodes: one row per cadence episode, matched by created_at.
	if steps, wantSteps := slices.Sorted(maps.Keys(r.rows)), slices.Sorted(maps.Keys(want.rows)); !slices.Equal(steps, wantSteps) {
		fatalf(t, c, "rows for steps %v, want %v", steps, wantSteps)
	}
	for step, wantRows := range want.rows {
		rows := r.rows[step]
		if len(rows) != len(wantRows) {
			fatalf(t, c, "step %d has %d rows, want %d", step, len(rows), len(wantRows))
		}
		ids := map[int64]bool{}
		byTime := map[int64]tableRow{}
		for _, row := range rows {
			id, _ := row["sample_id"].(int64)
			if ids[id] {
				fatalf(t, c, "step %d: sample_id %d twice", step, id)
			}
			ids[id] = true
			byTime[row["created_at"].(int64)] = row
		}
		for _, w := range wantRows {
			row, ok := byTime[w.createdAt]
			if !ok {
				fatalf(t, c, "step %d: no row has created_at %d (the episode's record timestamp)", step, w.createdAt)
			}
			if err := w.matches(row); err != nil {
				fatalf(t, c, "step %d, the episode of created_at %d: %v\nrow: %v", step, w.createdAt, err, row)
			}
		}
	}

	// Time-keyed rows: exactly the points with no step, by their time.
	if !maps.EqualFunc(run.TimeMetrics, want.timeRows, maps.Equal) {
		fatalf(t, c, "time-keyed rows %v, want %v", run.TimeMetrics, want.timeRows)
	}

	// Counters: the only rejections are the points with neither a step nor
	// a time on the wire;
	// the only skips are the off-cadence episodes; coercions as counted.
	rejected := r.counters.byReason(counterRejected)
	wantRejected := map[string]float64{}
	if len(want.noStep) > 0 {
		wantRejected["metrics/no_step"] = float64(len(want.noStep))
	}
	if !maps.Equal(rejected, wantRejected) {
		fatalf(t, c, "rejected %v, want %v", rejected, wantRejected)
	}
	skipped := r.counters.byReason(counterSkipped)
	wantSkipped := map[string]float64{}
	if want.offCadence > 0 {
		wantSkipped["logs/off_cadence"] = float64(want.offCadence)
	}
	if !maps.Equal(skipped, wantSkipped) {
		fatalf(t, c, "skipped %v, want %v", skipped, wantSkipped)
	}
	coerced := r.counters.byReason(counterCoerced)
	for key, n := range want.coerced {
		if coerced[key] != n {
			fatalf(t, c, "coerced[%s] = %v, want %v (counters %v)", key, coerced[key], n, coerced)
		}
	}
	for key := range coerced {
		if _, ok := want.coerced[key]; !ok && key != "logs/json_text" {
			fatalf(t, c, "coerced[%s] = %v, but nothing on the wire needs it", key, coerced[key])
		}
	}
	if want.jsonTexts == 0 && coerced["logs/json_text"] != 0 {
		fatalf(t, c, "coerced[logs/json_text] = %v, but every prompt, answer and tag is a string", coerced["logs/json_text"])
	}
	values := 0
	for _, m := range run.Metrics {
		values += len(m)
	}
	t.Logf("run %s (%s): %d steps, %d metric values; %d episodes sent, %d rows in %d objects; rejected %v, skipped %v, coerced %v",
		want.runKey, run.Status, len(run.Metrics), values, want.episodes, r.rowCount(), len(run.Objects), rejected, skipped, coerced)
}

// replayWant is what a set's wire bytes say must land.
type replayWant struct {
	runKey, model string
	metrics       map[int64]map[string]float64
	timeRows      map[float64]map[string]float64 // points with no step, by their time in unix seconds
	noStep        []string                       // metrics of points with neither a step nor a time
	rows          map[int64][]wantRow
	episodes      int                // prime.episode records
	offCadence    int                // of them, off the cadence
	jsonTexts     int                // non-string prompt, answer or tag values
	coerced       map[string]float64 // "signal/reason" → values: number_string, bool
}

// wantRow is one episode's expected row.
type wantRow struct {
	createdAt int64
	cols      map[string]any // column → string, int64, float64, nil, jsonText, or sameAsSampleID
}

// jsonText: the column holds JSON text equal, as JSON, to the value.
type jsonText struct{ v any }

// sameAsSampleID: problem_id defaults to the row's sample_id.
type sameAsSampleID struct{}

func (w wantRow) matches(row tableRow) error {
	for _, col := range slices.Sorted(maps.Keys(w.cols)) {
		want, got := w.cols[col], row[col]
		switch want := want.(type) {
		case jsonText:
			s, ok := got.(string)
			if !ok {
				return fmt.Errorf("%s is %v, want the JSON text of %v", col, got, want.v)
			}
			var v any
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				return fmt.Errorf("%s is %q, not JSON: %v", col, s, err)
			}
			if !reflect.DeepEqual(v, normJSON(want.v)) {
				wb, _ := json.Marshal(want.v)
				return fmt.Errorf("%s is %s, want (as JSON) %s", col, s, wb)
			}
		case sameAsSampleID:
			if got != row["sample_id"] {
				return fmt.Errorf("problem_id is %v, want the sample_id %v", got, row["sample_id"])
			}
		default:
			if got != want {
				return fmt.Errorf("%s is %#v, want %#v", col, got, want)
			}
		}
	}
	return nil
}

// normJSON gives v as encoding/json would decode its JSON.
func normJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

var fixtureName = regexp.MustCompile(`^(\d{3})-(logs|metrics)\.(pb|json)$`)

// fixtureFiles lists a set's request bodies in send order, checking the
// numbering has no gap.
func fixtureFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the fixture set %s cannot be read: %v", dir, err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".pb") || strings.HasSuffix(e.Name(), ".json") {
			m := fixtureName.FindStringSubmatch(e.Name())
			if m == nil {
				t.Fatalf("%s/%s is not named NNN-logs.pb, NNN-logs.json or NNN-metrics.pb", dir, e.Name())
			}
			if n, _ := strconv.Atoi(m[1]); n != len(files)+1 {
				t.Fatalf("%s/%s: the files are not numbered 001, 002, … without a gap", dir, e.Name())
			}
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) == 0 {
		t.Fatalf("the fixture set %s has no NNN-logs.pb or NNN-metrics.pb files", dir)
	}
	return files
}

// postFixture sends one recorded body to the collector's OTLP/HTTP receiver.
func postFixture(t *testing.T, c *collector, path string) {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	route, contentType := "/v1/metrics", "application/x-protobuf"
	if strings.Contains(filepath.Base(path), "-logs.") {
		route = "/v1/logs"
	}
	if strings.HasSuffix(path, ".json") { // prime_otel's start event, sent as OTLP/JSON
		contentType = "application/json"
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+c.addr+route, contentType, bytes.NewReader(body))
	if err != nil {
		fatalf(t, c, "POST %s (%s): %v", route, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fatalf(t, c, "POST %s (%s): %s", route, path, resp.Status)
	}
}

// expectFromWire reads a set's bodies and works out, from the contract
// (docs/telemetry.md) alone, what must land. It fails on anything the sets
// are not expected to hold (another run, folded metric keys, native episode
// documents), rather than guessing.
func expectFromWire(t *testing.T, files []string) replayWant {
	t.Helper()
	w := replayWant{metrics: map[int64]map[string]float64{}, timeRows: map[float64]map[string]float64{},
		rows: map[int64][]wantRow{}, coerced: map[string]float64{}}
	identity := func(res []wireKV) {
		key, _ := wireGet(res, "prime.run.key")
		model, _ := wireGet(res, "prime.run.model")
		ks, _ := key.(string)
		ms, _ := model.(string)
		if ks == "" || (w.runKey != "" && ks != w.runKey) {
			t.Fatalf("a fixture set holds one run: prime.run.key %v after %q", key, w.runKey)
		}
		w.runKey, w.model = ks, ms
	}
	setMetric := func(step int64, name string, v float64) {
		if w.metrics[step] == nil {
			w.metrics[step] = map[string]float64{}
		}
		if old, ok := w.metrics[step][name]; ok && old != v {
			t.Fatalf("step %d: %s is sent as %v and as %v; the test cannot tell which lands", step, name, old, v)
		}
		w.metrics[step][name] = v
	}
	ended := false
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "-metrics.pb") {
			points, err := decodeWireMetrics(body)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, p := range points {
				identity(p.Resource)
				if p.Metric == "step" || len(p.Attrs) > 1 || len(p.Attrs) == 1 && p.Attrs[0].Key != "prime.step" {
					t.Fatalf("%s: metric %s %v: the replay test reads bare metrics with prime.step only", f, p.Metric, p.Attrs)
				}
				sv, ok := wireGet(p.Attrs, "prime.step")
				switch {
				case !ok && p.Time == 0:
					w.noStep = append(w.noStep, p.Metric)
					continue
				case !ok: // the row of its time, as the platform's SDK posts step=None
					at := float64(p.Time) / 1e9
					if w.timeRows[at] == nil {
						w.timeRows[at] = map[string]float64{}
					}
					w.timeRows[at][p.Metric] = p.Value
					continue
				}
				step := wireStep(t, f, sv, "metrics", &w)
				setMetric(step, p.Metric, p.Value)
			}
			continue
		}
		records, err := decodeWireLogs(body)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range records {
			identity(r.Resource)
			switch r.EventName {
			case "prime.metrics":
				sv, ok := wireGet(r.Attrs, "prime.step")
				if !ok {
					t.Fatalf("%s: a prime.metrics record without prime.step", f)
				}
				step := wireStep(t, f, sv, "logs", &w)
				values := r.Attrs
				if kvs, ok := r.Body.([]wireKV); ok && len(kvs) > 0 {
					values = kvs
				}
				for _, kv := range values {
					if strings.HasPrefix(kv.Key, "prime.") || kv.Key == "event.name" {
						continue
					}
					setMetric(step, kv.Key, wireMetricValue(t, f, kv, &w))
				}
			case "prime.episode":
				w.episodes++
				sv, ok := wireGet(r.Attrs, "prime.work.step")
				if !ok {
					t.Fatalf("%s: a prime.episode record without prime.work.step", f)
				}
				step := wireStep(t, f, sv, "logs", &w)
				if step%replayStepInterval != 0 {
					w.offCadence++
					continue
				}
				row, jsonTexts := wantEpisodeRow(t, f, r, step)
				w.jsonTexts += jsonTexts
				w.rows[step] = append(w.rows[step], row)
			case "prime.run.end":
				if s, ok := wireGet(r.Attrs, "prime.run.status"); ok && s != "completed" {
					t.Fatalf("%s: the run ends %v; the replay test expects completed", f, s)
				}
				ended = true
			default:
				t.Fatalf("%s: a record with event name %q; the sets hold prime.* events only", f, r.EventName)
			}
		}
	}
	if !ended {
		t.Fatalf("the set sends no prime.run.end")
	}
	for step, rows := range w.rows {
		seen := map[int64]bool{}
		for _, r := range rows {
			if seen[r.createdAt] {
				t.Fatalf("step %d has two episodes in microsecond %d: the test matches rows by created_at", step, r.createdAt)
			}
			seen[r.createdAt] = true
		}
	}
	return w
}

// wireStep reads a step as the contract does: an int, an integral double,
// or a decimal-number string (coerced, counted as number_string).
func wireStep(t *testing.T, f string, v any, signal string, w *replayWant) int64 {
	t.Helper()
	switch v := v.(type) {
	case int64:
		return v
	case float64:
		if v == math.Trunc(v) {
			return int64(v)
		}
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			w.coerced[signal+"/number_string"]++
			return n
		}
	}
	t.Fatalf("%s: a step %#v that the replay test does not expect", f, v)
	return 0
}

// wireMetricValue reads a prime.metrics value: a number, a bool (1 or 0,
// coerced) or a decimal-number string (coerced).
func wireMetricValue(t *testing.T, f string, kv wireKV, w *replayWant) float64 {
	t.Helper()
	switch v := kv.Value.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case bool:
		w.coerced["logs/bool"]++
		if v {
			return 1
		}
		return 0
	case string:
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			w.coerced["logs/number_string"]++
			return n
		}
	}
	t.Fatalf("%s: prime.metrics value %s = %#v that the replay test does not expect", f, kv.Key, kv.Value)
	return 0
}

// wantEpisodeRow projects a column-keyed prime.episode record into its row
// as docs/telemetry.md defines it, and counts its non-string text columns.
func wantEpisodeRow(t *testing.T, f string, r wireRecord, step int64) (wantRow, int) {
	t.Helper()
	body, ok := r.Body.([]wireKV)
	if !ok {
		t.Fatalf("%s: an episode body of type %T; the replay test reads map bodies", f, r.Body)
	}
	if _, native := wireGet(body, "traces"); native {
		t.Fatalf("%s: a native episode document; see native_episode_test.go", f)
	}
	get := func(col string) (any, bool) {
		v, ok := wireGet(r.Attrs, "prime.episode."+col)
		if !ok || v == nil {
			v, ok = wireGet(body, col)
		}
		return v, ok && v != nil
	}
	ts := r.Time
	if ts == 0 {
		ts = r.Observed
	}
	row := wantRow{createdAt: int64(ts / 1000), cols: map[string]any{"step": step, "created_at": int64(ts / 1000)}}
	jsonTexts := 0
	for _, col := range []string{"tag", "prompt", "answer"} {
		switch v, ok := get(col); {
		case !ok:
			row.cols[col] = ""
		case isString(v):
			row.cols[col] = v
		default:
			row.cols[col] = jsonText{wireJSON(v)}
			jsonTexts++
		}
	}
	if v, ok := get("env_name"); ok {
		row.cols["env_name"] = v
	} else {
		row.cols["env_name"] = nil
	}
	for _, col := range []string{"task", "info", "metrics", "timing"} {
		if v, ok := get(col); ok {
			row.cols[col] = jsonText{wireJSON(v)}
		} else {
			row.cols[col] = nil
		}
	}
	for _, col := range []string{"reward", "advantage"} {
		row.cols[col] = nil
		if v, ok := get(col); ok {
			n, isNum := wireJSON(v).(float64)
			if !isNum {
				t.Fatalf("%s: episode %s = %#v", f, col, v)
			}
			row.cols[col] = n
		}
	}
	advantage := row.cols["advantage"]
	tv, _ := get("trajectory")
	branches, ok := tv.([]any)
	if !ok || len(branches) == 0 {
		t.Fatalf("%s: an episode whose trajectory is %#v; the replay test expects a list of branches", f, tv)
	}
	traj := make([]any, len(branches))
	for i, b := range branches {
		m, ok := wireJSON(b).(map[string]any)
		if !ok {
			t.Fatalf("%s: trajectory branch %d is %#v", f, i, b)
		}
		m["advantage"] = advantage
		traj[i] = m
	}
	row.cols["trajectory"] = jsonText{traj}
	last, _ := branches[len(branches)-1].([]wireKV)
	if v, ok := get("completion"); ok {
		row.cols["completion"] = jsonText{wireJSON(v)}
	} else if msgs, ok := wireGet(last, "messages"); ok {
		row.cols["completion"] = jsonText{wireJSON(msgs)}
	} else {
		row.cols["completion"] = nil
	}
	for _, col := range []string{"num_input_tokens", "num_output_tokens"} {
		v, ok := get(col)
		if !ok {
			v, ok = wireGet(last, col)
		}
		row.cols[col] = nil
		if ok {
			row.cols[col] = v
		}
	}
	if v, ok := get("problem_id"); ok {
		row.cols["problem_id"] = v
	} else {
		row.cols["problem_id"] = sameAsSampleID{}
	}
	return row, jsonTexts
}

func isString(v any) bool { _, ok := v.(string); return ok }

// logHasLine reports whether one line of the log holds every part.
func logHasLine(log string, parts ...string) bool {
next:
	for line := range strings.Lines(log) {
		for _, p := range parts {
			if !strings.Contains(line, p) {
				continue next
			}
		}
		return true
	}
	return false
}

package e2e

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// demoRun plays the demo trainer through the built collector as
// scripts/demo.sh does: the demo config (testdata/demo-offline.yaml: the
// default cadence, a sample table every 10th step) with the system metrics
// overlay sampling every second, and returns the run directory once the
// run has ended.
func demoRun(t *testing.T, trainerArgs ...string) string {
	t.Helper()
	otelcol, trainer := binaries(t)
	config, err := os.ReadFile(filepath.Join("..", "testdata", "demo-offline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	runKey := "demo-run"
	if i := slices.Index(trainerArgs, "-run-key"); i >= 0 && i+1 < len(trainerArgs) {
		runKey = trainerArgs[i+1]
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	c := startCollectorWith(t, otelcol, string(config), []string{"deploy/system-metrics.yaml"},
		"PRIME_OTLP_HTTP="+addr, "PRIME_OTLP_GRPC="+freeAddr(t), "PRIME_OFFLINE_DIR="+dir,
		"PRIME_RUN_KEY="+runKey, "PRIME_SYSTEM_INTERVAL=1s", "PRIME_SYSTEM_PROCESS=demotrainer")
	runTrainer(t, trainer, addr, append([]string{"-step-delay", "2ms"}, trainerArgs...)...)
	runDir := waitEnded(t, dir, c.out.String)
	c.stop()
	return runDir
}

// writeReports runs the built prime-sync report on path and returns the
// pages it printed.
func writeReports(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command(syncBinary(t), "report", path).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("prime-sync report %s: %v\n%s", path, err, stderr)
	}
	return strings.Fields(string(out))
}

// metricPoints reads metrics.jsonl as the platform would: each key's
// distinct steps (a time-keyed row's time), by metric and axis.
func metricPoints(t *testing.T, runDir string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]map[float64]bool{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var post struct {
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(sc.Bytes(), &post); err != nil {
			t.Fatalf("metrics.jsonl: %v", err)
		}
		axis, x := "step", post.Metrics["step"]
		if _, ok := post.Metrics["step"]; !ok {
			axis, x = "time", post.Metrics["_timestamp"]
		}
		for k := range post.Metrics {
			if k == "step" || k == "_timestamp" {
				continue
			}
			key := axis + " " + k
			if seen[key] == nil {
				seen[key] = map[float64]bool{}
			}
			seen[key][x] = true
		}
	}
	out := map[string]int{}
	for k, xs := range seen {
		out[k] = len(xs)
	}
	return out
}

func TestTheDemoRunsReportShowsEveryMetricStep10sSamplesAndNoErrorsInChromium(t *testing.T) {
	// As slow as scripts/demo.sh's, so that its process is sampled.
	runDir := demoRun(t, "-steps", "30", "-step-delay", "150ms")
	pages := writeReports(t, runDir)
	if len(pages) != 1 || pages[0] != filepath.Join(runDir, "report.html") {
		t.Fatalf("prime-sync report printed %v, want the run's report.html", pages)
	}
	url := "file://" + pages[0]
	p, took := openPage(t, url)
	t.Logf("the demo run's page (%d bytes) was ready in %v", fileSize(t, pages[0]), took)

	// Every metric has a chart with its number of points, drawn once in view.
	want := metricPoints(t, runDir)
	charts := p.charts(t)
	got := map[string]int{}
	for i, c := range charts {
		got[c.Axis+" "+c.Name] = c.Points
		p.drawChart(t, i)
	}
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("the page has %d charts, metrics.jsonl %d metrics:\npage %v\nfile %v", len(got), len(want), got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("chart %q shows %d points, metrics.jsonl holds %d", k, got[k], n)
		}
	}
	for _, c := range p.charts(t) {
		if c.Canvases == 0 {
			t.Errorf("chart %s has no canvas after it was drawn", c.Name)
		}
	}

	// The host's and the trainer process's metrics, sampled by the
	// collector, are in the System section.
	var families []string
	p.eval(t, `[...document.querySelectorAll('#system .family')].map(f => f.dataset.family)`, &families)
	if !slices.Equal(families, []string{"cpu", "memory", "disk", "network", "proc"}) {
		t.Errorf("the System section's families are %v, want cpu, memory, disk, network and proc", families)
	}
	system := p.systemCharts(t)
	for _, name := range []string{"cpu.percent", "memory.percent", "network.recv_mib_per_s", "network.sent_mib_per_s", "proc.rss_mib", "proc.cpu_percent"} {
		if c, ok := system[name]; !ok || c.Family == "" {
			t.Errorf("the System section has no %s chart: %v", name, slices.Sorted(maps.Keys(system)))
		}
	}

	// Step 10's table holds the rows of step 10's objects, in sample_id
	// order (read here with parquet-go, apart from the page's reader).
	var ids []int64
	for _, body := range offlineObjects(t, runDir)[10] {
		for _, r := range readObject(t, body) {
			ids = append(ids, r.sampleID)
		}
	}
	if len(ids) == 0 {
		t.Fatal("the demo run has no sample objects of step 10")
	}
	slices.Sort(ids)
	var table struct {
		Step, Rows, Objects string
		IDs                 []string
	}
	p.eval(t, `(() => { const s = document.getElementById('step-picker'); s.value = '10'; s.dispatchEvent(new Event('change'));
		const t = document.getElementById('samples-table');
		return {Step: t.dataset.step, Rows: t.dataset.rows, Objects: t.dataset.objects,
			IDs: [...t.querySelectorAll('tbody tr')].map(r => r.dataset.sampleId)}; })()`, &table)
	if table.Step != "10" || table.Rows != strconv.Itoa(len(ids)) || table.Objects != strconv.Itoa(len(offlineObjects(t, runDir)[10])) {
		t.Fatalf("step 10's table: step %s, %s rows of %s objects; the objects hold %d rows", table.Step, table.Rows, table.Objects, len(ids))
	}
	for i, id := range table.IDs {
		if id != strconv.FormatInt(ids[i], 10) {
			t.Fatalf("row %d of step 10 is sample %s, want %d (sample_id order)", i, id, ids[i])
		}
	}
	var status string
	p.eval(t, `document.getElementById('run-status').textContent`, &status)
	if status != "completed" {
		t.Errorf("status %q, want completed", status)
	}
	p.checkQuiet(t, url)
	if shot := os.Getenv("PRIME_REPORT_SCREENSHOT"); shot != "" {
		p.screenshot(t, shot)
	}
}

func TestAFailedRunsReportShowsItsError(t *testing.T) {
	runDir := demoRun(t, "-steps", "12", "-run-key", "oom-run", "-status", "failed", "-error", "CUDA out of memory at step 12")
	pages := writeReports(t, runDir)
	url := "file://" + pages[0]
	p, _ := openPage(t, url)
	var header struct{ Status, Error string }
	p.eval(t, `({Status: document.getElementById('run-status').textContent,
		Error: (document.getElementById('run-error') || {textContent: ''}).textContent})`, &header)
	if header.Status != "failed" || !strings.Contains(header.Error, "CUDA out of memory at step 12") {
		t.Fatalf("header status %q, error %q", header.Status, header.Error)
	}
	p.checkQuiet(t, url)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

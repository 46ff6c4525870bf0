//go:build comparescale

// The compare page's scale measurement (scripts/compare-scale.sh; not in
// CI): it writes 3 GB of metrics and reads them back, which takes minutes
// on a 2-core machine.

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// The comparison of the issue: 20 runs of 10,000 steps and 500 metrics, each
// run with 200 time-keyed rows and a sample table of 16 episodes at two
// steps, asking the same prompts. PRIME_COMPARE_SCALE_RUNS, _STEPS and
// _METRICS change the sizes.
func compareScale(t *testing.T) (runs, steps, metrics int) {
	t.Helper()
	get := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a whole number of at least 1", name, v)
		}
		return n
	}
	return get("PRIME_COMPARE_SCALE_RUNS", 20), get("PRIME_COMPARE_SCALE_STEPS", 10000), get("PRIME_COMPARE_SCALE_METRICS", 500)
}

const (
	compareTimeRows = 200
	compareEpisodes = 16
)

// scaleRun writes one synthetic offline run: its run.json (its seed and
// learning rate differ from the other runs'), metrics.jsonl and sample
// objects. Run i starts i hours after run 0, so its time-keyed rows align
// only on the time since each run's start.
func scaleRun(dir string, i, steps, metrics int) error {
	id := fmt.Sprintf("offline-scale-%02d", i)
	runDir := filepath.Join(dir, id)
	created := time.Date(2026, 12, 4, 10+i, 0, 0, 0, time.UTC)
	rec, err := json.MarshalIndent(map[string]any{"id": id, "status": "completed",
		"created_at": created, "updated_at": created.Add(time.Hour), "finished_at": created.Add(time.Hour),
		"spec": map[string]any{"name": fmt.Sprintf("sweep-%02d", i), "base_model": "Qwen/Qwen3-0.6B", "max_steps": steps, "team_id": "",
			"environments": []map[string]string{{"id": "primeintellect/gsm8k"}},
			"run_config":   map[string]any{"seed": i, "trainer": map[string]any{"lr": 1e-6 * float64(1+i%4), "batch_size": 64}}}}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(runDir, "run.json"), rec, 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(runDir, "metrics.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	groups := []string{"loss", "reward", "entropy", "grad", "kl", "lr", "timing", "tokens", "inference", "optim"}
	keys := make([][]byte, metrics)
	for m := range keys {
		keys[m] = fmt.Appendf(nil, `,"%s/m%03d":`, groups[m%len(groups)], m)
	}
	start := float64(created.Unix())
	line := make([]byte, 0, 32*metrics)
	for step := 1; step <= steps; step++ {
		line = fmt.Appendf(line[:0], `{"run_id":%q,"metrics":{"step":%d,"_timestamp":%d`, id, step, int64(start)+int64(step))
		for m, k := range keys {
			v := math.Sin(float64(step)/(50+float64(m))+float64(i)/3) + float64(m%7)*math.Exp(-float64(step)/3000)
			if step == 1000*(1+i%9) && m == 0 {
				v = 50 // each run's own spike, which its thinning keeps
			}
			line = strconv.AppendFloat(append(line, k...), v, 'g', 7, 64)
		}
		w.Write(append(line, "}}\n"...))
	}
	for row := range compareTimeRows {
		fmt.Fprintf(w, `{"run_id":%q,"metrics":{"_timestamp":%d,"throughput":%d}}`+"\n", id, int64(start)+int64(row*5), 1000+row%100+i)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, step := range []int64{int64(steps / 2), int64(steps)} {
		rows := make([]objectRow, compareEpisodes)
		for e := range rows {
			reward := float64((e + i) % 2)
			rows[e] = objectRow{RunID: id, Step: step, Tag: "train", SampleID: int64(e), EnvName: "primeintellect/gsm8k", Task: `"gsm8k"`,
				Prompt:     fmt.Sprintf("Problem %d: a crate holds %d apples and a farmer adds %d more. ", step*100+int64(e/4), e/4+10, e/4+3) + strings.Repeat("Think it through. ", 20),
				Completion: strings.Repeat(fmt.Sprintf("run %d answers %d. ", i, e), 40), Reward: &reward}
		}
		path := filepath.Join(runDir, "samples", fmt.Sprintf("step_%d_0.parquet", step))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := parquet.WriteFile(path, rows); err != nil {
			return err
		}
	}
	return nil
}

func TestAComparisonOf20RunsOf10000StepsAnd500MetricsOpensInChromium(t *testing.T) {
	runs, steps, metrics := compareScale(t)
	dir := t.TempDir()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, runs)
	slots := make(chan struct{}, 2)
	for i := range runs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = scaleRun(dir, i, steps, metrics)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var onDisk int64
	filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			onDisk += info.Size()
		}
		return nil
	})
	t.Logf("wrote %d runs of %d steps × %d metrics (%.0f MB on disk) in %v", runs, steps, metrics, float64(onDisk)/1e6, time.Since(start).Round(time.Second))

	out := filepath.Join(t.TempDir(), "compare.html")
	start = time.Now()
	lines := compareRuns(t, dir, "-o", out)
	t.Logf("prime-sync compare read them and wrote the page in %v", time.Since(start).Round(100*time.Millisecond))
	if lines[len(lines)-1] != out || len(lines) != runs+1 {
		t.Fatalf("prime-sync compare printed %d lines ending %q, want a line a run and the page's path", len(lines), lines[len(lines)-1])
	}

	url := "file://" + out
	p, took := openPage(t, url)
	ms := p.readyMs(t)
	var timings string
	p.eval(t, `document.body.dataset.timings`, &timings)
	t.Logf("the page: %d bytes (%.1f MB), ready in %v (the page's own count from navigation start: %d ms; %s)",
		fileSize(t, out), float64(fileSize(t, out))/1e6, took, ms, timings)

	// Every metric one chart, a series a run, each with all its points
	// and at most 1,000 plotted.
	charts := p.compareCharts(t)
	if len(charts) != metrics+1 {
		t.Fatalf("%d charts, want %d (the metrics and throughput)", len(charts), metrics+1)
	}
	var plotted []int
	p.eval(t, `[...document.querySelectorAll('.compare-chart data[data-series-run]')].map(d => +d.dataset.plotted)`, &plotted)
	for _, n := range plotted {
		if n > 1000 {
			t.Fatalf("a series plots %d points, more than 1,000", n)
		}
	}
	for _, c := range charts {
		want := steps
		if c.Axis == "time" {
			want = compareTimeRows
		}
		if c.Series != runs || len(c.Missing) != 0 {
			t.Fatalf("chart %s: %d series, missing %v; want %d", c.Name, c.Series, c.Missing, runs)
		}
		for _, n := range c.Points {
			if n != want {
				t.Fatalf("chart %s: a run shows %d points, want %d", c.Name, n, want)
			}
		}
	}
	// Only the charts on screen are drawn at load: with 20 runs, the
	// header and config tables fill the first screen.
	var atLoad struct{ Drawn, OnScreen int }
	p.eval(t, `({Drawn: document.querySelectorAll('.compare-chart canvas').length,
		OnScreen: [...document.querySelectorAll('.compare-chart')].filter(c => c.getBoundingClientRect().top < innerHeight).length})`, &atLoad)
	if atLoad.Drawn != atLoad.OnScreen || atLoad.Drawn > 60 {
		t.Errorf("%d charts drawn at load, %d on screen; want those on screen only", atLoad.Drawn, atLoad.OnScreen)
	}
	// Scrolled to the curves, a screen of 20-line charts is drawn.
	start = time.Now()
	p.drawCompareChart(t, 0, runs)
	var screen int
	p.eval(t, `document.querySelectorAll('.compare-chart canvas').length`, &screen)
	t.Logf("scrolled to the curves: %d charts of %d lines drawn in %v", screen, runs, time.Since(start).Round(time.Millisecond))
	p.drawCompareChart(t, len(charts)-1, runs)

	// The config differs in seed and lr; the samples of the two sampled
	// steps are side by side, every prompt asked by every run.
	var keys []string
	p.eval(t, `[...document.querySelectorAll('#config-table tr.differs')].map(r => r.dataset.key)`, &keys)
	if strings.Join(keys, ",") != "seed,trainer.lr" {
		t.Errorf("differing keys %v, want seed and trainer.lr", keys)
	}
	var asked []int
	p.eval(t, `[...document.querySelectorAll('#compare-samples tbody tr')].map(r => +r.dataset.asked)`, &asked)
	if len(asked) != compareEpisodes/4 {
		t.Errorf("%d prompts at the chosen step, want %d", len(asked), compareEpisodes/4)
	}
	for _, n := range asked {
		if n != runs {
			t.Errorf("a prompt asked by %d runs, want all %d", n, runs)
		}
	}
	p.checkQuiet(t, url)
}

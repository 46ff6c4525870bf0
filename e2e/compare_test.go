package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// compareRuns runs the built prime-sync compare and returns its output's
// lines; the last is the page's path.
func compareRuns(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command(syncBinary(t), append([]string{"compare"}, args...)...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("prime-sync compare %v: %v\n%s", args, err, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// compareChartOnPage is what the compare page shows of one metric.
type compareChartOnPage struct {
	Name    string   `json:"name"`
	Axis    string   `json:"axis"`
	Series  int      `json:"series"`
	Missing []string `json:"missing"`
	Runs    []string `json:"runs"`   // each series' run label
	Points  []int    `json:"points"` // each series' points
}

func (p *page) compareCharts(t *testing.T) []compareChartOnPage {
	t.Helper()
	var out []compareChartOnPage
	p.eval(t, `[...document.querySelectorAll('.compare-chart')].map(c => ({name: c.dataset.metric, axis: c.dataset.axis,
		series: +c.dataset.series, missing: JSON.parse(c.dataset.missing),
		runs: [...c.querySelectorAll('data[data-series-run]')].map(d => d.dataset.label),
		points: [...c.querySelectorAll('data[data-series-run]')].map(d => +d.dataset.points)}))`, &out)
	return out
}

// promptKey is a sample row's task and prompt: rows of two runs with the
// same key asked the same problem.
type promptKey struct{ task, prompt string }

// stepPrompts reads a run's sample objects of one step with parquet-go
// (apart from the page's reader): each prompt's sample ids, in order.
func stepPrompts(t *testing.T, runDir string, step int64) map[promptKey][]string {
	t.Helper()
	var rows []sampleRow
	for _, body := range offlineObjects(t, runDir)[step] {
		rows = append(rows, readObject(t, body)...)
	}
	slices.SortFunc(rows, func(a, b sampleRow) int { return int(a.sampleID - b.sampleID) })
	out := map[promptKey][]string{}
	for _, r := range rows {
		k := promptKey{r.task, r.prompt}
		out[k] = append(out[k], strconv.FormatInt(r.sampleID, 10))
	}
	return out
}

func TestThreeDemoRunsOfOtherConfigsAndSeedsCompareChartByChartKeyByKeyAndPromptByPromptInChromium(t *testing.T) {
	// The same problems at each step (two groups of rollouts a step), asked
	// by runs of other seeds, batch sizes and rollouts per problem.
	type demo struct{ name, seed, episodes, rollouts string }
	demos := []demo{{"seed-1", "1", "4", "2"}, {"seed-2-wide", "2", "8", "4"}, {"seed-3", "3", "4", "2"}}
	var dirs []string
	for _, d := range demos {
		dirs = append(dirs, demoRun(t, "-steps", "30", "-run-key", d.name, "-run-name", d.name, "-seed", d.seed,
			"-episodes-per-step", d.episodes, "-rollouts-per-example", d.rollouts))
	}
	out := filepath.Join(t.TempDir(), "compare.html")
	lines := compareRuns(t, append(dirs, "-o", out)...)
	if lines[len(lines)-1] != out {
		t.Fatalf("prime-sync compare printed %q last, want the page's path %s", lines[len(lines)-1], out)
	}
	url := "file://" + out
	p, took := openPage(t, url)
	t.Logf("the page of three demo runs (%d bytes) was ready in %v (the page's own count: %d ms)", fileSize(t, out), took, p.readyMs(t))

	// One chart a metric; a series for each run that holds it, with the
	// run's number of points; the others named.
	labels := make([]string, len(demos))
	holds := map[string]map[string]int{} // metric → run label → points
	for i, d := range demos {
		labels[i] = d.name
		for k, n := range metricPoints(t, dirs[i]) {
			if holds[k] == nil {
				holds[k] = map[string]int{}
			}
			holds[k][d.name] = n
		}
	}
	charts := p.compareCharts(t)
	seen := map[string]bool{}
	training := 0
	for i, c := range charts {
		k := c.Axis + " " + c.Name
		if seen[k] {
			t.Errorf("metric %s has two charts", k)
		}
		seen[k] = true
		want := holds[k]
		var missing []string
		for _, l := range labels {
			if _, ok := want[l]; !ok {
				missing = append(missing, l)
			}
		}
		if c.Series != len(want) || len(c.Runs) != len(want) || !slices.Equal(c.Missing, missing) {
			t.Errorf("chart %s: %d series of %v, missing %v; the runs' files hold it in %v", k, c.Series, c.Runs, c.Missing, want)
		}
		for j, run := range c.Runs {
			if want[run] != c.Points[j] {
				t.Errorf("chart %s: run %s shows %d points, its metrics.jsonl holds %d", k, run, c.Points[j], want[run])
			}
		}
		if c.Axis == "step" {
			training++
			if c.Series != 3 {
				t.Errorf("training metric %s has %d series, want the three runs'", c.Name, c.Series)
			}
		}
		if i < 3 {
			p.drawCompareChart(t, i, c.Series)
		}
	}
	if len(charts) != len(holds) || training < 5 {
		t.Fatalf("%d charts (%d over steps) for the %d metrics of the runs' files", len(charts), training, len(holds))
	}

	// The config table: exactly the keys that differ, and every key once
	// the switch is on.
	visibleKeys := func() []string {
		var keys []string
		p.eval(t, `[...document.querySelectorAll('#config-table tbody tr')].filter(r => getComputedStyle(r).display !== 'none').map(r => r.dataset.key)`, &keys)
		return keys
	}
	if got := visibleKeys(); !slices.Equal(got, []string{"seed", "trainer.batch_size", "trainer.rollouts_per_example"}) {
		t.Errorf("the config table shows %v, want exactly seed, trainer.batch_size and trainer.rollouts_per_example", got)
	}
	var ok bool
	p.eval(t, `(() => { const b = document.getElementById('config-all'); b.click(); return b.checked; })()`, &ok)
	if got := visibleKeys(); !slices.Equal(got, []string{"seed", "trainer.batch_size", "trainer.lr", "trainer.rollouts_per_example"}) {
		t.Errorf("with every key shown, the config table shows %v", got)
	}

	// Step 10: the three runs' rows side by side, the same prompts on one
	// line, each run's rows those of its objects, in sample_id order.
	type promptLine struct {
		Task, Prompt string
		Runs         map[string][]string
	}
	var table struct {
		Step  string
		Lines []promptLine
	}
	p.eval(t, `(() => { const s = document.getElementById('compare-step-picker'); s.value = '10'; s.dispatchEvent(new Event('change'));
		const t = document.getElementById('compare-samples');
		const runs = [...t.querySelectorAll('thead th[data-run]')].map(th => th.textContent);
		return {Step: t.dataset.step, Lines: [...t.querySelectorAll('tbody tr')].map(tr => ({Task: tr.dataset.task,
			Prompt: tr.querySelector('td.prompt pre').textContent,
			Runs: Object.fromEntries([...tr.querySelectorAll('td[data-run]')].map((td, i) => [runs[i],
				[...td.querySelectorAll('.answer')].map(a => a.dataset.sampleId)]))}))}; })()`, &table)
	if table.Step != "10" {
		t.Fatalf("the samples table is of step %s, want 10", table.Step)
	}
	want := map[string]map[promptKey][]string{}
	prompts := map[promptKey]bool{}
	for i, l := range labels {
		want[l] = stepPrompts(t, dirs[i], 10)
		for k := range want[l] {
			prompts[k] = true
		}
	}
	if len(table.Lines) != len(prompts) || len(prompts) < 2 {
		t.Fatalf("step 10 shows %d prompts; the runs' objects hold %d", len(table.Lines), len(prompts))
	}
	for _, line := range table.Lines {
		k := promptKey{line.Task, line.Prompt}
		for _, l := range labels {
			got, exp := line.Runs[l], want[l][k]
			if exp == nil {
				exp = []string{}
			}
			if !slices.Equal(got, exp) {
				t.Errorf("prompt %.60q: run %s shows rows %v, its objects hold %v", line.Prompt, l, got, exp)
			}
			if len(got) == 0 {
				t.Errorf("prompt %.60q was not asked by run %s: the three runs ask the same problems at a step", line.Prompt, l)
			}
		}
	}

	// Taking a run out hides its line in the drawn charts and its column.
	var off struct{ Legend, Cells int }
	p.eval(t, `(() => { document.querySelector('#run-toggles input[data-toggle="1"]').click();
		return {Legend: document.querySelectorAll('.compare-chart .u-legend .u-series.u-off').length,
			Cells: document.querySelectorAll('#compare-samples td[data-run="1"].run-off').length}; })()`, &off)
	if off.Legend == 0 || off.Cells != len(table.Lines) {
		t.Errorf("with run 1 off: %d legend entries off, %d of its %d sample cells hidden", off.Legend, off.Cells, len(table.Lines))
	}
	p.eval(t, `(() => { document.querySelector('#run-toggles input[data-toggle="1"]').click(); return true; })()`, &ok)
	p.eval(t, `(() => { document.getElementById('config-all').click(); return true; })()`, &ok)

	p.checkQuiet(t, url)
	if shot := os.Getenv("PRIME_COMPARE_SCREENSHOT"); shot != "" {
		p.eval(t, `(() => { scrollTo(0, 0); return true; })()`, &ok)
		p.screenshotTop(t, shot, 1800)
	}
}

// drawCompareChart scrolls the i-th compare chart into view and waits
// until it is drawn with a legend entry for each series and the x.
func (p *page) drawCompareChart(t *testing.T, i, series int) {
	t.Helper()
	card := `document.querySelectorAll('.compare-chart')[` + itoa(i) + `]`
	var ok bool
	p.eval(t, `(() => { `+card+`.scrollIntoView(); return true; })()`, &ok)
	if _, err := chromedp.Run(p.ctx, chromedp.Poll[bool](`(() => { const c = `+card+`;
		return c.dataset.rendered === "1" && c.querySelector('canvas') !== null && c.querySelectorAll('.u-legend .u-series').length === `+itoa(series+1)+`; })()`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("compare chart %d was not drawn with %d series once in view: %v", i, series, err)
	}
}

// screenshotTop saves the top of the page, height CSS pixels, as PNG.
func (p *page) screenshotTop(t *testing.T, path string, height int) {
	t.Helper()
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(1280, int64(height)), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

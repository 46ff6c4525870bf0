package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// systemRunDir writes, by hand, an offline run as the exporter lays one
// out: run.json, and a metrics.jsonl of 30 steps (10 s apart) and of 20
// time-keyed rows of system metrics (15 s apart, as the collector scrapes
// them): the host's CPU and memory, the trainer's process and, from the
// 9th row, a second one (so their x differ), two GPUs of node-1, a vLLM engine
// whose latency histograms give count, sum, mean and percentiles, with
// the statistic after the attributes as the exporter writes it (e2e) and
// before them (ttft).
func systemRunDir(t *testing.T, withSystem bool) string {
	t.Helper()
	runDir := filepath.Join(t.TempDir(), "offline-system")
	created := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	writeJSONFile(t, filepath.Join(runDir, "run.json"), map[string]any{"id": "offline-system", "identity": `prime.run.key="system-run"`,
		"status": "completed", "created_at": created, "updated_at": created.Add(5 * time.Minute), "finished_at": created.Add(5 * time.Minute),
		"spec": map[string]any{"name": "system-run", "base_model": "Qwen/Qwen3-0.6B", "max_steps": 30, "team_id": "",
			"environments": []map[string]string{{"id": "primeintellect/gsm8k"}}, "run_config": map[string]any{"lr": 1e-6}}})
	start := float64(created.Unix())
	var buf bytes.Buffer
	post := func(m map[string]float64) {
		line, err := json.Marshal(map[string]any{"run_id": "offline-system", "metrics": m})
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	for step := 1; step <= 30; step++ {
		s := float64(step)
		post(map[string]float64{"step": s, "_timestamp": start + 10*(s-1), "loss": 2 / s, "reward/mean": math.Min(1, s/25)})
	}
	for row := range 20 {
		if !withSystem {
			break
		}
		r := float64(row)
		wave := math.Sin(r / 3)
		m := map[string]float64{"_timestamp": start + 5 + 15*r,
			"system/cpu.percent": 55 + 20*wave, "system/cpu.load_1m": 6 + 2*wave,
			"system/memory.percent": 41 + r/4, "system/memory.used_mib": 52000 + 300*r,
			"system/vllm.kv_cache_percent{engine=0}": 30 + 25*wave, "system/vllm.requests_running{engine=0}": 48 + 10*wave,
			"system/vllm.ttft_s/p50{engine=0}": 0.08 + 0.02*wave, "system/vllm.ttft_s/p90{engine=0}": 0.21 + 0.05*wave,
			"system/vllm.ttft_s/p99{engine=0}": 0.48 + 0.1*wave, "system/vllm.ttft_s/count{engine=0}": 900 * (r + 1),
			"system/vllm.ttft_s/sum{engine=0}": 100 * (r + 1), "system/vllm.ttft_s/mean{engine=0}": 0.11,
			"system/vllm.e2e_latency_s{engine=0}/p50": 3 + wave, "system/vllm.e2e_latency_s{engine=0}/p99": 9 + 2*wave,
			"system/vllm.e2e_latency_s{engine=0}/count": 900 * (r + 1), "system/vllm.e2e_latency_s{engine=0}/sum": 3600 * (r + 1),
		}
		m["system/proc.rss_mib{pid=4242,process=python3}"] = 9000 + 40*r
		if row >= 8 {
			m["system/proc.rss_mib{pid=4310,process=python3}"] = 6000 + 25*wave
		}
		for gpu := range 2 {
			g := float64(gpu)
			attrs := fmt.Sprintf("{gpu=%d,host=node-1}", gpu)
			m["system/gpu.util_percent"+attrs] = 88 - 30*g + 8*math.Sin(r/2+g)
			m["system/gpu.memory_used_mib"+attrs] = 61000 - 9000*g
			m["system/gpu.memory_percent"+attrs] = 75 - 11*g
			m["system/gpu.power_w"+attrs] = 520 - 120*g + 30*wave
			m["system/gpu.temp_c"+attrs] = 66 - 5*g + 3*wave
		}
		post(m)
	}
	writeBytes(t, filepath.Join(runDir, "metrics.jsonl"), buf.Bytes())
	return runDir
}

// systemChart is what the page shows of one System chart.
type systemChart struct {
	Family  string   `json:"family"`
	Series  string   `json:"series"`
	Metrics []string `json:"metrics"`
	Labels  []string `json:"labels"` // data-label of each line
	Legend  []string `json:"legend"` // uPlot's legend, once drawn: x, then each line
	Folded  bool     `json:"folded"`
}

func (p *page) systemCharts(t *testing.T) map[string]systemChart {
	t.Helper()
	out := map[string]systemChart{}
	p.eval(t, `Object.fromEntries([...document.querySelectorAll('#system .system-chart')].map(c => [c.dataset.panel, {
		family: c.closest('.family').dataset.family, series: c.dataset.series,
		metrics: [...c.querySelectorAll('data')].map(d => d.value), labels: [...c.querySelectorAll('data')].map(d => d.dataset.label),
		legend: [...c.querySelectorAll('.u-legend .u-series .u-label')].map(l => l.textContent),
		folded: c.closest('details') !== null}]))`, &out)
	return out
}

// ink counts a chart's painted pixels, and those of each of the first
// two line colours (report.js's palette: blue, red).
type ink struct {
	Painted int   `json:"painted"`
	Colours []int `json:"colours"`
}

func (p *page) chartInk(t *testing.T, panel string) ink {
	t.Helper()
	var out ink
	p.eval(t, `(() => { const c = document.querySelector('#system .system-chart[data-panel="`+panel+`"] canvas');
		const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
		const want = [[0x25, 0x63, 0xeb], [0xdc, 0x26, 0x26]], colours = [0, 0];
		let painted = 0;
		for (let i = 0; i < px.length; i += 4) {
			if (px[i + 3] === 0) continue;
			painted++;
			want.forEach((w, k) => { if (px[i + 3] > 200 && Math.abs(px[i] - w[0]) + Math.abs(px[i + 1] - w[1]) + Math.abs(px[i + 2] - w[2]) < 60) colours[k]++; });
		}
		return {painted, colours}; })()`, &out)
	return out
}

func TestTheReportsSystemSectionDrawsAChartAMetricWithALineAGPUAndOnePercentileChartInChromium(t *testing.T) {
	runDir := systemRunDir(t, true)
	pages := writeReports(t, runDir)
	url := "file://" + pages[0]
	p, took := openPage(t, url)
	t.Logf("the page (%d bytes) was ready in %v", fileSize(t, pages[0]), took)

	// A System heading, after the training curves' groups, and none of
	// them holds a system metric.
	var layout struct {
		Headings  []string `json:"headings"`
		Groups    []string `json:"groups"`
		After     bool     `json:"after"`
		Families  []string `json:"families"`
		SubTitles []string `json:"subTitles"`
	}
	p.eval(t, `(() => { const sys = document.querySelector('#system h2'), groups = [...document.querySelectorAll('#charts section.group')];
		return {headings: [...document.querySelectorAll('main h2')].map(h => h.firstChild.textContent.trim()),
			groups: groups.map(g => g.dataset.group),
			after: groups.length > 0 && groups.every(g => (g.compareDocumentPosition(sys) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0),
			families: [...document.querySelectorAll('#system .family')].map(f => f.dataset.family),
			subTitles: [...document.querySelectorAll('#system .family h3')].map(h => h.textContent)}; })()`, &layout)
	if !slices.Equal(layout.Headings, []string{"Metrics", "System", "Samples"}) || !layout.After {
		t.Errorf("headings %v, System after every training group %v: want Metrics, System, Samples, System after the groups", layout.Headings, layout.After)
	}
	if !slices.Equal(layout.Groups, []string{"reward", ""}) {
		t.Errorf("training groups %v, want reward and other only", layout.Groups)
	}
	if !slices.Equal(layout.Families, []string{"cpu", "memory", "proc", "gpu", "vllm"}) ||
		!slices.Equal(layout.SubTitles, []string{"CPU", "Memory", "Processes", "GPU", "vLLM"}) {
		t.Errorf("families %v titled %v, want cpu, memory, proc, gpu, vllm as CPU, Memory, Processes, GPU, vLLM", layout.Families, layout.SubTitles)
	}

	// Every metric of metrics.jsonl is on the page with its points, and
	// every chart draws.
	want := metricPoints(t, runDir)
	charts := p.charts(t)
	got := map[string]int{}
	for i, c := range charts {
		got[c.Axis+" "+c.Name] = c.Points
		p.drawChart(t, i)
	}
	if len(got) != len(want) {
		t.Fatalf("the page shows %d metrics, metrics.jsonl holds %d:\npage %v\nfile %v", len(got), len(want), got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s shows %d points, metrics.jsonl holds %d", k, got[k], n)
		}
	}

	system := p.systemCharts(t)
	gpu := system["gpu.util_percent"]
	if gpu.Family != "gpu" || gpu.Series != "2" ||
		!slices.Equal(gpu.Labels, []string{"gpu=0,host=node-1", "gpu=1,host=node-1"}) ||
		!slices.Equal(gpu.Legend, []string{"since start", "gpu=0,host=node-1", "gpu=1,host=node-1"}) {
		t.Errorf("gpu.util_percent: %+v; want one chart of two lines, legend gpu=0,host=node-1 and gpu=1,host=node-1", gpu)
	}
	ttft := system["vllm.ttft_s percentiles"]
	if ttft.Family != "vllm" || ttft.Folded || !slices.Equal(ttft.Legend, []string{"since start", "p50 engine=0", "p90 engine=0", "p99 engine=0"}) ||
		!slices.Equal(ttft.Metrics, []string{"system/vllm.ttft_s/p50{engine=0}", "system/vllm.ttft_s/p90{engine=0}", "system/vllm.ttft_s/p99{engine=0}"}) {
		t.Errorf("vllm.ttft_s percentiles: %+v; want p50, p90 and p99 in one chart", ttft)
	}
	if e2e := system["vllm.e2e_latency_s percentiles"]; len(e2e.Legend) != 3 {
		t.Errorf("vllm.e2e_latency_s percentiles: %+v; want p50 and p99 in one chart", e2e)
	}
	for _, folded := range []string{"vllm.ttft_s/count", "vllm.ttft_s/sum", "vllm.ttft_s/mean", "vllm.e2e_latency_s/count", "vllm.e2e_latency_s/sum"} {
		if c, ok := system[folded]; !ok || !c.Folded {
			t.Errorf("%s: %+v; want it under the vLLM family's fold", folded, c)
		}
	}
	if len(system) != 2+2+1+5+4+5 {
		t.Errorf("%d System charts, want 19 (cpu 2, memory 2, proc 1, gpu 5, vllm 4 and 5 folded): %v", len(system), slices.Sorted(maps.Keys(system)))
	}

	// The lines are drawn: each GPU's colour is on the canvas, and each
	// process's, though the second's rows began later.
	for _, panel := range []string{"gpu.util_percent", "proc.rss_mib"} {
		in := p.chartInk(t, panel)
		t.Logf("%s's canvas: %d pixels painted, %v of its two lines' colours", panel, in.Painted, in.Colours)
		if in.Painted < 1000 || in.Colours[0] < 50 || in.Colours[1] < 50 {
			t.Errorf("%s's canvas: %+v; want both lines drawn", panel, in)
		}
	}
	if proc := system["proc.rss_mib"]; !slices.Equal(proc.Legend, []string{"since start", "pid=4242,process=python3", "pid=4310,process=python3"}) {
		t.Errorf("proc.rss_mib: %+v; want one chart, a line a process", proc)
	}

	// The cursor gives the time since the run's first row and the time of
	// day; the other System charts follow it.
	var legend struct{ GPU, CPU string }
	p.eval(t, `(() => { const over = c => document.querySelector('#system .system-chart[data-panel="' + c + '"] .u-over');
		const o = over('gpu.util_percent'); o.scrollIntoView({block: 'center'}); const r = o.getBoundingClientRect();
		o.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true}));
		const x = c => over(c).closest('.chart').querySelector('.u-legend .u-series .u-value').textContent;
		return {GPU: x('gpu.util_percent'), CPU: x('cpu.percent')}; })()`, &legend)
	if re := regexp.MustCompile(`^\d+m(\d\ds)? \(\d\d:\d\d:\d\d\)$`); !re.MatchString(legend.GPU) || legend.CPU != legend.GPU {
		t.Errorf("the cursor's time: %q on the GPU chart, %q on the CPU chart; want e.g. 2m30s (10:02:30) on both", legend.GPU, legend.CPU)
	}
	p.checkQuiet(t, url)

	// A picture of the section as it opens, to look at.
	var closed bool
	p.eval(t, `(() => { for (const d of document.querySelectorAll('#system details')) d.open = false; return true; })()`, &closed)
	shot := os.Getenv("PRIME_REPORT_SYSTEM_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "report-system.png")
	}
	png, err := chromedp.Run(p.ctx, chromedp.Screenshot(chromedp.CSS("#system")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the System section: %s (%d bytes)", shot, len(png))
}

func TestAReportOfARunWithoutSystemMetricsHasNoSystemSectionInChromium(t *testing.T) {
	pages := writeReports(t, systemRunDir(t, false))
	url := "file://" + pages[0]
	p, _ := openPage(t, url)
	var headings []string
	p.eval(t, `[...document.querySelectorAll('main h2')].map(h => h.firstChild.textContent.trim())`, &headings)
	if !slices.Equal(headings, []string{"Metrics", "Samples"}) {
		t.Errorf("headings %v, want Metrics and Samples, no System", headings)
	}
	p.checkQuiet(t, url)
}

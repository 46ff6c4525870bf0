package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// systemPage reads jsonl as metrics.jsonl and renders its page, returning
// the page's data and its HTML.
func systemPage(t *testing.T, jsonl string) (pageData, string) {
	t.Helper()
	mf, err := readMetrics(strings.NewReader(jsonl))
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Header: Header{Kind: KindTrain}, Series: mf.Series, Start: mf.Start}
	var buf bytes.Buffer
	if err := Render(&buf, r); err != nil {
		t.Fatal(err)
	}
	return pageDataOf(t, r), buf.String()
}

// timeRows writes n time-keyed rows, 15 s apart, each holding every key.
func timeRows(n int, keys ...string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"run_id":"r","metrics":{"_timestamp":%d`, 1796400000+15*i)
		for k, key := range keys {
			fmt.Fprintf(&b, `,%q:%d`, key, i+k)
		}
		b.WriteString("}}\n")
	}
	return b.String()
}

// shown is a panel as a reader sees it: its title, and each line's metric
// and legend label.
type shown struct {
	title  string
	lines  []string // "label = metric"
	family string
	totals bool
}

func panelsOf(data pageData) []shown {
	var out []shown
	add := func(family string, p systemPanel, totals bool) {
		s := shown{title: p.Title, family: family, totals: totals}
		for i, c := range p.Charts {
			s.lines = append(s.lines, p.Labels[i]+" = "+data.Charts[c].Name)
		}
		out = append(out, s)
	}
	for _, f := range data.System {
		for _, p := range f.Panels {
			add(f.Name, p, false)
		}
		for _, p := range f.Totals {
			add(f.Name, p, true)
		}
	}
	return out
}

func findPanel(t *testing.T, data pageData, title string) shown {
	t.Helper()
	for _, p := range panelsOf(data) {
		if p.title == title {
			return p
		}
	}
	t.Fatalf("no chart %q in the System section: %+v", title, panelsOf(data))
	return shown{}
}

func TestSeriesThatDifferOnlyInTheirAttributesShareOneChartWithTheAttributesAsLegend(t *testing.T) {
	data, _ := systemPage(t, timeRows(4,
		"system/gpu.util_percent{gpu=1,host=node-1}", "system/gpu.util_percent{gpu=0,host=node-1}",
		"system/gpu.util_percent{gpu=0,host=node-2}", "system/gpu.power_w{gpu=0,host=node-1}",
		"system/proc.rss_mib{pid=4242,process=python3}", "system/proc.rss_mib{pid=77,process=vllm}",
		"system/disk.percent{mountpoint=/}", "system/cpu.percent"))
	tests := []struct {
		title string
		lines []string
	}{
		{"gpu.util_percent", []string{
			"gpu=0,host=node-1 = system/gpu.util_percent{gpu=0,host=node-1}",
			"gpu=0,host=node-2 = system/gpu.util_percent{gpu=0,host=node-2}",
			"gpu=1,host=node-1 = system/gpu.util_percent{gpu=1,host=node-1}"}},
		{"gpu.power_w", []string{"gpu=0,host=node-1 = system/gpu.power_w{gpu=0,host=node-1}"}},
		{"proc.rss_mib", []string{
			"pid=77,process=vllm = system/proc.rss_mib{pid=77,process=vllm}",
			"pid=4242,process=python3 = system/proc.rss_mib{pid=4242,process=python3}"}},
		{"disk.percent", []string{"mountpoint=/ = system/disk.percent{mountpoint=/}"}},
		// A series without attributes is a lone curve, labelled as one.
		{"cpu.percent", []string{"value = system/cpu.percent"}},
	}
	if got := len(panelsOf(data)); got != len(tests) {
		t.Fatalf("%d charts in the System section, want %d: %+v", got, len(tests), panelsOf(data))
	}
	for _, tt := range tests {
		if p := findPanel(t, data, tt.title); !slices.Equal(p.lines, tt.lines) {
			t.Errorf("chart %s holds\n%s\nwant\n%s", tt.title, strings.Join(p.lines, "\n"), strings.Join(tt.lines, "\n"))
		}
	}
}

func TestLegendsListNumberedAttributesByTheirValue(t *testing.T) {
	var keys []string
	for _, gpu := range []int{10, 2, 1, 0, 11} {
		keys = append(keys, fmt.Sprintf("system/gpu.temp_c{gpu=%d}", gpu))
	}
	data, _ := systemPage(t, timeRows(2, keys...))
	p := findPanel(t, data, "gpu.temp_c")
	var labels []string
	for _, l := range p.lines {
		label, _, _ := strings.Cut(l, " = ")
		labels = append(labels, label)
	}
	if want := []string{"gpu=0", "gpu=1", "gpu=2", "gpu=10", "gpu=11"}; !slices.Equal(labels, want) {
		t.Fatalf("legend %v, want %v", labels, want)
	}
}

func TestAHistogramsPercentilesShareOneChartAndItsTotalsAreFoldedAway(t *testing.T) {
	data, _ := systemPage(t, timeRows(3,
		// The exporter's order: the statistic after the attributes.
		"system/vllm.ttft_s{engine=0}/p99", "system/vllm.ttft_s{engine=0}/p50", "system/vllm.ttft_s{engine=0}/p90",
		"system/vllm.ttft_s{engine=0}/count", "system/vllm.ttft_s{engine=0}/sum", "system/vllm.ttft_s{engine=0}/mean",
		// The other order, and two engines: one chart, a line each.
		"system/vllm.e2e_latency_s/p50{engine=1}", "system/vllm.e2e_latency_s/p50{engine=0}",
		"system/vllm.e2e_latency_s/count{engine=0}", "system/vllm.e2e_latency_s/count{engine=1}",
		"system/vllm.kv_cache_percent{engine=0}"))
	tests := []struct {
		title  string
		lines  []string
		totals bool
	}{
		{"vllm.e2e_latency_s percentiles", []string{
			"p50 engine=0 = system/vllm.e2e_latency_s/p50{engine=0}",
			"p50 engine=1 = system/vllm.e2e_latency_s/p50{engine=1}"}, false},
		{"vllm.kv_cache_percent", []string{"engine=0 = system/vllm.kv_cache_percent{engine=0}"}, false},
		{"vllm.ttft_s percentiles", []string{
			"p50 engine=0 = system/vllm.ttft_s{engine=0}/p50",
			"p90 engine=0 = system/vllm.ttft_s{engine=0}/p90",
			"p99 engine=0 = system/vllm.ttft_s{engine=0}/p99"}, false},
		{"vllm.e2e_latency_s/count", []string{
			"engine=0 = system/vllm.e2e_latency_s/count{engine=0}",
			"engine=1 = system/vllm.e2e_latency_s/count{engine=1}"}, true},
		{"vllm.ttft_s/count", []string{"engine=0 = system/vllm.ttft_s{engine=0}/count"}, true},
		{"vllm.ttft_s/sum", []string{"engine=0 = system/vllm.ttft_s{engine=0}/sum"}, true},
		{"vllm.ttft_s/mean", []string{"engine=0 = system/vllm.ttft_s{engine=0}/mean"}, true},
	}
	got := panelsOf(data)
	if len(got) != len(tests) {
		t.Fatalf("%d charts, want %d: %+v", len(got), len(tests), got)
	}
	// In this order: the charts by metric, then the fold's.
	for i, tt := range tests {
		if p := got[i]; p.title != tt.title || p.totals != tt.totals || p.family != "vllm" || !slices.Equal(p.lines, tt.lines) {
			t.Errorf("chart %d: %+v\nwant %s (folded %v) holding\n%s", i, p, tt.title, tt.totals, strings.Join(tt.lines, "\n"))
		}
	}
}

func TestAMetricThatOnlyEndsInAStatisticIsAnOrdinaryMetric(t *testing.T) {
	// No count beside it: not a histogram, so not folded away.
	data, _ := systemPage(t, timeRows(2, "system/queue/max{worker=a}", "system/queue/max{worker=b}", "system/jobs/count"))
	got := panelsOf(data)
	if len(got) != 2 || got[0].title != "jobs/count" || got[1].title != "queue/max" || got[0].totals || got[1].totals ||
		len(got[1].lines) != 2 || got[0].family != "other" {
		t.Fatalf("charts %+v, want jobs/count and queue/max (two lines) as ordinary charts of other", got)
	}
}

func TestTheSystemFamiliesComeInOrderCPUMemoryDiskNetworkProcessesGPUVLLMOther(t *testing.T) {
	data, _ := systemPage(t, timeRows(2, "system/vllm.requests_running{engine=0}", "system/DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu=0}",
		"system/gpu.temp_c{gpu=0}", "system/proc.threads{pid=1,process=python3}", "system/network.sent_mib_per_s",
		"system/disk.write_mib_per_s", "system/memory.percent", "system/cpu.load_1m", "system/cpuinfo.mhz"))
	var names, titles []string
	for _, f := range data.System {
		names, titles = append(names, f.Name), append(titles, f.Title)
	}
	if want := []string{"cpu", "memory", "disk", "network", "proc", "gpu", "vllm", "other"}; !slices.Equal(names, want) {
		t.Errorf("families %v, want %v", names, want)
	}
	if want := []string{"CPU", "Memory", "Disk", "Network", "Processes", "GPU", "vLLM", "Other"}; !slices.Equal(titles, want) {
		t.Errorf("sub-headings %v, want %v", titles, want)
	}
	// A name that only starts like a family's is not of it.
	if other := data.System[len(data.System)-1]; len(other.Panels) != 2 {
		t.Errorf("other holds %+v, want the DCGM metric and cpuinfo.mhz", other.Panels)
	}
}

func TestAnAmbientKeyIsReadIntoFamilyMetricAttributesAndStatistic(t *testing.T) {
	tests := map[string]systemKey{
		"system/cpu.percent":                      {family: "cpu", metric: "cpu.percent"},
		"system/disk.percent{mountpoint=/}":       {family: "disk", metric: "disk.percent", attrs: "mountpoint=/"},
		"system/vllm.ttft_s{engine=0}/p50":        {family: "vllm", metric: "vllm.ttft_s", attrs: "engine=0", stat: "p50"},
		"system/vllm.ttft_s/p50{engine=0}":        {family: "vllm", metric: "vllm.ttft_s", attrs: "engine=0", stat: "p50"},
		`system/http.latency{path=/a\}b,x=1}/max`: {family: "other", metric: "http.latency", attrs: `path=/a\}b,x=1`, stat: "max"},
		"system/gpu.util_percent{unclosed":        {family: "gpu", metric: "gpu.util_percent{unclosed"},
	}
	for name, want := range tests {
		if got := parseSystemKey(name); got != want {
			t.Errorf("parseSystemKey(%q) = %+v, want %+v", name, got, want)
		}
	}
}

func TestARunWithoutSystemKeysHasNoSystemSection(t *testing.T) {
	data, html := systemPage(t, `{"run_id":"r","metrics":{"step":1,"_timestamp":1796400000,"loss":1,"reward/mean":0.5}}
{"run_id":"r","metrics":{"_timestamp":1796400001,"throughput":30}}
`)
	if data.System != nil || strings.Contains(html, `id="system"`) || strings.Contains(html, "<h2>System") {
		t.Fatalf("a run without system/ keys shows a System section (data %+v)", data.System)
	}
	if !strings.Contains(html, "<small>3 curves</small>") {
		t.Errorf("the Metrics heading does not count the run's 3 curves")
	}
}

func TestSystemSeriesAreCountedInTheSystemSectionNotAmongTheCurves(t *testing.T) {
	_, html := systemPage(t, `{"run_id":"r","metrics":{"step":1,"_timestamp":1796400000,"loss":1}}
`+timeRows(3, "system/gpu.util_percent{gpu=0}", "system/gpu.util_percent{gpu=1}", "system/cpu.percent"))
	for _, want := range []string{"<small>1 curves</small>", `<section id="system"`, "<h2>System <small>2 charts, 3 series</small>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Index(html, `<section id="system"`) < strings.Index(html, `<section id="metrics"`) {
		t.Errorf("the System section comes before the training curves")
	}
}

func TestTheSystemSectionsTimeStartsAtTheRunsFirstRowStepRowsIncluded(t *testing.T) {
	data, _ := systemPage(t, `{"run_id":"r","metrics":{"step":1,"_timestamp":1796399990.5,"loss":1}}
`+timeRows(2, "system/cpu.percent"))
	if data.Start != 1796399990.5 {
		t.Fatalf("start %v, want the step row's 1796399990.5", data.Start)
	}
}

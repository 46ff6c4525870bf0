package ambient

import (
	"maps"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

func TestTheHostsCPUIsOnePercentAveragedOverItsCPUsWithoutIdle(t *testing.T) {
	md, ms := resource(hostScope, nil)
	for _, cpu := range []string{"cpu0", "cpu1"} {
		point(ms, "system.cpu.utilization", false, t0, 0.5, "cpu", cpu, "state", "idle")
		point(ms, "system.cpu.utilization", false, t0, 0.3, "cpu", cpu, "state", "user")
		point(ms, "system.cpu.utilization", false, t0, 0.2, "cpu", cpu, "state", "system")
	}
	point(ms, "system.cpu.utilization", false, t0, 0.9, "cpu", "cpu1", "state", "user") // cpu1 busier
	got, _, _ := entries(t, md)
	// cpu0: 50 % busy; cpu1: 140 % of its points (0.3+0.2+0.9) → mean (0.5+1.4)/2.
	if len(got) != 1 || !near(got["system/cpu.percent"], 95) {
		t.Fatalf("got %v, want only system/cpu.percent = 95", got)
	}
}

func TestNetworkBytesAreSummedOverDevicesWithoutLoopbackAndARateIsNamedPerSecond(t *testing.T) {
	md, ms := resource(hostScope, nil)
	point(ms, "system.network.io", false, t0, 1<<20, "device", "eth0", "direction", "receive")
	point(ms, "system.network.io", false, t0, 3<<20, "device", "eth1", "direction", "receive")
	point(ms, "system.network.io", false, t0, 50<<20, "device", "lo", "direction", "receive")
	point(ms, "system.network.io", false, t0, 2<<20, "device", "eth0", "direction", "transmit")
	got, _, _ := entries(t, md)
	want := map[string]float64{"system/network.recv_mib_per_s": 4, "system/network.sent_mib_per_s": 2}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestACounterThatArrivesAsARunningTotalKeepsTheTotalsName(t *testing.T) {
	md, ms := resource(hostScope, nil)
	point(ms, "system.disk.io", true, t0, 10<<20, "device", "sda", "direction", "read")
	point(ms, "system.disk.io", true, t0, 5<<20, "device", "sda", "direction", "write")
	got, _, _ := entries(t, md)
	want := map[string]float64{"system/disk.read_mib": 10, "system/disk.write_mib": 5}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestMemoryKeepsOnlyTheUsedStateAsAPercentAndMiB(t *testing.T) {
	md, ms := resource(hostScope, nil)
	point(ms, "system.memory.utilization", false, t0, 0.25, "state", "used")
	point(ms, "system.memory.utilization", false, t0, 0.75, "state", "free")
	point(ms, "system.memory.usage", false, t0, 512<<20, "state", "used")
	point(ms, "system.memory.usage", false, t0, 1536<<20, "state", "free")
	got, _, _ := entries(t, md)
	want := map[string]float64{"system/memory.percent": 25, "system/memory.used_mib": 512}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAGPUKeepsItsIndexAndHostAndGetsItsMemoryTotalAndShare(t *testing.T) {
	md, ms := resource(promScope, map[string]string{"service.instance.id": "10.0.0.5:9400", "service.name": "dcgm"})
	labels := func(gpu string) []string {
		return []string{"gpu", gpu, "UUID", "GPU-" + gpu, "device", "nvidia" + gpu, "modelName", "NVIDIA H100 80GB HBM3",
			"Hostname", "node-1", "pod", "trainer-a-0", "namespace", "rl", "container", "trainer"}
	}
	point(ms, "DCGM_FI_DEV_GPU_UTIL", false, t0, 87, labels("0")...)
	point(ms, "DCGM_FI_DEV_FB_USED", false, t0, 20000, labels("0")...)
	point(ms, "DCGM_FI_DEV_FB_FREE", false, t0, 60000, labels("0")...)
	point(ms, "DCGM_FI_DEV_POWER_USAGE", false, t0, 412.5, labels("0")...)
	point(ms, "DCGM_FI_DEV_GPU_TEMP", false, t0, 61, labels("0")...)
	point(ms, "DCGM_FI_DEV_GPU_UTIL", false, t0, 12, labels("1")...)
	got, _, _ := entries(t, md)
	want := map[string]float64{
		"system/gpu.util_percent{gpu=0,host=node-1}":     87,
		"system/gpu.memory_used_mib{gpu=0,host=node-1}":  20000,
		"system/gpu.memory_total_mib{gpu=0,host=node-1}": 80000,
		"system/gpu.memory_percent{gpu=0,host=node-1}":   25,
		"system/gpu.power_w{gpu=0,host=node-1}":          412.5,
		"system/gpu.temp_c{gpu=0,host=node-1}":           61,
		"system/gpu.util_percent{gpu=1,host=node-1}":     12,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestTheResourcesHostNameWinsOverAPointsHostnameLabel(t *testing.T) {
	md, ms := resource(promScope, map[string]string{"host.name": "gpu-node-7"})
	point(ms, "DCGM_FI_DEV_GPU_TEMP", false, t0, 61, "gpu", "3", "Hostname", "dcgm-pod-xyz")
	got, _, _ := entries(t, md)
	if _, ok := got["system/gpu.temp_c{gpu=3,host=gpu-node-7}"]; !ok || len(got) != 1 {
		t.Fatalf("got %v", got)
	}
}

func TestPointsOfOneScrapeWithinHalfASecondShareOneRowAndTheNextScrapeGetsItsOwn(t *testing.T) {
	md, ms := resource(hostScope, nil)
	point(ms, "system.memory.utilization", false, t0, 0.5, "state", "used")
	point(ms, "process.threads", false, t0+3e6, 12)             // 3 ms later: another scraper
	point(ms, "system.cpu.load_average.1m", false, t0+4e8, 1.5) // still within the window
	point(ms, "system.memory.utilization", false, t0+15e9, 0.6, "state", "used")
	res := Translate(md.ResourceMetrics().At(0), nil, "")
	times := map[int64]int{}
	for _, m := range res.Metrics.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().All() {
		for _, dp := range m.Gauge().DataPoints().All() {
			times[int64(dp.Timestamp()-t0)]++
		}
	}
	want := map[int64]int{0: 3, 15e9: 1}
	if !maps.Equal(times, want) {
		t.Fatalf("points by time since the first: %v, want %v", times, want)
	}
}

func TestAFailedScrapeNamesItsTargetAndGivesNoKey(t *testing.T) {
	md, ms := resource(promScope, map[string]string{"service.name": "vllm", "service.instance.id": "127.0.0.1:8000"})
	point(ms, "up", false, t0, 0)
	point(ms, "scrape_duration_seconds", false, t0, 0.01)
	got, _, res := entries(t, md)
	if len(got) != 0 || res.Points != 0 {
		t.Fatalf("a failed scrape gave keys: %v", got)
	}
	if !slices.Equal(res.FailedScrapes, []string{"vllm/127.0.0.1:8000"}) {
		t.Fatalf("failed scrapes %v", res.FailedScrapes)
	}

	md, ms = resource(promScope, map[string]string{"service.name": "vllm", "service.instance.id": "127.0.0.1:8000"})
	point(ms, "up", false, t0, 1)
	if _, _, res := entries(t, md); len(res.FailedScrapes) != 0 {
		t.Fatalf("a scrape that worked counted as failed: %v", res.FailedScrapes)
	}
}

func TestAMetricWithoutARecipeKeepsItsNameAndLabelsButTheScrapesOwnUnderSystem(t *testing.T) {
	md, ms := resource(promScope, nil)
	point(ms, "DCGM_FI_DEV_SM_CLOCK", false, t0, 1980, "gpu", "0", "UUID", "GPU-0", "pod", "p", "namespace", "n")
	point(ms, "node_load1", false, t0, 0.7)
	got, _, _ := entries(t, md)
	want := map[string]float64{"system/DCGM_FI_DEV_SM_CLOCK{gpu=0}": 1980, "system/node_load1": 0.7}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAVLLMLatencyHistogramKeepsItsBucketsUnderItsShortName(t *testing.T) {
	md, ms := resource(promScope, nil)
	m := ms.AppendEmpty()
	m.SetName("vllm:time_to_first_token_seconds")
	m.SetEmptyHistogram().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	dp := m.Histogram().DataPoints().AppendEmpty()
	dp.SetTimestamp(t0)
	dp.SetCount(10)
	dp.SetSum(2.5)
	dp.ExplicitBounds().FromRaw([]float64{0.1, 0.5, 1})
	dp.BucketCounts().FromRaw([]uint64{4, 5, 1, 0})
	dp.Attributes().PutStr("model_name", "Qwen/Qwen3-8B")
	dp.Attributes().PutStr("engine", "0")
	res := Translate(md.ResourceMetrics().At(0), nil, "")
	out := res.Metrics.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics()
	if out.Len() != 1 || out.At(0).Name() != "system/vllm.ttft_s" || out.At(0).Type() != pmetric.MetricTypeHistogram {
		t.Fatalf("got %d metrics, first %q", out.Len(), out.At(0).Name())
	}
	h := out.At(0).Histogram()
	got := h.DataPoints().At(0)
	if h.AggregationTemporality() != pmetric.AggregationTemporalityDelta || got.Count() != 10 || got.BucketCounts().Len() != 4 {
		t.Fatal("the histogram's point was not kept as it was")
	}
	if _, ok := got.Attributes().Get("model_name"); ok {
		t.Fatal("model_name was kept")
	}
	if v, _ := got.Attributes().Get("engine"); v.Str() != "0" {
		t.Fatal("engine was dropped")
	}
}

func TestNamedDataComesThroughTranslateAgainUnchanged(t *testing.T) {
	md, ms := resource(hostScope, nil)
	point(ms, "system.memory.utilization", false, t0, 0.5, "state", "used")
	point(ms, "DCGM_FI_DEV_GPU_UTIL", false, t0, 40, "gpu", "0", "Hostname", "n1")
	first, _, once := entries(t, md)
	again, _, _ := entries(t, once.Metrics)
	if !maps.Equal(first, again) {
		t.Fatalf("translated twice: %v, once: %v", again, first)
	}
}

func TestTheResourcesOfOneTickMakeOneRowOfTheirRun(t *testing.T) {
	rows := NewRows(8)
	times := map[string][]int64{}
	translate := func(key string, at int64) {
		md, ms := resource(hostScope, nil)
		point(ms, "process.threads", false, t0+pcommon.Timestamp(at), 1)
		res := Translate(md.ResourceMetrics().At(0), rows, key)
		dp := res.Metrics.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0)
		times[key] = append(times[key], int64(dp.Timestamp()-t0))
	}
	translate("run-a", 0)
	translate("run-a", 7e6)    // the next scraper of the tick
	translate("run-b", 9e6)    // another run's own row
	translate("run-a", 15e9)   // the next tick
	translate("run-a", 15.2e9) // its process scraper, late
	translate("run-a", 3e6)    // a retry of the first tick's
	want := map[string][]int64{"run-a": {0, 0, 15e9, 15e9, 3e6}, "run-b": {9e6}}
	if !maps.EqualFunc(times, want, slices.Equal[[]int64]) {
		t.Fatalf("row times %v, want %v", times, want)
	}
}

func TestAProcesssKeysNameItsPIDAndExecutable(t *testing.T) {
	md, ms := resource(hostScope, map[string]string{"process.pid": "4242", "process.executable.name": "python3"})
	point(ms, "process.memory.usage", false, t0, 256<<20)
	got, _, _ := entries(t, md)
	want := map[string]float64{"system/proc.rss_mib{pid=4242,process=python3}": 256}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

package e2e

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/scrapetest"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// ambientConfig is a node's collector for the ambient tests: online, its
// own metrics served on ${env:PRIME_METRICS_PORT}, a short grace.
func ambientConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-e2e", FinalizeGrace: "2s", SelfMetrics: true, LogsUnsampled: true,
		Queue: queueParams{Enabled: true, NumConsumers: 2, FlushTimeout: "200ms"},
	})
}

// ambientRig is a node's collector against the fake platform, with
// overlays and the env they read; its own metrics on metricsPort.
type ambientRig struct {
	platform    *rfttest.Server
	c           *collector
	addr        string // its OTLP/HTTP receiver
	metricsPort string
}

func startAmbientRig(t *testing.T, otelcol string, overlays []string, env ...string) ambientRig {
	t.Helper()
	r := ambientRig{platform: rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}}), addr: freeAddr(t)}
	t.Cleanup(r.platform.Close)
	_, r.metricsPort, _ = strings.Cut(freeAddr(t), ":")
	r.c = startCollectorWith(t, otelcol, ambientConfig(t), overlays, append([]string{
		"PRIME_OTLP_HTTP=" + r.addr, "PRIME_API_BASE=" + r.platform.BaseURL() + "/rft", "PRIME_API_KEY=" + e2eKey,
		"PRIME_METRICS_PORT=" + r.metricsPort, "PRIME_SYSTEM_INTERVAL=1s"}, env...)...)
	return r
}

// completed waits for n runs, all completed, and returns them.
func (r ambientRig) completed(t *testing.T, n int) []rfttest.Run {
	t.Helper()
	eventually(t, "the runs' close-outs", func() bool {
		runs := r.platform.Runs()
		done := 0
		for _, run := range runs {
			if run.Status == rfttest.StatusCompleted {
				done++
			}
		}
		return len(runs) == n && done == n
	}, r.c.out.String)
	return r.platform.Runs()
}

// rejected is the collector's count of records rejected for reason.
func (r ambientRig) rejected(t *testing.T, reason string) float64 {
	t.Helper()
	return scrapeCounters(t, r.c, r.metricsPort).sum("otelcol_exporter_prime_records_rejected", "reason", reason)
}

// standIn serves a recorded /metrics text on a free loopback port.
func standIn(t *testing.T, text []byte, seed int64) *scrapetest.Server {
	t.Helper()
	s, err := scrapetest.New(text, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(freeAddr(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func waitScrapes(t *testing.T, c *collector, s *scrapetest.Server, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.WaitScrapes(ctx, s.Scrapes()+n); err != nil {
		fatalf(t, c, "the collector did not scrape the stand-in %d more times: %v", n, err)
	}
}

// systemKeys are the run's time-keyed keys, and the earliest time a row
// holds one.
func systemKeys(run rfttest.Run) (map[string]bool, float64) {
	keys, first := map[string]bool{}, 0.0
	for at, row := range run.TimeMetrics {
		for k := range row {
			if strings.HasPrefix(k, "system/") {
				keys[k] = true
				if first == 0 || at < first {
					first = at
				}
			}
		}
	}
	return keys, first
}

func runByName(t *testing.T, c *collector, platform *rfttest.Server, name string) rfttest.Run {
	t.Helper()
	for _, r := range platform.Runs() {
		if r.Spec["name"] == name {
			return r
		}
	}
	fatalf(t, c, "no run named %s among %d", name, len(platform.Runs()))
	return rfttest.Run{}
}

func TestTwoTrainerPodsOnOneNodeEachGetOnlyTheirOwnGPUs(t *testing.T) {
	otelcol, trainer := binaries(t)
	// dcgm-exporter's text for one node's 4 GPUs: 0 and 1 held by pod
	// trainer-a-0, 2 and 3 by trainer-b-0 (internal/testkit/scrapetest/testdata).
	dcgm := standIn(t, scrapetest.DCGM4GPU2Pods, 1)
	// A node's collector: no run key of its own, GPUs bound by pod.
	rig := startAmbientRig(t, otelcol, []string{"deploy/gpu-metrics.yaml"}, "PRIME_DCGM_ENDPOINT="+dcgm.Addr())
	platform, c, addr := rig.platform, rig.c, rig.addr

	waitScrapes(t, c, dcgm, 3)
	if n := len(platform.Runs()); n != 0 {
		fatalf(t, c, "GPU metrics with no trainer made %d runs", n)
	}
	trainersStart := float64(time.Now().UnixNano()) / 1e9
	for _, pod := range []string{"a", "b"} {
		runTrainer(t, trainer, addr, "-run-key", "gpu-run-"+pod, "-run-name", "gpu-run-"+pod, "-pod", "rl/trainer-"+pod+"-0",
			"-steps", "8", "-step-delay", "400ms", "-eval-every", "0")
	}
	rig.completed(t, 2)

	gpuOf := regexp.MustCompile(`^system/gpu\.(util_percent|memory_used_mib|memory_total_mib|memory_percent|power_w|temp_c|memory_util_percent|engine_active_percent)\{gpu=(\d),host=i-030791dc5a37cd257\}$`)
	for pod, want := range map[string][]string{"a": {"0", "1"}, "b": {"2", "3"}} {
		run := runByName(t, c, platform, "gpu-run-"+pod)
		keys, first := systemKeys(run)
		gpus, names := map[string]bool{}, map[string]bool{}
		for k := range keys {
			m := gpuOf.FindStringSubmatch(k)
			if m == nil {
				fatalf(t, c, "run %s has an unexpected key %q", pod, k)
			}
			names[m[1]], gpus[m[2]] = true, true
		}
		if got := slices.Sorted(maps.Keys(gpus)); !slices.Equal(got, want) {
			fatalf(t, c, "run %s has GPUs %v, want only %v", pod, got, want)
		}
		for _, name := range []string{"util_percent", "memory_used_mib", "memory_total_mib", "memory_percent", "power_w", "temp_c"} {
			if !names[name] {
				fatalf(t, c, "run %s has no gpu.%s: %v", pod, name, slices.Sorted(maps.Keys(keys)))
			}
		}
		if pod == "a" && first >= trainersStart {
			fatalf(t, c, "run a's first GPU row is at %.3f, after its trainer started (%.3f): what was scraped before the run opened did not join it", first, trainersStart)
		}
		for at, row := range run.TimeMetrics {
			if total := row["system/gpu.memory_total_mib{gpu="+want[0]+",host=i-030791dc5a37cd257}"]; total != 0 && total != 22563 {
				fatalf(t, c, "run %s at %.3f: GPU memory total %v, want the L4's 22563 MiB", pod, at, total)
			}
		}
	}
	if n := len(platform.Runs()); n != 2 {
		fatalf(t, c, "%d runs, want the trainers' 2", n)
	}
}

func TestAVLLMServersMetricsGiveItsRunKVCacheQueueTokenRatesAndLatencyPercentiles(t *testing.T) {
	otelcol, trainer := binaries(t)
	// A vLLM V1 server's recorded text, served so that its counters and
	// histograms advance between scrapes.
	vllm := standIn(t, scrapetest.VLLMV1, 2)
	rig := startAmbientRig(t, otelcol, []string{"deploy/vllm-metrics.yaml"}, "PRIME_VLLM_ENDPOINT="+vllm.Addr(), "PRIME_RUN_KEY=vllm-run")
	c := rig.c

	// The prometheus receiver's first scrapes come a few seconds apart
	// (its discovery settles); these wait for the run.
	waitScrapes(t, c, vllm, 3)
	runTrainer(t, trainer, rig.addr, "-run-key", "vllm-run", "-steps", "20", "-step-delay", "400ms", "-eval-every", "0")
	run := rig.completed(t, 1)[0]
	keys, _ := systemKeys(run)
	seen := func(key string) (positive bool) {
		for _, row := range run.TimeMetrics {
			if v, ok := row[key]; ok && v > 0 {
				return true
			}
		}
		return false
	}
	for _, key := range []string{
		"system/vllm.kv_cache_percent{engine=0}", "system/vllm.requests_running{engine=0}", "system/vllm.requests_waiting{engine=0}",
		"system/vllm.prompt_tokens_per_s{engine=0}", "system/vllm.generation_tokens_per_s{engine=0}",
	} {
		if !keys[key] {
			fatalf(t, c, "the run has no %s; its keys: %v", key, slices.Sorted(maps.Keys(keys)))
		}
	}
	for _, key := range []string{"system/vllm.prompt_tokens_per_s{engine=0}", "system/vllm.generation_tokens_per_s{engine=0}"} {
		if !seen(key) {
			fatalf(t, c, "%s was never above 0 while the server's counters grew", key)
		}
	}
	for _, h := range []string{"vllm.ttft_s", "vllm.e2e_latency_s", "vllm.itl_s", "vllm.queue_time_s"} {
		for _, q := range []string{"p50", "p90", "p99"} {
			key := "system/" + h + "{engine=0}/" + q
			if !seen(key) {
				fatalf(t, c, "the run has no %s above 0; its keys: %v", key, slices.Sorted(maps.Keys(keys)))
			}
		}
		// A histogram's percentiles are ordered, within one interval.
		for at, row := range run.TimeMetrics {
			p50, ok50 := row["system/"+h+"{engine=0}/p50"]
			p99, ok99 := row["system/"+h+"{engine=0}/p99"]
			if ok50 && ok99 && p50 > p99 {
				fatalf(t, c, "%s at %.3f: p50 %v > p99 %v", h, at, p50, p99)
			}
		}
	}
	for k := range keys {
		if !strings.HasPrefix(k, "system/vllm.") {
			fatalf(t, c, "the shipped vLLM config let %q through", k)
		}
	}
}

func TestAScrapeTargetThatIsDownOrAnswersGarbageIsCountedAndTheRunFlowsAsBefore(t *testing.T) {
	otelcol, trainer := binaries(t)
	vllm := standIn(t, scrapetest.VLLMV1, 3)
	rig := startAmbientRig(t, otelcol, []string{"deploy/vllm-metrics.yaml"}, "PRIME_VLLM_ENDPOINT="+vllm.Addr(), "PRIME_RUN_KEY=flaky-run")
	c := rig.c
	failed := func() float64 { return rig.rejected(t, "scrape_failed") }
	if err := vllm.SetMode(scrapetest.Garbage); err != nil {
		t.Fatal(err)
	}
	waitScrapes(t, c, vllm, 2)
	eventually(t, "garbage counted as failed scrapes", func() bool { return failed() >= 2 }, c.out.String)
	if err := vllm.SetMode(scrapetest.Down); err != nil {
		t.Fatal(err)
	}
	before := failed()
	eventually(t, "a down target counted as failed scrapes", func() bool { return failed() >= before+2 }, c.out.String)
	if err := vllm.SetMode(scrapetest.Normal); err != nil {
		t.Fatal(err)
	}

	runTrainer(t, trainer, rig.addr, "-run-key", "flaky-run", "-steps", "8", "-step-delay", "300ms", "-eval-every", "0")
	run := rig.completed(t, 1)[0]
	for step := int64(1); step <= 8; step++ {
		if _, ok := run.Metrics[step]["loss"]; !ok {
			fatalf(t, c, "step %d lost its loss while a scrape target failed", step)
		}
	}
	if !strings.Contains(c.out.String(), "A scrape of an ambient target failed") {
		fatalf(t, c, "no log line names the failed scrapes")
	}
	if keys, _ := systemKeys(run); !keys["system/vllm.kv_cache_percent{engine=0}"] {
		fatalf(t, c, "once the target answered again, its metrics did not join the run: %v", slices.Sorted(maps.Keys(keys)))
	}
}

func TestALabelThatChangesEveryScrapeStopsAtTheRunsKeyCapWithACount(t *testing.T) {
	otelcol, trainer := binaries(t)
	vllm := standIn(t, scrapetest.VLLMV1, 4)
	if err := vllm.SetChurn("vllm:engine_sleep_state", "request_id", 1); err != nil {
		t.Fatal(err)
	}
	if err := vllm.SetMode(scrapetest.ChurningLabels); err != nil {
		t.Fatal(err)
	}
	// A gauge whose label changes every scrape (the prometheus receiver
	// drops a new counter series' first point, so a counter's churn would
	// barely show), under a cap of 5 keys: the first scrape's 4 (the
	// steady gauge, the churning one's 3 lines) and one of the next's,
	// whatever order the receiver gives a scrape's series in.
	overlay := filepath.Join(t.TempDir(), "churn.yaml")
	if err := os.WriteFile(overlay, []byte(`
receivers:
  prometheus/churn:
    config:
      scrape_configs:
        - job_name: vllm
          scrape_interval: 1s
          static_configs: [{targets: ["${env:PRIME_VLLM_ENDPOINT}"]}]
          metric_relabel_configs:
            - {source_labels: [__name__], regex: "vllm:engine_sleep_state|vllm:num_requests_running", action: keep}
processors:
  resource/churn:
    attributes: [{key: prime.run.key, value: churn-run, action: upsert}]
exporters:
  prime:
    ambient: {max_keys: 5}
service:
  pipelines:
    metrics/churn:
      receivers: [prometheus/churn]
      processors: [resource/churn]
      exporters: [prime]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	rig := startAmbientRig(t, otelcol, []string{overlay}, "PRIME_VLLM_ENDPOINT="+vllm.Addr())
	c := rig.c
	waitScrapes(t, c, vllm, 3)
	runTrainer(t, trainer, rig.addr, "-run-key", "churn-run", "-steps", "12", "-step-delay", "400ms", "-eval-every", "0")
	run := rig.completed(t, 1)[0]
	keys, _ := systemKeys(run)
	if cs := scrapeCounters(t, c, rig.metricsPort); len(keys) != 5 {
		t.Logf("rejected %v", cs.byReason("otelcol_exporter_prime_records_rejected"))
		fatalf(t, c, "the run holds %d ambient keys, want the cap's 5: %v", len(keys), slices.Sorted(maps.Keys(keys)))
	}
	if !keys["system/vllm.requests_running{engine=0}"] {
		fatalf(t, c, "the steady key was crowded out: %v", slices.Sorted(maps.Keys(keys)))
	}
	capped := rig.rejected(t, "ambient_key_cap")
	if capped < 2 {
		fatalf(t, c, "ambient_key_cap counted %v, want a key dropped at each later scrape", capped)
	}
	if !strings.Contains(c.out.String(), "ambient::max_keys") {
		fatalf(t, c, "no log line names the cap")
	}
	for step := int64(1); step <= 12; step++ {
		if _, ok := run.Metrics[step]["loss"]; !ok {
			fatalf(t, c, "step %d lost its loss to the cap", step)
		}
	}
}

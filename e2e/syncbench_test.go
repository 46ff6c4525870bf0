//go:build syncbench

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The sync's throughput next to the exporter's online path on the same
// run: 100 steps × 100 episodes of ~2 KB, a sample table every step. Not
// in CI (scripts/sync-bench.sh runs it): it measures, it asserts nothing
// about speed.
const (
	benchSteps    = "100"
	benchEpisodes = "100"
)

var benchTrainer = []string{"-steps", benchSteps, "-episodes-per-step", benchEpisodes, "-episode-text-bytes", "2000",
	"-step-delay", "0s", "-eval-every", "0", "-run-key", "bench-run"}

const benchOnlineConfig = `
receivers:
  otlp:
    protocols:
      http:
        endpoint: ${env:PRIME_OTLP_HTTP}
exporters:
  prime:
    endpoint: ${env:PRIME_API_BASE}
    api_key: ${env:PRIME_API_KEY}
    team_id: team-e2e
    finalize_grace: 1s
    samples:
      step_interval: 1
    sending_queue:
      batch:
        flush_timeout: 200ms
service:
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [prime]
    logs:
      receivers: [otlp]
      exporters: [prime]
  telemetry:
    metrics:
      level: none
`

const benchOfflineConfig = `
receivers:
  otlp:
    protocols:
      http:
        endpoint: ${env:PRIME_OTLP_HTTP}
exporters:
  prime:
    mode: offline
    directory: ${env:PRIME_OFFLINE_DIR}
    team_id: team-e2e
    finalize_grace: 1s
    samples:
      step_interval: 1
    sending_queue:
      batch:
        flush_timeout: 200ms
service:
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [prime]
    logs:
      receivers: [otlp]
      exporters: [prime]
  telemetry:
    metrics:
      level: none
`

func TestSyncThroughput(t *testing.T) {
	otelcol, trainer := binaries(t)

	// Online: trainer → collector → platform, from the trainer's start to
	// the close-out.
	online := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer online.Close()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, benchOnlineConfig,
		"PRIME_OTLP_HTTP="+addr, "PRIME_API_BASE="+online.BaseURL(), "PRIME_API_KEY="+e2eKey)
	start := time.Now()
	runTrainer(t, trainer, addr, benchTrainer...)
	eventually(t, "the online run's close-out", func() bool {
		runs := online.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	}, c.out.String)
	onlineTime := time.Since(start)
	c.stop()
	onlineBytes, onlineRows := objectBytes(online.Runs()[0])

	// Offline, then prime-sync of the finished run.
	dir := t.TempDir()
	addr = freeAddr(t)
	c = startCollector(t, otelcol, benchOfflineConfig, "PRIME_OTLP_HTTP="+addr, "PRIME_OFFLINE_DIR="+dir)
	runTrainer(t, trainer, addr, benchTrainer...)
	runDir := waitEnded(t, dir, c.out.String)
	c.stop()

	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	start = time.Now()
	res := runSync(t, platform, runDir)
	syncTime := time.Since(start)
	if res.code != 0 {
		t.Fatalf("sync failed:\n%s", res)
	}
	run := checkSynced(t, platform, runDir, res, 0)
	syncBytes, syncRows := objectBytes(run)
	metricsInfo, err := os.Stat(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}

	// Where the sync's time went, from the platform's side.
	reqs := platform.Requests()
	phase := map[string][2]time.Time{}
	for _, r := range reqs {
		key := r.Method + " " + filepath.Base(r.Path)
		if r.Method == "PUT" {
			key = "PUT object"
		}
		p, ok := phase[key]
		if !ok {
			p[0] = r.Time
		}
		p[1] = r.Time
		phase[key] = p
	}
	for k, p := range phase {
		t.Logf("  %-22s first at +%s, last at +%s", k, p[0].Sub(start).Round(time.Millisecond), p[1].Sub(start).Round(time.Millisecond))
	}

	mbps := func(b int64, d time.Duration) float64 { return float64(b) / 1e6 / d.Seconds() }
	t.Logf("online  (trainer → collector → platform): %d episodes, %d objects, %.1f MB in %s: %.1f MB/s, %.0f episodes/s",
		onlineRows, len(online.Runs()[0].Objects), float64(onlineBytes)/1e6, onlineTime.Round(time.Millisecond), mbps(onlineBytes, onlineTime), float64(onlineRows)/onlineTime.Seconds())
	t.Logf("prime-sync (offline directory → platform): %d episodes, %d objects, %.1f MB + %d B of metrics in %s: %.1f MB/s, %.0f episodes/s",
		syncRows, len(run.Objects), float64(syncBytes)/1e6, metricsInfo.Size(), syncTime.Round(time.Millisecond), mbps(syncBytes+metricsInfo.Size(), syncTime), float64(syncRows)/syncTime.Seconds())
}

// objectBytes sums a run's confirmed object bytes and rows.
func objectBytes(run rfttest.Run) (size int64, rows int64) {
	for _, o := range run.Objects {
		if !o.Confirmed {
			continue
		}
		size += int64(len(o.Body))
		if f, err := parquet.OpenFile(bytes.NewReader(o.Body), int64(len(o.Body))); err == nil {
			rows += f.NumRows()
		}
	}
	return size, rows
}

//go:build syncbench

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// benchParams is the same collector for both paths: a sample table every
// step, a short grace, batching in the queue.
func benchParams(offline bool) collectorParams {
	return collectorParams{
		Offline: offline, Team: "team-e2e", FinalizeGrace: "1s", StepInterval: "1",
		Queue: queueParams{FlushTimeout: "200ms"},
	}
}

func TestSyncThroughput(t *testing.T) {
	otelcol, trainer := binaries(t)

	// Online: trainer → collector → platform, from the trainer's start to
	// the close-out.
	online := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer online.Close()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, collectorConfig(t, "node", benchParams(false)),
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
	c = startCollector(t, otelcol, collectorConfig(t, "node", benchParams(true)), "PRIME_OTLP_HTTP="+addr, "PRIME_OFFLINE_DIR="+dir)
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

// prime-sync over a sweep of offline runs, one at a time and four at once:
// 16 runs of 5,000 episodes (50 steps × 100 episodes of ~2 KB, a sample
// object every step). The fake platform holds every request (storage PUTs
// included) for platformLatency before serving it: the loopback has no
// round trip, and a real platform is remote, so without it the benchmark
// would measure only the CPU of two shared cores
// (PRIME_SYNC_BENCH_LATENCY, a Go duration, sets another). Objects are
// discarded after their rows are counted (rfttest's DiscardObjects).
const (
	sweepRuns       = 16
	sweepSteps      = 50
	platformLatency = 30 * time.Millisecond
)

var sweepTrainer = []string{"-episodes-per-step", "100", "-episode-text-bytes", "2000", "-step-delay", "0s", "-eval-every", "0"}

func TestParallelRunsSyncSpeedUp(t *testing.T) {
	start := time.Now()
	runDirs := trainOfflineRunsWith(t, collectorConfig(t, "node", benchParams(true)), sweepRuns, sweepSteps, sweepTrainer...)
	offline := filepath.Dir(runDirs[0])
	t.Logf("trained %d offline runs in %s", len(runDirs), time.Since(start).Round(time.Second))
	var objects, lines int
	for _, d := range runDirs {
		objects += len(offlineObjectNames(t, d))
		_, _, posts := offlineMetrics(t, d)
		lines += posts
	}

	latency := platformLatency
	if v := os.Getenv("PRIME_SYNC_BENCH_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			t.Fatalf("PRIME_SYNC_BENCH_LATENCY=%q: want a duration such as 30ms", v)
		}
		latency = d
	}
	rounds := 1
	if v := os.Getenv("PRIME_SYNC_BENCH_ROUNDS"); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil || rounds < 1 {
			t.Fatalf("PRIME_SYNC_BENCH_ROUNDS=%q: want a count of at least 1", v)
		}
	}
	wall := map[int][]time.Duration{}
	for round := 1; round <= rounds; round++ {
		for _, n := range []int{1, 4} {
			// A fresh copy: no journal, so every run is synced whole.
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(offline)); err != nil {
				t.Fatal(err)
			}
			platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, Latency: latency, DiscardObjects: true})
			load := loadAverage()
			began := time.Now()
			res := runSync(t, platform, "--parallel-runs", itoa(n), dir)
			took := time.Since(began)
			if res.code != 0 {
				t.Fatalf("--parallel-runs %d failed:\n%s", n, res)
			}
			checkSweep(t, platform, objects, lines, res)
			platform.Close()
			wall[n] = append(wall[n], took)
			t.Logf("round %d: --parallel-runs %d: %s (%d requests; load average before %s, after %s)",
				round, n, took.Round(10*time.Millisecond), len(platform.Requests()), load, loadAverage())
		}
	}
	best := func(ds []time.Duration) time.Duration { return slices.Min(ds) }
	t.Logf("%d runs × %d episodes (%d objects, %d metrics posts), platform latency %s per request:",
		sweepRuns, sweepSteps*100, objects, lines, latency)
	t.Logf("  --parallel-runs 1: %s", fmtDurations(wall[1]))
	t.Logf("  --parallel-runs 4: %s", fmtDurations(wall[4]))
	t.Logf("  speed-up (best of each): %.2f×", best(wall[1]).Seconds()/best(wall[4]).Seconds())
}

// checkSweep asserts the platform holds every run once: its metrics posts
// and objects, each object confirmed once with all its rows.
func checkSweep(t *testing.T, platform *rfttest.Server, objects, lines int, res syncResult) {
	t.Helper()
	runs := platform.Runs()
	var gotObjects, gotPosts int
	for _, r := range runs {
		gotPosts += r.MetricPosts
		for _, o := range r.Objects {
			if !o.Confirmed {
				t.Errorf("run %s: object %s put and never confirmed", r.ID, o.Key)
			}
			gotObjects++
		}
		if !r.Finalized {
			t.Errorf("run %s not closed out", r.ID)
		}
	}
	if len(runs) != sweepRuns || gotObjects != objects || gotPosts != lines {
		t.Fatalf("%d runs, %d objects, %d metrics posts on the platform; want %d, %d, %d\n%s",
			len(runs), gotObjects, gotPosts, sweepRuns, objects, lines, res)
	}
	if rows, want := platform.ConfirmedRows(), int64(sweepRuns*sweepSteps*100); rows != want {
		t.Fatalf("%d rows confirmed, want %d: every episode once", rows, want)
	}
}

// loadAverage is the 1-minute load average, or "?" off Linux.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(raw))[0]
}

func fmtDurations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Round(10 * time.Millisecond).String()
	}
	return strings.Join(parts, ", ")
}

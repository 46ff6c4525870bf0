package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// shutdownConfig is the persistent config with the grace period from the
// environment: long before the signal, so a close-out is pending when it
// comes, and short after the restart.
func shutdownConfig(t *testing.T) string {
	t.Helper()
	p := persistentParams()
	p.FinalizeGrace = "${env:PRIME_FINALIZE_GRACE}"
	return collectorConfig(t, "node", p)
}

// SIGTERM while one run has ended (its close-out waiting out the grace
// period) and another run's data is still on its way to a slow platform:
// the collector finishes the posts it started, closes out the ended run
// and exits cleanly; the open run goes on after a restart on the same
// storage, with every step and every episode exactly once. (A platform that
// fails rather than lags is the soak-tagged
// TestSIGTERMDuringAPlatformOutage…: it can take minutes.)
func TestSIGTERMWithRunsInFlightClosesOutEndedRunsExitsCleanlyAndARestartDeliversTheRest(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	addr := freeAddr(t)
	env := []string{
		"PRIME_OTLP_HTTP=" + addr, "PRIME_API_BASE=" + platform.BaseURL(), "PRIME_API_KEY=" + e2eKey,
		"PRIME_STORAGE_DIR=" + t.TempDir(),
	}
	dir := t.TempDir()
	manifest := func(name string) string { return filepath.Join(dir, name+".json") }
	first := startCollector(t, otelcol, shutdownConfig(t), append(env, "PRIME_FINALIZE_GRACE=1m")...)

	runTrainer(t, trainer, addr, "-run-key", "term-ended", "-run-name", "term-ended", "-steps", "6",
		"-step-delay", "5ms", "-manifest", manifest("term-ended"))
	eventually(t, "every step of the ended run", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Metrics) == 6
	}, first.out.String)
	// prime.run.end follows the last step's records; three batch flushes
	// later it has been read.
	time.Sleep(time.Second)

	// From now on the platform takes 300 ms per metrics post.
	const delayed = 40
	for range delayed {
		platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Delay: 300 * time.Millisecond})
	}
	runTrainer(t, trainer, addr, "-run-key", "term-open", "-run-name", "term-open", "-steps", "12", "-status", "none",
		"-step-delay", "5ms", "-manifest", manifest("term-open"))
	eventually(t, "the open run's first metrics post", func() bool { return platform.PendingFaults(rfttest.RouteMetrics) < delayed }, first.out.String)
	landedAtSignal := len(byName(platform)["term-open"].Metrics)
	begun := time.Now()
	first.stop()
	t.Logf("SIGTERM to exit: %s; open run's steps landed at the signal: %d of 12, at the exit: %d",
		time.Since(begun).Round(10*time.Millisecond), landedAtSignal, len(byName(platform)["term-open"].Metrics))
	if landedAtSignal == 12 {
		fatalf(t, first, "the open run had landed before the signal: the test proves nothing")
	}
	afterSignal := fromSignal(first.out.String())
	if ended := byName(platform)["term-ended"]; ended.Status != rfttest.StatusCompleted || !strings.Contains(afterSignal, "Closed out run") {
		fatalf(t, first, "the run that ended was not closed out during the shutdown (status %s)", ended.Status)
	}
	t.Logf("collector log from the signal on:\n%s", afterSignal)
	if !strings.Contains(afterSignal, "Shutdown complete.") {
		fatalf(t, first, "no clean shutdown in the log")
	}

	second := startCollector(t, otelcol, shutdownConfig(t), append(env, "PRIME_FINALIZE_GRACE=1s")...)
	runTrainer(t, trainer, addr, "-run-key", "term-open", "-run-name", "term-open", "-start-step", "13", "-steps", "20",
		"-step-delay", "5ms", "-manifest", manifest("term-open-2"))
	logs := func() string { return first.out.String() + "\n--- after the restart ---\n" + second.out.String() }
	eventually(t, "the open run's close-out after the restart", func() bool {
		return byName(platform)["term-open"].Status == rfttest.StatusCompleted
	}, logs)
	second.stop()

	runs := byName(platform)
	if len(runs) != 2 {
		t.Fatalf("want two runs across the restart, got %d\n%s", len(runs), logs())
	}
	sent := map[string]map[string]int64{
		"term-ended": readManifest(t, manifest("term-ended")).TrainByDispatch,
		"term-open":  readManifest(t, manifest("term-open")).TrainByDispatch,
	}
	for k, v := range readManifest(t, manifest("term-open-2")).TrainByDispatch {
		sent["term-open"][k] += v
	}
	for name, steps := range map[string]int64{"term-ended": 6, "term-open": 20} {
		run := runs[name]
		for step := int64(1); step <= steps; step++ {
			if _, ok := run.Metrics[step]["loss"]; !ok {
				t.Fatalf("%s: step %d's metrics were lost across the SIGTERM\n%s", name, step, logs())
			}
		}
		byStep := map[int64][][]byte{}
		for _, o := range run.Objects {
			if o.Confirmed {
				byStep[o.Step] = append(byStep[o.Step], o.Body)
			}
		}
		for step := int64(2); step <= steps; step += 2 {
			checkStepRows(t, run.ID, step, byStep[step], sent[name][strconv.FormatInt(step, 10)])
		}
	}
}

// byName indexes the platform's runs by the name the trainer gave them.
func byName(platform *rfttest.Server) map[string]rfttest.Run {
	out := map[string]rfttest.Run{}
	for _, r := range platform.Runs() {
		name, _ := r.Spec["name"].(string)
		out[name] = r
	}
	return out
}

// fromSignal is the collector's output from "Received signal" on.
func fromSignal(out string) string {
	if i := strings.Index(out, "Received signal"); i >= 0 {
		return out[i:]
	}
	return ""
}

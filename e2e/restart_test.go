package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The recommended production config: the run registry and the queue both on
// file_storage, batching inside the queue.
func persistentConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", persistentParams())
}

// persistentParams is persistentConfig's collector, for the tests that run
// it with one thing changed.
func persistentParams() collectorParams {
	return collectorParams{
		Team: "team-e2e", Storage: true, FinalizeGrace: "3s", StepInterval: "2",
		Retry: &retryParams{InitialInterval: "200ms", MaxInterval: "1s"},
		Queue: queueParams{Enabled: true, NumConsumers: 2, FlushTimeout: "300ms"},
	}
}

// kill stops the collector as kill -9 does: no shutdown, no drain.
func (c *collector) kill() {
	c.t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.t.Fatal("collector did not die")
	}
}

func TestAKilledCollectorRestartsFromItsStorageWithNothingLostOrDuplicated(t *testing.T) {
	// The kill lands at a different point of the run each time.
	for _, killAfter := range []int{1, 4, 9} {
		t.Run("after "+strconv.Itoa(killAfter)+" objects", func(t *testing.T) { killAndRestart(t, killAfter) })
	}
}

func killAndRestart(t *testing.T, killAfter int) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	// A slow platform keeps a backlog in the queue when the collector dies,
	// some of it in the middle of an upload.
	for i := 0; i < 16; i++ {
		platform.Inject(rfttest.RouteConfirm, rfttest.Fault{Delay: 250 * time.Millisecond})
		platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Delay: 100 * time.Millisecond})
	}
	addr := freeAddr(t)
	env := []string{
		"PRIME_OTLP_HTTP=" + addr, "PRIME_API_BASE=" + platform.BaseURL(), "PRIME_API_KEY=" + e2eKey,
		"PRIME_STORAGE_DIR=" + t.TempDir(),
	}
	dir := t.TempDir()
	first := startCollector(t, otelcol, persistentConfig(t), env...)
	runTrainer(t, trainer, addr, "-run-key", "restart-run", "-steps", "20", "-status", "none", "-step-delay", "5ms",
		"-manifest", filepath.Join(dir, "first.json"))
	// Die in the middle: the run exists and some objects are confirmed,
	// the rest is still queued or in flight.
	eventually(t, "the first objects of the run", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Objects) >= killAfter
	}, first.out.String)
	first.kill()
	landedBeforeKill := len(platform.Runs()[0].Objects)

	second := startCollector(t, otelcol, persistentConfig(t), env...)
	runTrainer(t, trainer, addr, "-run-key", "restart-run", "-start-step", "21", "-steps", "40", "-step-delay", "5ms",
		"-manifest", filepath.Join(dir, "second.json"))
	eventually(t, "the run's close-out after the restart", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	}, func() string { return first.out.String() + "\n--- after the restart ---\n" + second.out.String() })
	second.stop()

	runs := platform.Runs()
	if len(runs) != 1 {
		fatalf(t, second, "want exactly one run across the restart, got %d", len(runs))
	}
	run := runs[0]
	for step := int64(1); step <= 40; step++ {
		if _, ok := run.Metrics[step]["loss"]; !ok {
			fatalf(t, second, "step %d's metrics are missing after the restart", step)
		}
	}
	sent := [2]manifest{readManifest(t, filepath.Join(dir, "first.json")), readManifest(t, filepath.Join(dir, "second.json"))}
	byStep := map[int64][][]byte{}
	for _, o := range run.Objects {
		if o.Confirmed {
			byStep[o.Step] = append(byStep[o.Step], o.Body)
		}
	}
	for step := int64(2); step <= 40; step += 2 {
		key := strconv.FormatInt(step, 10)
		checkStepRows(t, run.ID, step, byStep[step], sent[0].TrainByDispatch[key]+sent[1].TrainByDispatch[key])
	}
	if landedBeforeKill >= len(run.Objects) {
		fatalf(t, second, "nothing was left to deliver after the kill (%d objects before, %d after): the test proves nothing", landedBeforeKill, len(run.Objects))
	}
	t.Logf("objects confirmed before the kill: %d of %d", landedBeforeKill, len(run.Objects))
	if !strings.Contains(second.out.String(), "Restored runs from storage") {
		fatalf(t, second, "the restarted collector did not restore its runs")
	}
}

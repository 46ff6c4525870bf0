package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// terminationGrace is what an orchestrator gives a process between SIGTERM
// and SIGKILL by default (Kubernetes' terminationGracePeriodSeconds); the
// collector itself has no shutdown deadline.
const terminationGrace = 30 * time.Second

// SIGTERM during a platform outage (every metrics post answered 503) with
// one run ended and one open: the collector exits within an orchestrator's
// grace, and a restart loses nothing.
func TestSIGTERMDuringAPlatformOutageExitsWithinTheGraceAndARestartLosesNothing(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	var outage atomic.Bool
	var refused atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if outage.Load() && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/rft/metrics") {
			refused.Add(1)
			http.Error(w, `{"detail":"outage"}`, http.StatusServiceUnavailable)
			return
		}
		platform.Handler().ServeHTTP(w, r)
	}))
	defer front.Close()
	outage.Store(true)

	addr := freeAddr(t)
	env := []string{
		"PRIME_OTLP_HTTP=" + addr, "PRIME_API_BASE=" + front.URL + "/api/v1", "PRIME_API_KEY=" + e2eKey,
		"PRIME_STORAGE_DIR=" + t.TempDir(),
	}
	dir := t.TempDir()
	pprofAddr := freeAddr(t)
	first := startCollector(t, otelcol, persistentPprofConfig(t), append(env, "PRIME_PPROF="+pprofAddr)...)
	var wg sync.WaitGroup
	for _, p := range []struct{ name, status string }{{"outage-ended", "completed"}, {"outage-open", "none"}} {
		wg.Go(func() {
			runTrainer(t, trainer, addr, "-run-key", p.name, "-run-name", p.name, "-steps", "30", "-status", p.status,
				"-step-delay", "5ms", "-manifest", filepath.Join(dir, p.name+".json"))
		})
	}
	wg.Wait()
	eventually(t, "metrics posts refused by the outage", func() bool { return refused.Load() >= 4 }, first.out.String)

	begun := time.Now()
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-first.done:
		t.Logf("SIGTERM to exit: %s (exit: %v)", time.Since(begun).Round(10*time.Millisecond), err)
		if err != nil {
			t.Errorf("the collector did not exit cleanly: %v", err)
		}
	case <-time.After(terminationGrace):
		t.Errorf("no exit %s after SIGTERM: an orchestrator kills the collector now; where it waits:\n%s",
			terminationGrace, exporterStacks(t, pprofAddr))
		first.kill()
	}
	atExit := byName(platform)
	t.Logf("at the exit: ended run %s with %d of 30 steps, open run %s with %d of 30 steps",
		atExit["outage-ended"].Status, len(atExit["outage-ended"].Metrics), atExit["outage-open"].Status, len(atExit["outage-open"].Metrics))
	t.Logf("collector log from the signal on:\n%s", fromSignal(first.out.String()))

	outage.Store(false)
	second := startCollector(t, otelcol, persistentPprofConfig(t), append(env, "PRIME_PPROF="+freeAddr(t))...)
	runTrainer(t, trainer, addr, "-run-key", "outage-open", "-run-name", "outage-open", "-start-step", "31", "-steps", "40",
		"-step-delay", "5ms", "-manifest", filepath.Join(dir, "outage-open-2.json"))
	logs := func() string { return first.out.String() + "\n--- after the restart ---\n" + second.out.String() }
	eventually(t, "both runs closed out after the restart", func() bool {
		runs := byName(platform)
		return runs["outage-ended"].Status == rfttest.StatusCompleted && runs["outage-open"].Status == rfttest.StatusCompleted
	}, logs)
	// The restored queue may still be delivering after the close-out.
	time.Sleep(3 * time.Second)
	second.stop()
	for name, steps := range map[string]int64{"outage-ended": 30, "outage-open": 40} {
		run := byName(platform)[name]
		var missing []int64
		for step := int64(1); step <= steps; step++ {
			if _, ok := run.Metrics[step]["loss"]; !ok {
				missing = append(missing, step)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s: the metrics of %d of %d steps were lost across the SIGTERM: %v", name, len(missing), steps, missing)
		}
	}
	if t.Failed() {
		t.Logf("restarted collector's log:\n%s", second.out.String())
	}
}

// persistentPprofConfig is persistentConfig with the pprof extension on
// ${env:PRIME_PPROF}, for the goroutine dumps.
func persistentPprofConfig(t *testing.T) string {
	t.Helper()
	p := persistentParams()
	p.Pprof = true
	return collectorConfig(t, "node", p)
}

// exporterStacks is the collector's goroutine dump, keeping the stacks that
// pass through the exporter or the exporter helper.
func exporterStacks(t *testing.T, pprofAddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/goroutine?debug=2")
	if err != nil {
		return "(no goroutine dump: " + err.Error() + ")"
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return "(no goroutine dump: " + err.Error() + ")"
	}
	var keep []string
	for g := range strings.SplitSeq(string(raw), "\n\n") {
		if strings.Contains(g, "primeexporter") || strings.Contains(g, "exporterhelper") {
			keep = append(keep, g)
		}
	}
	return strings.Join(keep, "\n\n")
}

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

const e2eKey = "sk-e2e-SECRET-31337"

// onlineConfig is a production-shaped config: the key and base from the
// environment, the sending queue on, and a fan-out to the debug exporter.
func onlineConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-e2e", RunID: "${env:RUN_ID:-}", FinalizeGrace: "3s", StepInterval: "2", Debug: true,
		Queue: queueParams{Enabled: true, NumConsumers: 4, FlushTimeout: "500ms"},
	})
}

const demoSteps = 12

func TestTheDemoRunLandsOnThePlatformThroughTheBuiltCollector(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, onlineConfig(t),
		"PRIME_OTLP_HTTP="+addr, "PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+e2eKey)

	manifestPath := filepath.Join(t.TempDir(), "manifest.json")
	runTrainer(t, trainer, addr, "-steps", itoa(demoSteps), "-run-key", "e2e-run", "-step-delay", "5ms", "-manifest", manifestPath)
	sent := readManifest(t, manifestPath)
	eventually(t, "the run's close-out", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	}, c.out.String)
	c.stop()

	runs := platform.Runs()
	if len(runs) != 1 {
		fatalf(t, c, "want exactly one run, got %d", len(runs))
	}
	run := runs[0]
	if !run.Finalized {
		fatalf(t, c, "a completed run is finalized, got %+v", run)
	}
	if got := run.Spec["base_model"]; got != "Qwen/Qwen3-0.6B" {
		fatalf(t, c, "base_model = %v", got)
	}
	if got := run.Spec["team_id"]; got != "team-e2e" {
		fatalf(t, c, "team_id = %v", got)
	}
	for step := int64(1); step <= demoSteps; step++ {
		m := run.Metrics[step]
		for _, key := range []string{"loss", "reward/mean", "reward/count", "lr"} {
			if _, ok := m[key]; !ok {
				fatalf(t, c, "step %d has no %q: %v", step, key, m)
			}
		}
	}
	byStep := map[int64][][]byte{}
	for _, o := range run.Objects {
		if !o.Confirmed {
			fatalf(t, c, "object %s was uploaded but never confirmed", o.Key)
		}
		if o.Step%2 != 0 {
			fatalf(t, c, "object for off-cadence step %d", o.Step)
		}
		byStep[o.Step] = append(byStep[o.Step], o.Body)
	}
	for step := int64(2); step <= demoSteps; step += 2 {
		checkStepRows(t, run.ID, step, byStep[step], sent.TrainByDispatch[itoa(int(step))])
	}
	out := c.out.String()
	if strings.Contains(out, e2eKey) {
		t.Fatal("the API key appears in the collector's output")
	}
	for _, want := range []string{"Created run", "/dashboard/training/" + run.ID, "Closed out run"} {
		if !strings.Contains(out, want) {
			fatalf(t, c, "collector output lacks %q", want)
		}
	}
}

func TestAHostedRunIsAttachedByRunIDAndNeverMarkedFailed(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, Prefix: "/api/internal"})
	defer platform.Close()
	platform.AddRun("run-hosted-1")
	addr := freeAddr(t)
	c := startCollector(t, otelcol, onlineConfig(t),
		"PRIME_OTLP_HTTP="+addr, "PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+e2eKey, "RUN_ID=run-hosted-1")

	runTrainer(t, trainer, addr, "-steps", "5", "-status", "failed", "-error", "OOM", "-step-delay", "5ms")
	eventually(t, "every step on the hosted run", func() bool {
		r, _ := platform.Run("run-hosted-1")
		return len(r.Metrics) == 5
	}, c.out.String)
	eventually(t, "the end of the attached run", func() bool {
		return strings.Contains(c.out.String(), "Attached run ended without completing")
	}, c.out.String)
	c.stop()

	if n := len(platform.Runs()); n != 1 {
		fatalf(t, c, "attaching creates no run; the platform has %d", n)
	}
	r, _ := platform.Run("run-hosted-1")
	if r.Status != rfttest.StatusRunning {
		fatalf(t, c, "the launcher owns failure marking; status = %s", r.Status)
	}
	for _, req := range platform.Requests() {
		if strings.HasSuffix(req.Path, "/external-runs") {
			fatalf(t, c, "a create request was made for an attached run")
		}
		if !strings.HasPrefix(req.Path, "/api/internal/") && !strings.HasPrefix(req.Path, "/storage/") {
			fatalf(t, c, "request outside the internal prefix: %s", req.Path)
		}
	}
}

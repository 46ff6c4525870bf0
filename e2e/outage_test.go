package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// outageConfig is production-shaped: the sending queue on, and
// retry_on_failure with its default of no time limit, trying often enough
// (max_interval) that recovery is quick; consumers is the queue's
// num_consumers.
// The long outage, with the default retry and kills, is longoutage_test.go.
func outageConfig(t *testing.T, consumers int) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-e2e", FinalizeGrace: "3s", StepInterval: "2",
		Retry: &retryParams{Enabled: true, InitialInterval: "1s", MaxInterval: "5s"},
		Queue: queueParams{Enabled: true, NumConsumers: consumers, FlushTimeout: "500ms"},
	})
}

const (
	outageSteps = 40
	// outageConsumers is the queue's num_consumers. With batching on,
	// exporterhelper reads the queue with one consumer and num_consumers
	// sizes the pool that sends the batches; each batch retries on its own
	// worker, so with more than one the batches land in whatever order
	// their back-offs end (measured: 4 give steps 21–40, 16–20, 11–15,
	// 6–10). One worker sends batch after batch, and a push stops at the
	// first failure that says the platform is down, so each signal's steps
	// land in order.
	outageConsumers = 1
)

// outageDuration is 2 minutes; PRIME_OUTAGE shortens it while working on
// the test.
func outageDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("PRIME_OUTAGE")
	if v == "" {
		return 2 * time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("PRIME_OUTAGE: %v", err)
	}
	return d
}

// consumers is outageConsumers; PRIME_OUTAGE_CONSUMERS overrides it, to
// see what the queue's concurrency does to the order of the posts.
func consumers(t *testing.T) int {
	t.Helper()
	v := os.Getenv("PRIME_OUTAGE_CONSUMERS")
	if v == "" {
		return outageConsumers
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 1 {
		t.Fatalf("PRIME_OUTAGE_CONSUMERS=%q", v)
	}
	return n
}

func TestA2MinutePlatformOutageMidRunLosesNothingAndNeverBlocksTheTrainer(t *testing.T) {
	otelcol, trainer := binaries(t)
	outage := outageDuration(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, outageConfig(t, consumers(t)),
		"PRIME_OTLP_HTTP="+addr, "PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+e2eKey)

	manifestPath := filepath.Join(t.TempDir(), "manifest.json")
	type exit struct {
		out string
		err error
		at  time.Time
	}
	trainerStart := time.Now()
	done := make(chan exit, 1)
	ctx, cancel := context.WithTimeout(context.Background(), outage+time.Minute)
	defer cancel()
	go func() {
		cmd := exec.CommandContext(ctx, trainer, "-endpoint", addr, "-steps", itoa(outageSteps),
			"-run-key", "outage-run", "-step-delay", "100ms", "-manifest", manifestPath)
		out, err := cmd.CombinedOutput()
		done <- exit{string(out), err, time.Now()}
	}()

	// The outage starts once the first steps are on the platform.
	waitFor(t, c, "the first steps on the platform", time.Minute, func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Metrics) >= 2
	})
	platform.SetOutage(&rfttest.Fault{Status: 503})
	outageStart := time.Now()
	stepsBefore := len(platform.Runs()[0].Metrics)

	// Liveness, not speed: the trainer ends while the platform is down.
	var trainerExit exit
	select {
	case trainerExit = <-done:
	case <-time.After(time.Until(outageStart.Add(outage))):
		fatalf(t, c, "the trainer was still running when the outage ended: it was blocked")
	}
	if trainerExit.err != nil {
		fatalf(t, c, "the trainer failed during the outage: %v\n%s", trainerExit.err, trainerExit.out)
	}
	trainerTook := trainerExit.at.Sub(trainerStart)
	t.Logf("trainer: %d steps in %s; the outage began after %d steps had landed and lasted %s",
		outageSteps, trainerTook.Round(time.Millisecond), stepsBefore, outage)

	time.Sleep(time.Until(outageStart.Add(outage)))
	platform.SetOutage(nil)
	outageEnd := time.Now()
	sent := readManifest(t, manifestPath)

	waitFor(t, c, "everything on the platform after the outage", 2*time.Minute, func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted && allLanded(runs[0], sent)
	})
	recovered := time.Now()
	t.Logf("full recovery %s after the outage ended (the run closed out, every step and sample object landed)",
		recovered.Sub(outageEnd).Round(time.Millisecond))
	c.stop()

	runs := platform.Runs()
	if len(runs) != 1 {
		fatalf(t, c, "want exactly one run, got %d", len(runs))
	}
	run := runs[0]
	if !run.Finalized {
		fatalf(t, c, "a completed run is finalized: %+v", run.Status)
	}
	for step := int64(1); step <= outageSteps; step++ {
		for _, key := range []string{"loss", "reward/mean", "lr", "grad_norm"} {
			if _, ok := run.Metrics[step][key]; !ok {
				fatalf(t, c, "step %d has no %q: %v", step, key, run.Metrics[step])
			}
		}
	}
	byStep := map[int64][][]byte{}
	for _, o := range run.Objects {
		if !o.Confirmed {
			fatalf(t, c, "object %s was uploaded but never confirmed", o.Key)
		}
		byStep[o.Step] = append(byStep[o.Step], o.Body)
	}
	for step := int64(2); step <= outageSteps; step += 2 {
		checkStepRows(t, run.ID, step, byStep[step], sent.TrainByDispatch[itoa(int(step))])
	}
	checkStepOrder(t, c, platform.Requests(), outageEnd)
	if strings.Contains(c.out.String(), e2eKey) {
		t.Fatal("the API key appears in the collector's output")
	}
}

// allLanded reports whether every step's metrics and every cadence step's
// episodes are on the run.
func allLanded(run rfttest.Run, sent manifest) bool {
	for step := int64(1); step <= outageSteps; step++ {
		m := run.Metrics[step]
		if _, ok := m["loss"]; !ok {
			return false
		}
		if _, ok := m["grad_norm"]; !ok {
			return false
		}
	}
	objects := map[int64]int{}
	for _, o := range run.Objects {
		if o.Confirmed {
			objects[o.Step]++
		}
	}
	for step := int64(2); step <= outageSteps; step += 2 {
		if sent.TrainByDispatch[itoa(int(step))] > 0 && objects[step] == 0 {
			return false
		}
	}
	return true
}

// checkStepOrder checks that after the outage each signal's metrics posts
// arrived in step order: "loss" comes through the metrics pipeline and
// "grad_norm" through the logs pipeline (prime.metrics events), and the two
// pipelines are independent of each other.
func checkStepOrder(t *testing.T, c *collector, reqs []rfttest.Request, after time.Time) {
	t.Helper()
	for _, key := range []string{"loss", "grad_norm"} {
		var steps []int64
		for _, r := range reqs {
			if !strings.HasSuffix(r.Path, "/rft/metrics") || r.Time.Before(after) {
				continue
			}
			var body struct {
				Metrics map[string]float64 `json:"metrics"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatalf("metrics post %s: %v", r.Body, err)
			}
			if _, ok := body.Metrics[key]; ok {
				steps = append(steps, int64(body.Metrics["step"]))
			}
		}
		t.Logf("%q posts after the outage, in arrival order: steps %v", key, steps)
		for i := 1; i < len(steps); i++ {
			if steps[i] < steps[i-1] {
				fatalf(t, c, "%q posts after the outage are not in step order: %v", key, steps)
			}
		}
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, c *collector, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			fatalf(t, c, "%s did not happen within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

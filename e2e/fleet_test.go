package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Two hosts of one multi-node run, each with its own collector; the two
// collectors share the run registry on Redis. The rank that ends the run
// does so only after the other rank's data landed (docs/operations.md, Scaling out:
// emit prime.run.end after every rank has flushed), and data that arrives
// after the close-out is refused.
func TestTwoHostsOfOneRunMakeOnePlatformRunWithEveryStepOnceAndOneFinalize(t *testing.T) {
	otelcol, trainer := binaries(t)
	redis := startRedis(t, "", "", false)
	defer redis.stop()
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	gwA := startSharedGateway(t, otelcol, platform, redis.addr, "2s", true)
	gwB := startSharedGateway(t, otelcol, platform, redis.addr, "2s", true)
	dump := func() string {
		return "--- gateway A ---\n" + gwA.out.String() + "\n--- gateway B ---\n" + gwB.out.String()
	}
	dir := t.TempDir()
	const key = "two-hosts-run"
	start := time.Now()

	// Rank B: steps 100–129, no prime.run.end.
	runTrainer(t, trainer, gwB.http, "-run-key", key, "-run-name", key, "-seed", "2",
		"-start-step", "100", "-steps", "129", "-status", "none", "-step-delay", "5ms", "-eval-every", "0",
		"-manifest", filepath.Join(dir, "b.json"))
	mB := readManifest(t, filepath.Join(dir, "b.json"))
	eventually(t, "rank B's steps on the platform", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && stepsLanded(t, runs[0], 100, 129, func(s int64) int64 { return sumDispatch(s, mB) })
	}, dump)
	if runs := platform.Runs(); runs[0].Status != rfttest.StatusRunning {
		t.Fatalf("the run is %s before any rank ended it\n%s", runs[0].Status, dump())
	}
	t.Logf("rank B landed %v after the start", time.Since(start).Round(time.Millisecond))

	// Rank A: steps 1–30, then prime.run.end (completed).
	runTrainer(t, trainer, gwA.http, "-run-key", key, "-run-name", key, "-seed", "1",
		"-steps", "30", "-step-delay", "5ms", "-eval-every", "0",
		"-manifest", filepath.Join(dir, "a.json"))
	mA := readManifest(t, filepath.Join(dir, "a.json"))
	t.Logf("rank A's trainer done %v after the start", time.Since(start).Round(time.Millisecond))
	eventually(t, "the run's close-out", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	}, dump)
	t.Logf("both ranks landed and the run closed in %v", time.Since(start).Round(time.Millisecond))

	runs := platform.Runs()
	if len(runs) != 1 {
		t.Fatalf("want one platform run for both hosts, got %d\n%s", len(runs), dump())
	}
	run := runs[0]
	checkRunWhole(t, run, [][2]int64{{1, 30}, {100, 129}}, []manifest{mA, mB}, dump)
	if n := createRequests(platform); n != 1 {
		t.Fatalf("want one create request, got %d\n%s", n, dump())
	}
	if n := closeRequests(platform); n != 1 {
		t.Fatalf("want one finalize (close-out request), got %d\n%s", n, dump())
	}
	if !run.Finalized {
		t.Fatalf("the run was closed, but not by the finalize route\n%s", dump())
	}
	created := strings.Count(gwA.out.String(), "Created run") + strings.Count(gwB.out.String(), "Created run")
	if created != 1 {
		t.Fatalf("want one \"Created run\" line across the gateways, got %d\n%s", created, dump())
	}

	// A straggler of rank B after the close-out: refused by design
	// (run_closed), neither a second run nor a new step.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	late, err := exec.CommandContext(ctx, trainer, "-endpoint", gwB.http, "-run-key", key, "-run-name", key,
		"-seed", "3", "-start-step", "200", "-steps", "201", "-status", "none", "-step-delay", "5ms",
		"-eval-every", "0").CombinedOutput()
	if err != nil {
		t.Logf("the late trainer reported: %v\n%s", err, late)
	}
	eventually(t, "gateway B refusing the late data", func() bool {
		return strings.Contains(gwB.out.String(), "Refused data for a run that is already closed out")
	}, dump)
	gwA.stop()
	gwB.stop()
	runs = platform.Runs()
	if len(runs) != 1 {
		t.Fatalf("the late data made a second run: %d runs\n%s", len(runs), dump())
	}
	if _, ok := runs[0].Metrics[200]; ok {
		t.Fatalf("step 200 (sent after the close-out) reached the closed run\n%s", dump())
	}
	if n := createRequests(platform); n != 1 {
		t.Fatalf("want one create request after the late data, got %d\n%s", n, dump())
	}
	if n := closeRequests(platform); n != 1 {
		t.Fatalf("want one close-out request after the late data, got %d\n%s", n, dump())
	}
}

// The registry's Redis is stopped mid-run and started again on the same
// port with its append-only file: the gateways hold their data in their
// retry meanwhile, log the outage and the recovery, and the run goes on as
// one run with nothing lost and nothing twice.
func TestARedisRestartMidRunLosesNothingAndCreatesNoSecondRun(t *testing.T) {
	otelcol, trainer := binaries(t)
	redis := startRedis(t, "", "", true)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	// In-memory queues that answer on enqueue (node collectors): the
	// trainers never notice the outage.
	gwA := startSharedGateway(t, otelcol, platform, redis.addr, "2s", false)
	gwB := startSharedGateway(t, otelcol, platform, redis.addr, "2s", false)
	dump := func() string {
		return "--- gateway A ---\n" + gwA.out.String() + "\n--- gateway B ---\n" + gwB.out.String()
	}
	dir := t.TempDir()
	const key = "redis-restart-run"

	// Two ranks of one run, ~5 s each, no end yet.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type result struct {
		name string
		out  []byte
		err  error
	}
	results := make(chan result, 2)
	play := func(name, addr string, args ...string) {
		args = append([]string{"-endpoint", addr, "-run-key", key, "-run-name", key, "-status", "none",
			"-step-delay", "80ms", "-eval-every", "0", "-export-timeout", "30s",
			"-manifest", filepath.Join(dir, name+".json")}, args...)
		out, err := exec.CommandContext(ctx, trainer, args...).CombinedOutput()
		results <- result{name, out, err}
	}
	start := time.Now()
	go play("a", gwA.http, "-seed", "1", "-steps", "60")
	go play("b", gwB.http, "-seed", "2", "-start-step", "101", "-steps", "160")

	eventually(t, "the run's first objects", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Objects) >= 2
	}, dump)
	redis.stop()
	down := time.Now()
	t.Logf("redis stopped %v into the run", down.Sub(start).Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	redis = redis.restart()
	defer redis.stop()
	t.Logf("redis back after %v", time.Since(down).Round(time.Millisecond))

	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("trainer %s: %v\n%s\n%s", r.name, r.err, r.out, dump())
		}
	}
	t.Logf("trainers done %v into the run", time.Since(start).Round(time.Millisecond))
	mA, mB := readManifest(t, filepath.Join(dir, "a.json")), readManifest(t, filepath.Join(dir, "b.json"))
	eventually(t, "both ranks' steps on the platform", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 &&
			stepsLanded(t, runs[0], 1, 60, func(s int64) int64 { return sumDispatch(s, mA) }) &&
			stepsLanded(t, runs[0], 101, 160, func(s int64) int64 { return sumDispatch(s, mB) })
	}, dump)
	if runs := platform.Runs(); runs[0].Status != rfttest.StatusRunning {
		t.Fatalf("the run is %s before any rank ended it\n%s", runs[0].Status, dump())
	}

	// Rank B ends the run, through the other gateway, after everything
	// landed.
	runTrainer(t, trainer, gwB.http, "-run-key", key, "-run-name", key, "-seed", "3",
		"-start-step", "161", "-steps", "170", "-step-delay", "5ms", "-eval-every", "0",
		"-manifest", filepath.Join(dir, "end.json"))
	mEnd := readManifest(t, filepath.Join(dir, "end.json"))
	eventually(t, "the run's close-out", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	}, dump)
	t.Logf("run completed %v after the start", time.Since(start).Round(time.Millisecond))
	gwA.stop()
	gwB.stop()

	runs := platform.Runs()
	if len(runs) != 1 {
		t.Fatalf("want one run across the Redis restart, got %d\n%s", len(runs), dump())
	}
	checkRunWhole(t, runs[0], [][2]int64{{1, 60}, {101, 170}}, []manifest{mA, mB, mEnd}, dump)
	if n := createRequests(platform); n != 1 {
		t.Fatalf("want one create request, got %d\n%s", n, dump())
	}
	if n := closeRequests(platform); n != 1 {
		t.Fatalf("want one close-out request, got %d\n%s", n, dump())
	}
	for name, g := range map[string]*sharedGateway{"A": gwA, "B": gwB} {
		out := g.out.String()
		lost := strings.Index(out, "The shared run registry (Redis) does not answer")
		back := strings.LastIndex(out, "The shared run registry (Redis) answers again")
		if lost < 0 || back < lost {
			t.Fatalf("gateway %s did not log the Redis outage and then its recovery (outage at %d, recovery at %d)\n%s", name, lost, back, dump())
		}
		t.Logf("gateway %s: %d outage lines, %d recovery lines", name,
			strings.Count(out, "The shared run registry (Redis) does not answer"),
			strings.Count(out, "The shared run registry (Redis) answers again"))
	}
}

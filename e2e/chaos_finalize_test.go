//go:build chaos

package e2e

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The close-out under kill -9: the run's end is acknowledged, then the
// collector dies during finalize_grace, or with its finalize request held
// by the platform. The restart on the same storage must close the run out,
// once, with everything in it.

// chaosFinalizeGrace is the grace test's first finalize_grace: long enough
// to kill the collector inside it. Every other life's is 1s.
const chaosFinalizeGrace = 8 * time.Second

func TestChaosKill9DuringFinalizeGraceClosesTheRunOutOnceAfterTheRestart(t *testing.T) {
	r := newFinalizeRig(t, "chaos-grace", chaosFinalizeGrace)
	r.play(t)
	ended := time.Now()
	// The end is read within a batch flush (300 ms); the kill comes 1.5 s
	// to 5.5 s after its acknowledgement, inside the 8 s grace.
	after := 1500*time.Millisecond + time.Duration(r.rng.IntN(4000))*time.Millisecond
	time.Sleep(time.Until(ended.Add(after)))
	if n := countRequests(r.platform, "POST", "/rft/finalize"); n != 0 {
		t.Fatalf("%d finalize requests before the kill %v after the end: the kill was not inside finalize_grace\n%s", n, after, r.life.dump())
	}
	statusAtKill := r.killAndRestart(t, "killed "+after.Round(time.Millisecond).String()+" after prime.run.end was acknowledged, inside finalize_grace "+chaosFinalizeGrace.String())

	if statusAtKill != rfttest.StatusRunning {
		t.Fatalf("the run was %s at the kill, want RUNNING\n%s", statusAtKill, r.life.dump())
	}
	if !strings.Contains(r.life.current().out.String(), `"ending": 1`) {
		t.Fatalf("the restart did not restore the run as ending: the end had not been read at the kill\n%s", r.life.dump())
	}
	fig := checkChaosRun(t, r.platform, r.tr, r.life.dump)
	if n := closeRequests(r.platform); n != 1 {
		t.Fatalf("want one close-out request, got %d\n%s", n, r.life.dump())
	}
	t.Logf("seed %d; kill %v after the end was acknowledged (finalize_grace %v); %s; %s; close-out requests %d; took %v",
		r.seed, after.Round(time.Millisecond), chaosFinalizeGrace, r.life.summary(), fig, closeRequests(r.platform), time.Since(r.began).Round(time.Millisecond))
}

func TestChaosKill9WhileTheFinalizeIsInFlightClosesTheRunOutAfterTheRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		// processed: the platform finalized the run before it held the
		// answer (a lost response); otherwise it holds the request unread.
		processed bool
	}{
		{"held before processing", false},
		{"held after processing", true},
	} {
		t.Run(tc.name, func(t *testing.T) { killWhileFinalizing(t, tc.processed) })
	}
}

func killWhileFinalizing(t *testing.T, processed bool) {
	r := newFinalizeRig(t, "chaos-finalize", time.Second)
	// The first finalize is held until its client goes away: the kill.
	r.platform.Inject(rfttest.RouteFinalize, rfttest.Fault{Delay: 10 * time.Minute, AfterProcessing: processed})
	r.play(t)
	eventually(t, "the finalize request at the platform", func() bool {
		return countRequests(r.platform, "POST", "/rft/finalize") > 0
	}, r.life.dump)
	held := time.Duration(r.rng.IntN(200)) * time.Millisecond
	time.Sleep(held)
	if n := r.platform.PendingFaults(rfttest.RouteFinalize); n != 0 {
		t.Fatalf("the held finalize fault was not taken (%d pending)", n)
	}
	statusAtKill := r.killAndRestart(t, "killed with its finalize held "+held.String()+" by the platform")

	want := rfttest.StatusRunning
	if processed {
		want = rfttest.StatusCompleted
	}
	if statusAtKill != want {
		t.Fatalf("the run was %s at the kill, want %s\n%s", statusAtKill, want, r.life.dump())
	}
	fig := checkChaosRun(t, r.platform, r.tr, r.life.dump)
	finalizes := countRequests(r.platform, "POST", "/rft/finalize")
	if finalizes != 2 || closeRequests(r.platform) != 2 {
		t.Fatalf("want two close-out requests, both finalize (the held one and one after the restart), got %d finalize of %d\n%s",
			finalizes, closeRequests(r.platform), r.life.dump())
	}
	t.Logf("seed %d; kill with the finalize held %v (processed before the kill: %v; run %s at the kill); %s; %s; finalize requests %d; took %v",
		r.seed, held, processed, statusAtKill, r.life.summary(), fig, finalizes, time.Since(r.began).Round(time.Millisecond))
}

// finalizeRig is one run of chaosFinalizeSteps steps through a collector on
// shutdownConfig, whose lives share their storage and ports.
type finalizeRig struct {
	otelcol  string
	began    time.Time
	seed     uint64
	rng      *rand.Rand // the kill's timing
	platform *rfttest.Server
	env      []string
	life     *collectorLives
	tr       *chaosTrainer
}

const chaosFinalizeSteps = 12

// newFinalizeRig starts the first life with the given finalize_grace.
func newFinalizeRig(t *testing.T, key string, grace time.Duration) *finalizeRig {
	otelcol, _ := binaries(t)
	r := &finalizeRig{otelcol: otelcol, began: time.Now(), seed: chaosSeed(t)}
	r.rng = rand.New(rand.NewPCG(r.seed, 1))
	r.platform = rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	t.Cleanup(r.platform.Close)
	addr := freeAddr(t)
	r.env = []string{
		"PRIME_OTLP_HTTP=" + addr, "PRIME_API_BASE=" + r.platform.BaseURL(), "PRIME_API_KEY=" + e2eKey,
		"PRIME_STORAGE_DIR=" + t.TempDir(),
	}
	r.life = &collectorLives{}
	r.life.start(t, otelcol, shutdownConfig(t), append(r.env, "PRIME_FINALIZE_GRACE="+grace.String())...)
	r.tr = newChaosTrainer(addr, key, r.seed, chaosFinalizeSteps, 4, 2)
	r.tr.stepDelay = 20 * time.Millisecond
	return r
}

// play sends the whole run, its end included, every request acknowledged.
func (r *finalizeRig) play(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := <-r.tr.start(ctx); err != nil {
		t.Fatalf("trainer: %v\n%s", err, r.life.dump())
	}
}

// killAndRestart kills the collector, restarts it (finalize_grace 1s),
// waits for its close-out and stops it; it returns the run's status at the
// kill.
func (r *finalizeRig) killAndRestart(t *testing.T, note string) string {
	t.Helper()
	r.life.kill(note)
	status := r.platform.Runs()[0].Status
	r.life.start(t, r.otelcol, shutdownConfig(t), append(r.env, "PRIME_FINALIZE_GRACE=1s")...)
	r.life.awaitCloseOut(t, r.platform)
	r.life.stop()
	return status
}

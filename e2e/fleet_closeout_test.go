package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// A gateway killed (-9) in the middle of a push leaves its hold on the run
// in Redis (it expires after 10 minutes). The run then ends through another
// gateway, which is shut down gracefully while its close-out waits for that
// hold: the shutdown finishes requested close-outs (docs/operations.md, internal/runs
// doc.go), waiting for the fleet's holds within finalize_timeout, and then
// sends the terminal status. The run must be completed on the platform.
func TestAGatewayShutdownClosesOutARunHeldByAKilledPeer(t *testing.T) {
	otelcol, trainer := binaries(t)
	redis := startRedis(t, "", "", false)
	defer redis.stop()
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	gwA := startSharedGateway(t, otelcol, platform, redis.addr, "1s", false, "PRIME_FINALIZE_TIMEOUT=3s")
	gwB := startSharedGateway(t, otelcol, platform, redis.addr, "1s", false, "PRIME_FINALIZE_TIMEOUT=3s")
	dump := func() string {
		return "--- gateway A ---\n" + gwA.out.String() + "\n--- gateway B ---\n" + gwB.out.String() +
			"\n--- redis record ---\n" + redisCLI(t, redis, "HGETALL", "prime:run:key:held-run") +
			"\n--- redis ending ---\n" + redisCLI(t, redis, "SMEMBERS", "prime:ending")
	}
	dir := t.TempDir()
	const key = "held-run"

	runTrainer(t, trainer, gwA.http, "-run-key", key, "-run-name", key, "-steps", "5", "-status", "none",
		"-step-delay", "5ms", "-eval-every", "0", "-manifest", filepath.Join(dir, "a.json"))
	eventually(t, "steps 1-5 on the platform", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && stepsLanded(t, runs[0], 1, 5, func(int64) int64 { return 0 })
	}, dump)

	// Gateway B's next metrics post hangs at the platform; kill B while it
	// holds the run.
	platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Delay: time.Minute})
	runTrainer(t, trainer, gwB.http, "-run-key", key, "-run-name", key, "-seed", "2",
		"-start-step", "6", "-steps", "6", "-status", "none", "-step-delay", "5ms", "-eval-every", "0")
	eventually(t, "gateway B's push hanging with a hold in Redis", func() bool {
		return platform.PendingFaults(rfttest.RouteMetrics) == 0 &&
			strings.TrimSpace(redisCLI(t, redis, "ZRANGE", "prime:holds:key:"+key, "0", "-1")) != ""
	}, dump)
	gwB.kill()
	t.Logf("gateway B killed holding %q", strings.Fields(redisCLI(t, redis, "ZRANGE", "prime:holds:key:"+key, "0", "-1")))

	// The run ends through gateway A; its close-out waits for B's hold.
	runTrainer(t, trainer, gwA.http, "-run-key", key, "-run-name", key, "-seed", "3",
		"-start-step", "7", "-steps", "8", "-step-delay", "5ms", "-eval-every", "0")
	eventually(t, "gateway A's close-out waiting for the held run", func() bool {
		return strings.Contains(gwA.out.String(), "Run ended; its close-out waits")
	}, dump)
	if runs := platform.Runs(); runs[0].Status != rfttest.StatusRunning {
		t.Fatalf("the run is %s while a hold is left\n%s", runs[0].Status, dump())
	}

	// Graceful shutdown: the requested close-out is finished.
	stopped := time.Now()
	gwA.stop()
	t.Logf("gateway A stopped in %v", time.Since(stopped).Round(time.Millisecond))
	runs := platform.Runs()
	if len(runs) != 1 {
		t.Fatalf("want one run, got %d\n%s", len(runs), dump())
	}
	if runs[0].Status != rfttest.StatusCompleted || closeRequests(platform) != 1 {
		t.Fatalf("after gateway A's shutdown the run is %s with %d close-out requests, want COMPLETED with one: the close-out spent finalize_timeout waiting for the killed gateway's hold and then could not send the finalize (its context had expired); the registry keeps the run as closed, so no collector will finalize it\n%s",
			runs[0].Status, closeRequests(platform), dump())
	}
}

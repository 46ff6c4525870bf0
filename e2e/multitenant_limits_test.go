package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The multi-tenant gateway's ingest limit (docs/multitenant.md, Limits) on
// the built collector, deploy/multitenant/gateway.yaml as shipped with its
// overrides file (PRIME_LIMITS_FILE) giving alice a small limit: alice
// floods at over ten times it, her senders honouring Retry-After as the
// OTel SDKs do, while bob sends a run of his own.

const (
	floodLimit      = 20 // alice's records a second
	floodPerRequest = 20 // episodes a request
	floodSenders    = 16
	floodFor        = 12 * time.Second
)

// startLimitedGateway is the shipped gateway with PRIME_LIMITS_FILE naming
// overrides, a file of the test's the caller may rewrite.
func startLimitedGateway(t *testing.T, otelcol string, platform *rfttest.Server, overrides string) (*mtGateway, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(file, []byte(overrides), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startMultitenantGatewayEdited(t, otelcol, platform, func(config string) string {
		if !strings.Contains(config, "${env:PRIME_LIMITS_FILE:-}") {
			t.Fatal("the shipped gateway no longer reads PRIME_LIMITS_FILE")
		}
		// The file's path as the environment would give it.
		return strings.ReplaceAll(config, "${env:PRIME_LIMITS_FILE:-}", file)
	})
	return g, file
}

func TestAFloodingTenantHears429AndEverythingItWasToldAcceptedLandsOnceWhileAnotherTenantsRunLandsWhole(t *testing.T) {
	otelcol, _ := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
		{Key: mtBobKey, ID: "bob", Teams: []string{"team-bob"}},
	}})
	defer platform.Close()
	g, overrides := startLimitedGateway(t, otelcol, platform, "alice:\n  records_per_second: 20\n  burst_seconds: 1\n")
	c := g.c
	waitFor(t, c, "alice's override read", 30*time.Second, func() bool {
		return logHasLine(c.out.String(), "A tenant's ingest limit changed", `"tenant": "alice"`)
	})

	alice := newTenantSender(g, mtAliceKey, "alice-flood", "team-alice")
	bob := newTenantSender(g, mtBobKey, "bob-run", "team-bob")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	flood, stop := context.WithTimeout(ctx, floodFor)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, floodSenders+1)
	for range floodSenders {
		wg.Go(func() {
			for flood.Err() == nil {
				if _, err := alice.deliver(flood, alice.nextRequest(floodPerRequest)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	// bob's run, 30 requests of 10 episodes, sent one after another
	// meanwhile.
	wg.Go(func() {
		for range 30 {
			if ok, err := bob.deliver(ctx, bob.nextRequest(10)); err != nil || !ok {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		fatalf(t, c, "a sender failed: %v", err)
	}
	attempted, accepted := alice.attemptedRecords.Load(), alice.acceptedIDs()
	t.Logf("alice: %d records attempted in %s (%.0f/s, %.1f× her limit of %d/s), %d answered 429, %d accepted (%.1f/s)",
		attempted, floodFor, float64(attempted)/floodFor.Seconds(), float64(attempted)/floodFor.Seconds()/floodLimit, floodLimit,
		alice.throttled.Load(), accepted, float64(accepted)/floodFor.Seconds())
	if float64(attempted) < 10*floodLimit*floodFor.Seconds() {
		fatalf(t, c, "alice attempted %d records in %s: not a flood of ten times her limit", attempted, floodFor)
	}
	if alice.throttled.Load() == 0 {
		fatalf(t, c, "alice was never told to retry later")
	}
	// Within the limit: its rate over the flood, the burst, and one
	// request in debt, with a second's slack for where the gateway's
	// clock and the test's start.
	if most := floodLimit*(floodFor.Seconds()+1) + floodLimit + floodPerRequest; float64(accepted) > most {
		fatalf(t, c, "alice had %d records accepted in %s, more than her limit allows (%.0f)", accepted, floodFor, most)
	}
	if bob.throttled.Load() != 0 {
		fatalf(t, c, "bob was throttled %d times: his limit is his own", bob.throttled.Load())
	}

	// A gRPC sender hears RESOURCE_EXHAUSTED: alice's next request, of 100
	// episodes, puts her five seconds in debt.
	if ok, err := alice.deliver(ctx, alice.nextRequest(100)); err != nil || !ok {
		fatalf(t, c, "alice's request after the flood: %v", err)
	}
	if code, msg := g.exportLogsGRPC(t, mtAliceKey, intruderLogs("alice-grpc", "team-alice")); code != "8" || !strings.Contains(msg, "retry in") {
		fatalf(t, c, "alice's gRPC export in debt: grpc-status %s %q, want 8 (RESOURCE_EXHAUSTED) with the delay", code, msg)
	}

	// Her override lifted without a restart: her next request passes at
	// once.
	if err := os.WriteFile(overrides, []byte("alice:\n  records_per_second: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, c, "alice's lifted limit read again", 30*time.Second, func() bool {
		return strings.Count(c.out.String(), "A tenant's ingest limit changed") == 2
	})
	before := alice.throttled.Load()
	if ok, err := alice.deliver(ctx, alice.nextRequest(floodPerRequest)); err != nil || !ok || alice.throttled.Load() != before {
		fatalf(t, c, "alice's request with no limit: accepted %v, %v, throttled %d more times", ok, err, alice.throttled.Load()-before)
	}

	for _, s := range []*tenantSender{alice, bob} {
		if err := s.end(ctx); err != nil {
			fatalf(t, c, "%s: %v", s.runKey, err)
		}
	}
	waitFor(t, c, "both runs completed", 2*time.Minute, func() bool {
		a, b := runsOwnedBy(platform, "alice"), runsOwnedBy(platform, "bob")
		return len(a) == 1 && len(b) == 1 && a[0].Status == rfttest.StatusCompleted && b[0].Status == rfttest.StatusCompleted
	})
	landed := alice.checkLandedOnce(t, runsOwnedBy(platform, "alice")[0])
	if n := bob.checkLandedOnce(t, runsOwnedBy(platform, "bob")[0]); n != 300 {
		t.Errorf("bob's run has %d rows, want his 300 episodes", n)
	}
	s := scrapeCounters(t, c, g.metricsPort)
	// The gRPC request refused above is two records.
	if got, want := s.sum("otelcol_exporter_prime_records_throttled", "tenant", "alice", "signal", "logs"), float64(alice.throttledRecords.Load()+2); got != want {
		t.Errorf("otelcol_exporter_prime_records_throttled{tenant=alice} = %.0f, want the %0.f records alice heard 429 and RESOURCE_EXHAUSTED for", got, want)
	}
	if got := s.sum("otelcol_exporter_prime_records_throttled", "tenant", "bob"); got != 0 {
		t.Errorf("bob's throttled records: %.0f", got)
	}
	for _, key := range []string{mtAliceKey, mtBobKey} {
		if strings.Contains(c.out.String(), key) {
			t.Errorf("the collector's output holds a tenant's key")
		}
	}
	t.Logf("alice: %d episodes accepted, each landed once (%d rows); bob: his 300, whole", alice.acceptedIDs(), landed)
}

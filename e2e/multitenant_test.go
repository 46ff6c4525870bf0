package e2e

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The multi-tenant gateway (deploy/multitenant/gateway.yaml as shipped,
// docs/multitenant.md) run as the built collector over TLS against the fake
// platform, which knows three users (alice, bob, carol), each with a key of
// its own, and refuses one user's requests on another's run with a 404. The
// gateway holds no key: every trainer sends its own as Authorization:
// Bearer, through the OTel SDK's OTEL_EXPORTER_OTLP_HEADERS.
//
// The collector's own metrics are on a free loopback port
// (PRIME_METRICS_PORT), so the tests hold no fixed port.

// The tenants' platform keys, and a key the platform never issued. None
// may appear in the collector's output or in what a refused sender is told.
const (
	mtAliceKey = "sk-alice-SECRET-5f1c09e4"
	mtBobKey   = "sk-bob-SECRET-8e2d47aa"
	mtCarolKey = "sk-carol-SECRET-a93b1077"
	mtWrongKey = "sk-mallory-NOT-A-KEY-77c1d2"
)

// mtRunKey is the prime.run.key every tenant sends: one key, a run per tenant.
const mtRunKey = "shared-experiment"

func TestMultitenantGatewaySendsEachTenantsRunsWithItsOwnKeyAndKeepsThemApart(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
		{Key: mtBobKey, ID: "bob", Teams: []string{"team-bob"}},
		{Key: mtCarolKey, ID: "carol", Teams: []string{"team-carol"}},
	}})
	defer platform.Close()
	g := startMultitenantGateway(t, otelcol, platform)
	c := g.c
	health := watchHealth(c.health)
	defer health.stop()

	// Carol's run goes on for a while; her key is revoked once it has
	// steps on the platform.
	carolTrainer := g.trainInBackground(t, trainer, mtCarolKey,
		"-run-key", mtRunKey, "-team-id", "team-carol", "-steps", "300", "-step-delay", "100ms")
	// When her trainer ended: the first export the receiver refuses ends it.
	type endedTrainer struct {
		trainerResult
		at time.Time
	}
	carolDone := make(chan endedTrainer, 1)
	go func() { r := <-carolTrainer; carolDone <- endedTrainer{r, time.Now()} }()
	var carolRun rfttest.Run
	waitFor(t, c, "carol's run with three steps", time.Minute, func() bool {
		runs := runsOwnedBy(platform, "carol")
		if len(runs) == 1 && len(runs[0].Metrics) >= 3 {
			carolRun = runs[0]
			return true
		}
		return false
	})
	platform.RevokeKey(mtCarolKey)
	revokedAt := len(platform.Requests())
	t.Logf("carol's key revoked with her run %s at %d steps", carolRun.ID, len(carolRun.Metrics))

	// 1. alice and bob train with the same run key at once.
	const steps = 30
	aliceDone := g.trainInBackground(t, trainer, mtAliceKey,
		"-run-key", mtRunKey, "-team-id", "team-alice", "-steps", itoa(steps), "-step-delay", "150ms")
	bobDone := g.trainInBackground(t, trainer, mtBobKey,
		"-run-key", mtRunKey, "-team-id", "team-bob", "-steps", itoa(steps), "-step-delay", "150ms")
	var aliceRun rfttest.Run
	waitFor(t, c, "alice's run on the platform", time.Minute, func() bool {
		runs := runsOwnedBy(platform, "alice")
		if len(runs) == 1 && len(runs[0].Metrics) >= 1 {
			aliceRun = runs[0]
			return true
		}
		return false
	})

	// 2. While alice's run is open, bob sends into it by its id and ends
	// it failed.
	attackAt := len(platform.Requests())
	out, err := g.train(t, trainer, mtBobKey, "-run-id", aliceRun.ID, "-run-key=", "-team-id", "team-bob",
		"-steps", "3", "-seed", "99", "-status", "failed", "-error", "bob ends alice's run")
	t.Logf("bob's trainer sending into alice's run %s ended with %v (the receiver takes the data; the exporter refuses it)", aliceRun.ID, err)
	if err != nil {
		fatalf(t, c, "bob's trainer was let in, so its export should succeed: %v\n%s", err, out)
	}
	for name, done := range map[string]<-chan trainerResult{"alice": aliceDone, "bob": bobDone} {
		if r := <-done; r.err != nil {
			fatalf(t, c, "%s's trainer failed: %v\n%s", name, r.err, r.out)
		}
	}
	waitFor(t, c, "alice's and bob's runs completed", time.Minute, func() bool {
		a, b := runsOwnedBy(platform, "alice"), runsOwnedBy(platform, "bob")
		return len(a) == 1 && len(b) == 1 && a[0].Status == rfttest.StatusCompleted && b[0].Status == rfttest.StatusCompleted
	})
	waitFor(t, c, "bob's refusal counted", 30*time.Second, func() bool {
		return scrapeCounters(t, c, g.metricsPort).sum("otelcol_exporter_prime_records_rejected", "reason", "run_refused") > 0
	})

	// 3. Carol's data let in before the receiver heard of her revoked key
	// is dropped at the exporter: her guard tripped on the platform's 401
	// (confirmed by whoami), and it sends nothing more with her key. The
	// gateway revokes the key at the receiver, whose prime_auth refuses
	// her trainer's next request: her trainer is told.
	waitFor(t, c, "carol's refused key in the log", 30*time.Second, func() bool {
		return logHasLine(c.out.String(), "The platform refused this tenant's key", `"tenant": "carol"`)
	})
	// Her trainer fails at the first export the receiver refuses (every
	// export error is fatal to the demo trainer): when it exits is when it
	// was told.
	var carol endedTrainer
	select {
	case carol = <-carolDone:
	case <-time.After(30 * time.Second):
		fatalf(t, c, "carol's trainer was not refused at the receiver within 30 s of her guard's trip")
	}
	toldAt := carol.at
	first401 := firstRefusedRequest(platform.Requests()[revokedAt:], mtCarolKey)
	if carol.err == nil || !strings.Contains(carol.out, "401") {
		fatalf(t, c, "carol's trainer should be told her key is refused (401 at the receiver), got %v\n%s", carol.err, carol.out)
	}
	if first401.IsZero() || toldAt.Sub(first401) > 10*time.Second {
		fatalf(t, c, "carol's trainer was refused at the receiver %v after the platform's first 401 for her key (at %v); want within 10 s", toldAt.Sub(first401), first401)
	}
	t.Logf("carol's trainer refused at the receiver within %v of the platform's first 401 for her key", toldAt.Sub(first401).Round(10*time.Millisecond))
	time.Sleep(time.Second)
	carolAfterTrip := carried(platform.Requests(), mtCarolKey, revokedAt)
	droppedAtTrip := scrapeCounters(t, c, g.metricsPort).sum("otelcol_exporter_prime_records_rejected", "reason", "unauthorized")
	// Her prime.run.end waits finalize_grace (10 s) before its close-out,
	// which her refused key must not send either.
	time.Sleep(13 * time.Second)
	polls, notReady := health.stop()

	reqs := platform.Requests()
	rejected := scrapeCounters(t, c, g.metricsPort)

	owners := map[string]string{}
	createdFor := map[string]string{}
	for _, r := range platform.Runs() {
		owners[r.ID] = r.Owner
		if team, ok := r.Spec["team_id"].(string); ok {
			createdFor[team] = r.ID
		}
	}
	runs := map[string]rfttest.Run{}
	for _, user := range []string{"alice", "bob", "carol"} {
		own := runsOwnedBy(platform, user)
		if len(own) != 1 {
			fatalf(t, c, "%s should own exactly one run, got %d: %+v", user, len(own), own)
		}
		runs[user] = own[0]
	}
	if n := len(platform.Runs()); n != 3 {
		fatalf(t, c, "three tenants with one run key make three runs; the platform has %d", n)
	}

	// 1. Each of alice's and bob's runs: its own, whole, completed, every
	// request with its owner's key.
	for _, user := range []string{"alice", "bob"} {
		checkTenantRunWhole(t, c, user, runs[user], steps)
	}
	perRoute := map[string]map[string]int{"alice": {}, "bob": {}}
	for i, req := range reqs {
		owner := owners[runOf(req, createdFor)]
		if owner != "alice" && owner != "bob" || routeOf(req) == "put" {
			continue
		}
		if i >= attackAt && req.UserID == "bob" && owner == "alice" {
			continue // bob's refused attach, checked below
		}
		if req.UserID != owner {
			fatalf(t, c, "a %s request on %s's run carried the key of %q: %s %s", routeOf(req), owner, req.UserID, req.Method, req.Path)
		}
		perRoute[owner][routeOf(req)]++
	}
	for user, routes := range perRoute {
		for _, route := range []string{"create", "metrics", "presign", "confirm", "finalize"} {
			if routes[route] == 0 {
				fatalf(t, c, "%s's run had no %s request with %s's key: %v", user, route, user, routes)
			}
		}
	}

	// 2. Alice's run is untouched by bob: its steps are her own, it is
	// completed without an error, and what bob sent into it is one attach
	// probe with his own key, which the platform answered 404.
	var bobOnAlice []rfttest.Request
	aliceClosed := len(reqs)
	for i, req := range reqs {
		if keyOf(req) == "bob" && runOf(req, createdFor) == aliceRun.ID {
			bobOnAlice = append(bobOnAlice, req)
			if aliceClosed < i {
				fatalf(t, c, "bob's %s on alice's run came after her close-out: the run was not open to him", routeOf(req))
			}
		}
		if keyOf(req) == "alice" && routeOf(req) == "finalize" {
			aliceClosed = min(aliceClosed, i)
		}
	}
	if len(bobOnAlice) == 0 {
		fatalf(t, c, "bob's data never reached the platform as bob's: no request with his key names alice's run")
	}
	for _, req := range bobOnAlice {
		if routeOf(req) != "presign" || req.UserID != "bob" {
			fatalf(t, c, "bob's key reached alice's run with a %s (user %q): only the attach probe may", routeOf(req), req.UserID)
		}
		status, body := askAgain(t, platform, req)
		if status != http.StatusNotFound || !strings.Contains(body, "Run not found") {
			fatalf(t, c, "bob's %s on alice's run, sent again, answers %d %s; want 404 Run not found", routeOf(req), status, body)
		}
	}
	if run := runs["alice"]; run.Status != rfttest.StatusCompleted || run.ErrorMessage != "" || slices.Max(keys(run.Metrics)) != steps {
		fatalf(t, c, "alice's run was touched: status %s, error %q, steps %v", run.Status, run.ErrorMessage, keys(run.Metrics))
	}
	// Alice and bob played the same seed, bob's attack another: any value
	// of his in her run would tell her rows from his own run's.
	for step, row := range runs["alice"].Metrics {
		if !maps.Equal(row, runs["bob"].Metrics[step]) {
			fatalf(t, c, "alice's step %d is not what she sent (bob's own run has the same seed): %v, bob's %v", step, row, runs["bob"].Metrics[step])
		}
	}
	if n := rejected.sum("otelcol_exporter_prime_records_rejected", "reason", "run_refused"); n == 0 {
		fatalf(t, c, "bob's refused data is not counted: %v", rejected.byReason("otelcol_exporter_prime_records_rejected"))
	}
	if !strings.Contains(c.out.String(), aliceRun.ID) || !logHasLine(c.out.String(), "Run not found") {
		fatalf(t, c, "the collector's log does not say that bob's attach to %s was refused", aliceRun.ID)
	}

	// 3. Carol: her run stays open (her close-out could not be sent), her
	// key stopped reaching the platform once her guard tripped, and her
	// dropped data is counted while alice and bob flowed.
	carolTotal := carried(reqs, mtCarolKey, revokedAt)
	if carolTotal != carolAfterTrip {
		fatalf(t, c, "carol's revoked key kept reaching the platform after her guard tripped: %d requests then, %d at the end", carolAfterTrip, carolTotal)
	}
	if carolTotal == 0 || carolTotal > 20 {
		fatalf(t, c, "after the revocation carol's key should reach the platform a few times (the 401s in flight and whoami's), got %d", carolTotal)
	}
	if run := runs["carol"]; run.Status != rfttest.StatusRunning {
		fatalf(t, c, "carol's run closed with a revoked key: %+v", run)
	}
	if dropped := rejected.sum("otelcol_exporter_prime_records_rejected", "reason", "unauthorized"); dropped < droppedAtTrip || droppedAtTrip == 0 {
		fatalf(t, c, "carol's data let in before her key was refused at the receiver should be dropped and counted as unauthorized: %v at the trip, %v at the end", droppedAtTrip, dropped)
	}
	if rejected.sum("otelcol_exporter_prime_records_rejected", "reason", "unauthorized", "tenant", "carol") == 0 ||
		rejected.sum("otelcol_exporter_prime_records_rejected", "reason", "run_refused", "tenant", "bob") == 0 {
		fatalf(t, c, "the rejections should name their tenants (carol's unauthorized, bob's run_refused): %v", rejected.lines())
	}
	if rejected.sum("otelcol_prime_auth_refused", "reason", "refused") == 0 {
		fatalf(t, c, "prime_auth counted no refusal of carol's revoked key: %v", rejected.byReason("otelcol_prime_auth_refused"))
	}
	if len(notReady) > 0 || polls < 100 {
		fatalf(t, c, "readiness should answer 200 throughout; %d polls, these were not: %v", polls, notReady)
	}

	t.Logf("after the revocation carol's key reached the platform %d times, all before her guard tripped: %v", carolTotal, routesOf(reqs[revokedAt:], "carol"))
	table := requestTable(reqs, owners, createdFor)
	t.Logf("every platform request, by the run it was about, its route and the key it carried:\n%s", table)
	t.Logf("health: %d GET /status polls, all 200; rejected records: %v", polls, rejected.byReason("otelcol_exporter_prime_records_rejected"))
	checkNoKeyIn(t, c, c.out.String())
	c.stop()
	checkNoKeyIn(t, c, c.out.String())
}

// checkTenantRunWhole checks that a tenant's run was created for its team
// and closed out completed with every step and every sample object.
func checkTenantRunWhole(t *testing.T, c *collector, user string, run rfttest.Run, steps int64) {
	t.Helper()
	if run.Status != rfttest.StatusCompleted || !run.Finalized || run.ErrorMessage != "" {
		fatalf(t, c, "%s's run should be completed and finalized: %+v", user, run)
	}
	if got := run.Spec["team_id"]; got != "team-"+user {
		fatalf(t, c, "%s's run was created for team %v", user, got)
	}
	if len(run.Metrics) != int(steps) {
		fatalf(t, c, "%s's run has %d steps, want %d: %v", user, len(run.Metrics), steps, keys(run.Metrics))
	}
	for step := int64(1); step <= steps; step++ {
		for _, name := range []string{"loss", "reward/mean", "lr"} {
			if _, ok := run.Metrics[step][name]; !ok {
				fatalf(t, c, "%s's step %d has no %q: %v", user, step, name, run.Metrics[step])
			}
		}
	}
	if len(run.Objects) == 0 {
		fatalf(t, c, "%s's run has no sample objects", user)
	}
	for _, o := range run.Objects {
		if !o.Confirmed {
			fatalf(t, c, "%s's object %s was uploaded but never confirmed", user, o.Key)
		}
	}
}

func TestMultitenantGatewayRefusesSendersWithNoKeyOrAWrongKeyOverHTTPAndGRPC(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
	}})
	defer platform.Close()
	g := startMultitenantGateway(t, otelcol, platform)
	c := g.c

	// A positive control first: the same clients with alice's key are let
	// in, so a refusal below is the key's and not the client's.
	if status, body := g.postLogs(t, mtAliceKey, nil); status != http.StatusOK {
		fatalf(t, c, "OTLP/HTTP with alice's key: %d %s", status, body)
	}
	if code, msg := g.exportLogsGRPC(t, mtAliceKey, nil); code != "0" {
		fatalf(t, c, "OTLP/gRPC with alice's key: grpc-status %s %s", code, msg)
	}

	payload := intruderLogs("intruder", "team-alice")
	for _, sender := range []struct{ name, key string }{{"no key", ""}, {"a wrong key", mtWrongKey}} {
		status, body := g.postLogs(t, sender.key, payload)
		if status != http.StatusUnauthorized {
			fatalf(t, c, "OTLP/HTTP POST /v1/logs with %s: want 401, got %d %s", sender.name, status, body)
		}
		code, msg := g.exportLogsGRPC(t, sender.key, payload)
		if code != "16" { // codes.Unauthenticated
			fatalf(t, c, "OTLP/gRPC Export with %s: want grpc-status 16 (Unauthenticated), got %s %s", sender.name, code, msg)
		}
		out, err := g.train(t, trainer, sender.key, "-run-key", mtRunKey, "-team-id", "team-alice", "-steps", "2", "-step-delay", "0s")
		if err == nil || !strings.Contains(out, "401") {
			fatalf(t, c, "the demo trainer with %s should fail on the collector's 401: %v\n%s", sender.name, err, out)
		}
		for _, said := range []string{body, msg, out} {
			if sender.key != "" && strings.Contains(said, sender.key) {
				fatalf(t, c, "a refusal of %s repeats the key: %s", sender.name, said)
			}
		}
		t.Logf("%s: OTLP/HTTP %d %q; OTLP/gRPC grpc-status %s %q; the demo trainer exits with %v", sender.name, status, statusMessage(body), code, msg, err)
	}

	// Nothing of theirs reached the platform: no run, and no request other
	// than whoami's check of the wrong key carried it or came without one.
	if runs := platform.Runs(); len(runs) != 0 {
		fatalf(t, c, "refused senders made runs: %+v", runs)
	}
	reqs := platform.Requests()
	for _, req := range reqs {
		if k := keyOf(req); (k == "wrong key" || k == "no key") && routeOf(req) != "whoami" {
			fatalf(t, c, "a %s request with %s reached the platform", routeOf(req), k)
		}
	}
	refused := scrapeCounters(t, c, g.metricsPort)
	for _, reason := range []string{"no_key", "refused"} {
		if refused.sum("otelcol_prime_auth_refused", "reason", reason) == 0 {
			fatalf(t, c, "prime_auth counted no refusal with reason %s", reason)
		}
	}
	table := requestTable(reqs, nil, nil)
	t.Logf("every platform request, by the run it was about, its route and the key it carried:\n%s", table)
	checkNoKeyIn(t, c, c.out.String())
	c.stop()
	checkNoKeyIn(t, c, c.out.String())
}

func TestMultitenantGatewayRestartedMidRunClosesEachTenantsRunWithItsKey(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
		{Key: mtBobKey, ID: "bob", Teams: []string{"team-bob"}},
	}})
	defer platform.Close()
	g := startMultitenantGateway(t, otelcol, platform)

	// Each tenant's first five steps land; then the platform goes down,
	// and the rest of each run, its prime.run.end included, waits in the
	// persistent queue.
	const first, steps = 5, 10
	users := map[string]string{"alice": mtAliceKey, "bob": mtBobKey}
	play := func(args ...string) {
		done := map[string]<-chan trainerResult{}
		for user, key := range users {
			done[user] = g.trainInBackground(t, trainer, key, append([]string{"-run-key", mtRunKey, "-team-id", "team-" + user}, args...)...)
		}
		for user, d := range done {
			if r := <-d; r.err != nil {
				fatalf(t, g.c, "%s's trainer (%v): %v\n%s", user, args, r.err, r.out)
			}
		}
	}
	play("-steps", itoa(first), "-status", "none", "-step-delay", "20ms")
	waitFor(t, g.c, "both runs' first steps on the platform", time.Minute, func() bool {
		a, b := runsOwnedBy(platform, "alice"), runsOwnedBy(platform, "bob")
		return len(a) == 1 && len(b) == 1 && len(a[0].Metrics) == first && len(b[0].Metrics) == first
	})
	platform.SetOutage(&rfttest.Fault{Status: http.StatusServiceUnavailable})
	// The queue takes the rest during the outage: the exports succeed.
	play("-start-step", itoa(first+1), "-steps", itoa(steps), "-step-delay", "20ms")
	for user := range users {
		if run := runsOwnedBy(platform, user)[0]; run.Status != rfttest.StatusRunning || len(run.Metrics) != first {
			fatalf(t, g.c, "%s's run should be open with its first %d steps before the restart: %s with %d", user, first, run.Status, len(run.Metrics))
		}
	}

	// SIGTERM, the platform back, the same storage: no trainer sends
	// again, so what closes the runs comes from the queue and the tenant
	// index.
	var restartedAt int
	before := g.restart(t, func() {
		platform.SetOutage(nil)
		restartedAt = len(platform.Requests())
	})
	waitFor(t, g.c, "both runs whole and completed after the restart", 2*time.Minute, func() bool {
		return tenantRunsCompleted(platform, steps, "alice", "bob")
	})
	reqs := platform.Requests()[restartedAt:]
	owners, createdFor := map[string]string{}, map[string]string{}
	for _, r := range platform.Runs() {
		owners[r.ID] = r.Owner
	}
	if n := len(platform.Runs()); n != 2 {
		fatalf(t, g.c, "the restart made runs of its own: %d on the platform", n)
	}
	finalized := map[string]bool{}
	for _, req := range reqs {
		route := routeOf(req)
		if route == "put" {
			continue
		}
		owner := owners[runOf(req, createdFor)]
		if route != "whoami" && (owner == "" || req.UserID != owner) {
			fatalf(t, g.c, "after the restart a %s on %s's run carried the key of %q", route, owner, req.UserID)
		}
		if route == "whoami" && req.UserID != "alice" && req.UserID != "bob" {
			fatalf(t, g.c, "after the restart whoami was asked with the key of %q", req.UserID)
		}
		if route == "finalize" {
			finalized[owner] = true
		}
	}
	if !finalized["alice"] || !finalized["bob"] {
		fatalf(t, g.c, "each run should be closed out after the restart with its tenant's key; finalized: %v", finalized)
	}
	table := requestTable(reqs, owners, createdFor)
	t.Logf("the platform requests after the restart, by run, route and key:\n%s", table)
	checkNoKeyIn(t, g.c, before)
	g.c.stop()
	checkNoKeyIn(t, g.c, g.c.out.String())
}

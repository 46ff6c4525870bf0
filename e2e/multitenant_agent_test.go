package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The agent tier in front of the multi-tenant gateway (docs/multitenant.md,
// Behind agents): the agent distribution on deploy/multitenant/agent.yaml as
// shipped, in front of one deploy/multitenant/gateway.yaml as shipped, TLS
// on both hops, against the fake platform of multitenant_test.go. The agent
// holds no key: prime_auth lets each trainer in by its own key and sends
// each request on with it, through load_balancing and its durable queue.

// startMultitenantAgent runs deploy/multitenant/agent.yaml as shipped in
// front of gw, set only through its environment. Its senders see it as they
// see a multi-tenant gateway (TLS receivers and a status route behind
// prime_auth), so it is an *mtGateway: the same senders' helpers reach it,
// and restart keeps its ports and its queue's directory.
func startMultitenantAgent(t *testing.T, agentBin string, platform *rfttest.Server, gw *mtGateway) *mtGateway {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "multitenant", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, auth := newMTCollector(t, agentBin, string(raw))
	a.env = []string{
		"PRIME_API_BASE=" + platform.URL(),
		"PRIME_GATEWAYS=" + gw.grpcAddr,
		"PRIME_AGENT_STORAGE=" + filepath.Join(t.TempDir(), "queue"),
		"PRIME_OTLP_HTTP=" + a.httpAddr, "PRIME_OTLP_GRPC=" + a.grpcAddr, "PRIME_STATUS_ENDPOINT=" + a.statusAddr,
		"PRIME_HEALTH_ENDPOINT=" + freeAddr(t),
		"PRIME_TLS_CERT_FILE=" + auth.certFile, "PRIME_TLS_KEY_FILE=" + auth.keyFile,
		"PRIME_GATEWAY_CA_FILE=" + gw.caFile,
		"PRIME_STATUS_GATEWAYS=https://" + gw.statusAddr,
		"PRIME_AGENT_METRICS_PORT=" + a.metricsPort,
	}
	a.c = startCollector(t, agentBin, a.config, a.env...)
	return a
}

// mtAgentTier is the agent in front of one multi-tenant gateway, against a
// fake platform whose users are the tenants named, and the demo trainer.
type mtAgentTier struct {
	platform *rfttest.Server
	gw, a    *mtGateway
	trainer  string
}

func startMultitenantAgentTier(t *testing.T, users ...string) *mtAgentTier {
	t.Helper()
	otelcol, trainer := binaries(t)
	agentBin := agentBinary(t)
	var accounts []rfttest.User
	for _, user := range users {
		accounts = append(accounts, rfttest.User{Key: mtKey(user), ID: user, Teams: []string{"team-" + user}})
	}
	platform := rfttest.NewServer(rfttest.Options{Users: accounts})
	t.Cleanup(platform.Close)
	gw := startMultitenantGateway(t, otelcol, platform)
	return &mtAgentTier{platform: platform, gw: gw, a: startMultitenantAgent(t, agentBin, platform, gw), trainer: trainer}
}

// mtKey is a tenant's platform key.
func mtKey(user string) string {
	for key, name := range mtKeyNames() {
		if name == user {
			return key
		}
	}
	panic("no key for " + user)
}

// dump is both collectors' output, for failure messages.
func (m *mtAgentTier) dump() string {
	return "--- agent ---\n" + m.a.c.out.String() + "\n--- gateway ---\n" + m.gw.c.out.String()
}

func TestMultitenantAgentSendsEachTrainersRunOnWithItsOwnKeyAndRefusesAWrongOrRevokedKeyItself(t *testing.T) {
	tier := startMultitenantAgentTier(t, "alice", "bob", "carol")
	platform, gw, a, trainer, dump := tier.platform, tier.gw, tier.a, tier.trainer, tier.dump

	// Carol trains for a while through the agent; her key is revoked below.
	carolTrainer := a.trainInBackground(t, trainer, mtCarolKey,
		"-run-key", "carol-run", "-team-id", "team-carol", "-steps", "600", "-step-delay", "100ms")
	type endedTrainer struct {
		trainerResult
		at time.Time
	}
	carolDone := make(chan endedTrainer, 1)
	go func() { r := <-carolTrainer; carolDone <- endedTrainer{r, time.Now()} }()
	waitFor(t, a.c, "carol's run with three steps", time.Minute, func() bool {
		runs := runsOwnedBy(platform, "carol")
		return len(runs) == 1 && len(runs[0].Metrics) >= 3
	})

	// 1. Alice and bob train through the agent with the same run key.
	const steps = 30
	manifests := t.TempDir()
	done := map[string]<-chan trainerResult{}
	for _, user := range []string{"alice", "bob"} {
		done[user] = a.trainInBackground(t, trainer, mtKey(user), "-run-key", mtRunKey, "-team-id", "team-"+user,
			"-steps", itoa(steps), "-step-delay", "150ms", "-manifest", filepath.Join(manifests, user+".json"))
	}
	waitFor(t, a.c, "alice's and bob's runs on the platform", time.Minute, func() bool {
		return len(runsOwnedBy(platform, "alice")) == 1 && len(runsOwnedBy(platform, "bob")) == 1
	})

	// 2. The agent's status route answers each tenant about its own run
	// (running, or closing once its trainer is done), asking the gateway
	// with the caller's key.
	for _, user := range []string{"alice", "bob"} {
		run := runsOwnedBy(platform, user)[0]
		st := askStatus(t, a, mtKey(user), mtRunKey)
		if st["id"] != run.ID || st["state"] == "unknown" {
			t.Fatalf("%s asking the agent about the shared run key should find her own run %s, got %v\n%s", user, run.ID, st, dump())
		}
		t.Logf("%s asking the agent about %q: %s %s", user, mtRunKey, st["state"], st["id"])
	}
	if st := askStatus(t, a, mtAliceKey, "carol-run"); st["state"] != "unknown" || st["id"] != nil {
		t.Fatalf("alice asking the agent about carol's run key should find an unknown run, got %v\n%s", st, dump())
	}

	// 3. No key or a wrong one is refused at the agent, to the sender, and
	// never reaches the gateway.
	payload := intruderLogs("intruder", "team-alice")
	for _, sender := range []struct{ name, key string }{{"no key", ""}, {"a wrong key", mtWrongKey}} {
		status, body := a.postLogs(t, sender.key, payload)
		code, msg := a.exportLogsGRPC(t, sender.key, payload)
		out, err := a.train(t, trainer, sender.key, "-run-key", "intruder", "-team-id", "team-alice", "-steps", "2", "-step-delay", "0s")
		if status != 401 || code != "16" || err == nil || !strings.Contains(out, "401") {
			t.Fatalf("%s at the agent: OTLP/HTTP %d %s, gRPC %s %s, the demo trainer %v (want 401, 16, a failure on 401)\n%s\n%s", sender.name, status, body, code, msg, err, out, dump())
		}
		t.Logf("%s at the agent: OTLP/HTTP %d %q; OTLP/gRPC grpc-status %s %q; the demo trainer exits with %v", sender.name, status, statusMessage(body), code, msg, err)
	}
	atAgent, atGateway := scrapeCounters(t, a.c, a.metricsPort), scrapeCounters(t, gw.c, gw.metricsPort)
	if atAgent.sum("otelcol_prime_auth_refused", "reason", "refused") == 0 || atAgent.sum("otelcol_prime_auth_refused", "reason", "no_key") == 0 {
		t.Fatalf("the agent's prime_auth counted no refusal: %v\n%s", atAgent.byReason("otelcol_prime_auth_refused"), dump())
	}
	if n := atGateway.byReason("otelcol_prime_auth_refused"); len(n) != 0 {
		t.Fatalf("a refused sender reached the gateway's receiver: %v\n%s", n, dump())
	}
	for _, req := range platform.Requests() {
		if k := keyOf(req); (k == "wrong key" || k == "no key") && routeOf(req) != "whoami" {
			t.Fatalf("a %s request with %s reached the platform\n%s", routeOf(req), k, dump())
		}
	}

	// 4. Carol's key is revoked on the platform just after the agent asked
	// whoami about it again (every cache::ttl while she sends): the agent
	// then trusts it longest, the bound's worst case. The agent refuses her
	// trainer at its receiver within 10 s of the platform's first 401.
	checks := routesOf(platform.Requests(), "carol")["whoami"]
	waitFor(t, a.c, "the agent asking whoami about carol's key again", 30*time.Second, func() bool {
		return routesOf(platform.Requests(), "carol")["whoami"] > checks
	})
	platform.RevokeKey(mtCarolKey)
	revokedAt, revokedTime := len(platform.Requests()), time.Now()
	var carol endedTrainer
	select {
	case carol = <-carolDone:
	case <-time.After(30 * time.Second):
		t.Fatalf("carol's trainer was not refused within 30 s of her key's revocation\n%s", dump())
	}
	first401 := firstRefusedRequest(platform.Requests()[revokedAt:], mtCarolKey)
	if carol.err == nil || !strings.Contains(carol.out, "401") {
		t.Fatalf("carol's trainer should be told her key is refused (401 at the agent), got %v\n%s\n%s", carol.err, carol.out, dump())
	}
	if first401.IsZero() || carol.at.Sub(first401) > 10*time.Second {
		t.Fatalf("carol's trainer was refused at the agent %v after the platform's first 401 for her key (%v); want within 10 s\n%s", carol.at.Sub(first401), first401, dump())
	}
	// What the agent took from her meanwhile is lost: the gateway's
	// exporter drops what it took before its receiver knew (unauthorized),
	// and its receiver refuses the rest, which the agent drops.
	atGateway = scrapeCounters(t, gw.c, gw.metricsPort)
	t.Logf("carol's trainer refused at the agent's receiver %v after the platform's first 401 for her key (%v after the revocation); meanwhile the gateway's receiver refused %v of her requests (the agent dropped them) and its exporter dropped %v records",
		carol.at.Sub(first401).Round(10*time.Millisecond), carol.at.Sub(revokedTime).Round(10*time.Millisecond),
		atGateway.sum("otelcol_prime_auth_refused", "reason", "refused"),
		atGateway.sum("otelcol_exporter_prime_records_rejected", "reason", "unauthorized", "tenant", "carol"))

	// 5. Alice's and bob's runs: their own, whole, every request with its
	// owner's key.
	for user, d := range done {
		if r := <-d; r.err != nil {
			t.Fatalf("%s's trainer failed: %v\n%s\n%s", user, r.err, r.out, dump())
		}
	}
	t.Logf("every platform request, by the run it was about, its route and the key it carried:\n%s",
		tier.checkRunsWhole(t, steps, manifests, 3, "alice", "bob"))

	// 6. No key in the agent's config or environment, or in any output.
	for key, name := range mtKeyNames() {
		if strings.Contains(a.config, key) || slices.ContainsFunc(a.env, func(kv string) bool { return strings.Contains(kv, key) }) {
			t.Fatalf("%s's key is in the agent's config or environment", name)
		}
	}
	a.c.stop()
	gw.c.stop()
	checkNoKeyIn(t, a.c, a.c.out.String())
	checkNoKeyIn(t, gw.c, gw.c.out.String())
}

// The agent's durable queue keeps each request's key: with the gateway down,
// two tenants' runs are taken by the agent, which is then restarted; when
// the gateway is back, the agent's replay delivers each run whole, every
// request with its own tenant's key.
func TestMultitenantAgentReplaysItsQueueAfterARestartWithEachRequestsOwnKey(t *testing.T) {
	tier := startMultitenantAgentTier(t, "alice", "bob")
	platform, gw, a, trainer, dump := tier.platform, tier.gw, tier.a, tier.trainer, tier.dump

	const steps = 20
	manifests := t.TempDir()
	var agentBefore string
	gatewayBefore := gw.restart(t, func() {
		done := map[string]<-chan trainerResult{}
		for _, user := range []string{"alice", "bob"} {
			done[user] = a.trainInBackground(t, trainer, mtKey(user), "-run-key", mtRunKey, "-team-id", "team-"+user,
				"-steps", itoa(steps), "-step-delay", "20ms", "-manifest", filepath.Join(manifests, user+".json"))
		}
		for user, d := range done {
			if r := <-d; r.err != nil {
				t.Fatalf("%s's trainer, the gateway down, should be taken by the agent: %v\n%s\n%s", user, r.err, r.out, dump())
			}
		}
		if n := len(platform.Runs()); n != 0 {
			t.Fatalf("runs reached the platform with the gateway down: %d", n)
		}
		agentBefore = a.restart(t, func() {})
	})
	t.Logf("every platform request, all sent after the agent's restart, by run, route and key:\n%s",
		tier.checkRunsWhole(t, steps, manifests, 2, "alice", "bob"))
	a.c.stop()
	gw.c.stop()
	for _, out := range []string{agentBefore, gatewayBefore, a.c.out.String(), gw.c.out.String()} {
		checkNoKeyIn(t, a.c, out)
	}
}

// checkRunsWhole waits until each of users owns one run, completed with
// steps steps, and fails unless the platform has runs runs in all and each
// of users' is whole (its rows those its trainer's manifest in manifests
// lists) with every request carrying its owner's key; it returns the
// request table.
func (m *mtAgentTier) checkRunsWhole(t *testing.T, steps int, manifests string, runs int, users ...string) string {
	t.Helper()
	waitFor(t, m.a.c, "the tenants' runs completed", 2*time.Minute, func() bool {
		return tenantRunsCompleted(m.platform, steps, users...)
	})
	if n := len(m.platform.Runs()); n != runs {
		t.Fatalf("want %d runs on the platform, one per tenant; it has %d\n%s", runs, n, m.dump())
	}
	for _, user := range users {
		run := runsOwnedBy(m.platform, user)[0]
		checkTenantRunWhole(t, m.gw.c, user, run, int64(steps))
		checkRunWhole(t, run, [][2]int64{{1, int64(steps)}}, []manifest{readManifest(t, filepath.Join(manifests, user+".json"))}, m.dump)
	}
	return checkRunsCarryTheirOwnersKeys(t, m.platform, m.dump, users...)
}

// checkRunsCarryTheirOwnersKeys fails unless every platform request about a
// run of users carried its owner's key (a sample upload's PUT aside: it
// carries a presigned URL), and each run had every route of a whole run so
// carried; it returns the request table.
func checkRunsCarryTheirOwnersKeys(t *testing.T, platform *rfttest.Server, dump func() string, users ...string) string {
	t.Helper()
	owners, createdFor := map[string]string{}, map[string]string{}
	for _, r := range platform.Runs() {
		owners[r.ID] = r.Owner
		if team, ok := r.Spec["team_id"].(string); ok {
			createdFor[team] = r.ID
		}
	}
	reqs := platform.Requests()
	perRoute := map[string]map[string]int{}
	for _, req := range reqs {
		owner := owners[runOf(req, createdFor)]
		if !slices.Contains(users, owner) || routeOf(req) == "put" {
			continue
		}
		if req.UserID != owner {
			t.Fatalf("a %s request on %s's run carried the key of %q: %s %s\n%s", routeOf(req), owner, req.UserID, req.Method, req.Path, dump())
		}
		if perRoute[owner] == nil {
			perRoute[owner] = map[string]int{}
		}
		perRoute[owner][routeOf(req)]++
	}
	for _, user := range users {
		for _, route := range []string{"create", "metrics", "presign", "confirm", "finalize"} {
			if perRoute[user][route] == 0 {
				t.Fatalf("%s's run had no %s request with %s's key: %v\n%s", user, route, user, perRoute[user], dump())
			}
		}
	}
	return requestTable(reqs, owners, createdFor)
}

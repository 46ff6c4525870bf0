package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The multi-tenant fleet (docs/multitenant.md, A fleet of gateways; Behind
// agents): gateways from deploy/multitenant/gateway-fleet.yaml on one
// Redis, behind agents from deploy/multitenant/agent.yaml, every hop over
// TLS, no platform key anywhere but in the trainers.

// mtFleetGrace is the fleet's gateways' finalize_grace in the test.
const mtFleetGrace = 20 * time.Second

// mtFleetGateway is one gateway of the fleet.
type mtFleetGateway struct {
	*collector
	grpc string
}

// startMTFleetGateway runs deploy/multitenant/gateway-fleet.yaml as
// shipped, set through its environment, but for a finalize_grace short
// enough for a test: the shipped 1m covers agents replaying a long
// backlog out of order; mtFleetGrace still covers a replay just after the
// agents restart, each request waiting up to the batch's 5 s flush.
func startMTFleetGateway(t *testing.T, otelcol string, platform *rfttest.Server, redisAddr string) *mtFleetGateway {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "multitenant", "gateway-fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := strings.Replace(string(raw), "finalize_grace: 1m", "finalize_grace: "+mtFleetGrace.String(), 1)
	if config == string(raw) {
		t.Fatal("gateway-fleet.yaml no longer sets finalize_grace: 1m")
	}
	auth := newFleetAuth(t)
	_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
	g := &mtFleetGateway{grpc: freeAddr(t)}
	g.collector = startCollector(t, otelcol, config,
		"PRIME_API_BASE="+platform.URL(), "REDIS_ENDPOINT="+redisAddr,
		"PRIME_OTLP_GRPC="+g.grpc, "PRIME_OTLP_HTTP="+freeAddr(t), "PRIME_STATUS_ENDPOINT="+freeAddr(t),
		"PRIME_HEALTH_ENDPOINT="+freeAddr(t), "PRIME_METRICS_PORT="+metricsPort,
		"PRIME_TLS_CERT_FILE="+auth.certFile, "PRIME_TLS_KEY_FILE="+auth.keyFile)
	return g
}

// mtFleetAgent is one agent of the fleet and where trainers reach it.
type mtFleetAgent struct {
	*collector
	http, storage string
}

// startMTFleetAgent runs deploy/multitenant/agent.yaml as shipped on the
// given trainer-facing address and queue directory, in front of gws.
func startMTFleetAgent(t *testing.T, agentBin string, platform *rfttest.Server, httpAddr, storage string, gws ...*mtFleetGateway) *mtFleetAgent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "multitenant", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, g := range gws {
		eps = append(eps, g.grpc)
	}
	auth := newFleetAuth(t)
	_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
	a := &mtFleetAgent{http: httpAddr, storage: storage}
	a.collector = startCollector(t, agentBin, string(raw),
		"PRIME_API_BASE="+platform.URL(), "PRIME_GATEWAYS="+strings.Join(eps, ","), "PRIME_GATEWAY_CA_FILE="+auth.caFile,
		"PRIME_OTLP_HTTP="+httpAddr, "PRIME_OTLP_GRPC="+freeAddr(t), "PRIME_STATUS_ENDPOINT="+freeAddr(t),
		"PRIME_TLS_CERT_FILE="+auth.certFile, "PRIME_TLS_KEY_FILE="+auth.keyFile,
		"PRIME_HEALTH_ENDPOINT="+freeAddr(t), "PRIME_AGENT_STORAGE="+storage, "PRIME_AGENT_METRICS_PORT="+metricsPort)
	return a
}

// mtFleetTrainer plays one tenant's run through an agent over TLS with the
// tenant's key, writing its manifest to dir/<user>.json.
func mtFleetTrainer(ctx context.Context, trainer, agentHTTP, caFile, dir, user, key string, steps int) <-chan error {
	done := make(chan error, 1)
	cmd := exec.CommandContext(ctx, trainer, "-endpoint", "https://"+agentHTTP, "-eval-every", "0",
		"-run-key", "fleet-"+user, "-run-name", "fleet-"+user, "-team-id", "team-"+user,
		"-steps", itoa(steps), "-step-delay", "100ms", "-export-timeout", "60s",
		"-manifest", filepath.Join(dir, user+".json"))
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OTEL_") })
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_CERTIFICATE="+caFile, "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20"+key)
	go func() {
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%s's trainer: %v\n%s", user, err, out)
		}
		done <- err
	}()
	return done
}

// Three tenants train at once through two agents in front of three
// multi-tenant gateways on one Redis. A gateway is killed (-9) mid-run;
// once the trainers are done it is replaced by a fresh one on another port
// and the agents restart on the new gateway set (the ring changes), their
// queues on disk. Each tenant ends with one run, whole, every episode
// once, and every platform request about a run carries its tenant's key.
func TestAMultitenantFleetBehindAgentsKeepsEachTenantsRunWholeAndOnItsKeyThroughAKilledGatewayAndARingChange(t *testing.T) {
	otelcol, trainer := binaries(t)
	agentBin := agentBinary(t)
	tenants := map[string]string{"alice": mtAliceKey, "bob": mtBobKey, "carol": mtCarolKey}
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
		{Key: mtBobKey, ID: "bob", Teams: []string{"team-bob"}},
		{Key: mtCarolKey, ID: "carol", Teams: []string{"team-carol"}},
	}})
	defer platform.Close()
	redis := startRedis(t, "", "", false)
	defer redis.stop()

	var mu sync.Mutex
	var gws []*mtFleetGateway
	var agents []*mtFleetAgent
	for range 3 {
		gws = append(gws, startMTFleetGateway(t, otelcol, platform, redis.addr))
	}
	agentHTTP := []string{freeAddr(t), freeAddr(t)}
	storage := []string{t.TempDir(), t.TempDir()}
	for i := range 2 {
		agents = append(agents, startMTFleetAgent(t, agentBin, platform, agentHTTP[i], storage[i], gws...))
	}
	dump := func() string {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		for i, a := range agents {
			fmt.Fprintf(&b, "--- agent %d ---\n%s\n", i, a.out.String())
		}
		for i, g := range gws {
			fmt.Fprintf(&b, "--- gateway %d ---\n%s\n", i, g.out.String())
		}
		return b.String()
	}

	// alice and carol through agent 0, bob through agent 1.
	const steps = 150
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir, caFile := t.TempDir(), newFleetAuth(t).caFile
	start := time.Now()
	var trainers []<-chan error
	for user, key := range tenants {
		via := agentHTTP[0]
		if user == "bob" {
			via = agentHTTP[1]
		}
		trainers = append(trainers, mtFleetTrainer(ctx, trainer, via, caFile, dir, user, key, steps))
	}

	// Mid-run: every tenant's run has ten steps; the gateway that created
	// the most of them dies.
	eventually(t, "every tenant's run ten steps in", func() bool {
		for user := range tenants {
			rs := runsOwnedBy(platform, user)
			if len(rs) != 1 || len(rs[0].Metrics) < 10 {
				return false
			}
		}
		return true
	}, dump)
	victim, most := 0, -1
	for i, g := range gws {
		if n := strings.Count(g.out.String(), "Created run"); n > most {
			victim, most = i, n
		}
	}
	gws[victim].kill()
	killedAt := time.Since(start)
	for _, done := range trainers {
		if err := <-done; err != nil {
			t.Fatalf("%v\n%s", err, dump())
		}
	}
	trainersIn := time.Since(start)

	// The ring changes: a fresh gateway replaces the dead one, and each
	// agent restarts on the new set with its queue.
	fresh := startMTFleetGateway(t, otelcol, platform, redis.addr)
	mu.Lock()
	survivors := slices.Delete(slices.Clone(gws), victim, victim+1)
	gws = append(gws, fresh)
	mu.Unlock()
	for i := range agents {
		agents[i].stop()
		a := startMTFleetAgent(t, agentBin, platform, agentHTTP[i], storage[i], append(survivors, fresh)...)
		mu.Lock()
		agents = append(agents, a)
		mu.Unlock()
	}
	t.Logf("gateway %d (it created %d of the runs) killed %v in; trainers done %v in; agents on the new ring %v in",
		victim, most, killedAt.Round(time.Millisecond), trainersIn.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Close-outs wait for the killed gateway's holds to lapse with its
	// heartbeat, as in the single-key fleet.
	eventually(t, "every tenant's run completed", func() bool {
		for user := range tenants {
			rs := runsOwnedBy(platform, user)
			if len(rs) != 1 || rs[0].Status != rfttest.StatusCompleted {
				return false
			}
		}
		return true
	}, dump)
	t.Logf("every run completed %v after the start", time.Since(start).Round(time.Millisecond))
	for i, g := range gws {
		out := g.out.String()
		t.Logf("gateway %d: created %d runs, closed out %d", i, strings.Count(out, "Created run"), strings.Count(out, "Closed out run"))
	}

	owners, createdFor := map[string]string{}, map[string]string{}
	for user := range tenants {
		rs := runsOwnedBy(platform, user)
		if len(rs) != 1 {
			t.Fatalf("%s has %d runs, want one\n%s", user, len(rs), dump())
		}
		run := rs[0]
		owners[run.ID], createdFor["team-"+user] = user, run.ID
		m := readManifest(t, filepath.Join(dir, user+".json"))
		checkRunWhole(t, run, [][2]int64{{1, steps}}, []manifest{m}, dump)
		if got := run.Spec["team_id"]; got != "team-"+user {
			t.Fatalf("%s's run was created for team %v", user, got)
		}
	}
	if n := createRequests(platform); n != len(tenants) {
		t.Fatalf("want %d create requests, got %d\n%s", len(tenants), n, dump())
	}
	if n := closeRequests(platform); n != len(tenants) {
		t.Fatalf("want %d close-out requests, got %d\n%s", len(tenants), n, dump())
	}
	reqs := platform.Requests()
	for _, req := range reqs {
		run := runOf(req, createdFor)
		if run == "" || routeOf(req) == "put" {
			continue
		}
		if owner, key := owners[run], keyOf(req); key != owner {
			t.Errorf("a %s request about %s's run %s carried %s's key", routeOf(req), owner, run, key)
		}
	}
	t.Logf("platform requests by the run they were about, and the key each carried:\n%s", requestTable(reqs, owners, createdFor))
	mu.Lock()
	all := slices.Clone(agents)
	mu.Unlock()
	for i, a := range all {
		if i >= 2 { // the first two stopped at the ring change
			a.stop()
		}
		checkNoKeyIn(t, a.collector, a.out.String())
	}
	for _, g := range append(survivors, fresh) {
		g.stop()
		checkNoKeyIn(t, g.collector, g.out.String())
	}
}

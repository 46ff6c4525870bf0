package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

const (
	fleetRuns  = 30
	fleetSteps = 20
	// A close-out waits for the fleet's holds on the run within
	// finalize_timeout.
	fleetFinalizeTimeout = 10 * time.Second
	// fleetFinalizeGrace is the gateways' finalize_grace.
	fleetFinalizeGrace = 5 * time.Second
	// heartbeatTTL is how long a killed gateway's holds still count: its
	// heartbeat's expiry (internal/runs doc.go).
	heartbeatTTL = 15 * time.Second
	// fleetCloseMargin covers the close-out's retry pause (5 s) and the
	// requests of the close-outs themselves.
	fleetCloseMargin = 10 * time.Second
)

// fleetAgent starts the agent (deploy/agent.yaml as shipped) on the given
// trainer-facing HTTP address, queue directory and gateways, which it
// reaches over TLS with the fleet's token (fleetauth_test.go).
func fleetAgent(t *testing.T, agentBin, httpAddr, storage string, gateways ...*sharedGateway) *collector {
	t.Helper()
	config, err := os.ReadFile(filepath.Join("..", "deploy", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var eps []string
	for _, g := range gateways {
		eps = append(eps, g.grpc)
	}
	_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
	return startCollector(t, agentBin, string(config), append(newFleetAuth(t).agentEnv(),
		"PRIME_OTLP_HTTP="+httpAddr, "PRIME_OTLP_GRPC="+freeAddr(t),
		"PRIME_GATEWAYS="+strings.Join(eps, ","),
		"PRIME_AGENT_STORAGE="+storage, "PRIME_AGENT_METRICS_PORT="+metricsPort)...)
}

// fleetTrainers plays n runs at once through the agent, each with its own
// key (prefix-NN, also its prime.run.name), and returns their manifests.
func fleetTrainers(ctx context.Context, t *testing.T, trainer, addr, dir, prefix string, n, steps int, delay string) <-chan error {
	done := make(chan error, 1)
	go func() {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("%s-%02d", prefix, i)
				out, err := exec.CommandContext(ctx, trainer, "-endpoint", addr,
					"-run-key", name, "-run-name", name, "-seed", strconv.Itoa(i+1),
					"-steps", strconv.Itoa(steps), "-step-delay", delay, "-eval-every", "0",
					"-export-timeout", "60s",
					"-manifest", filepath.Join(dir, name+".json")).CombinedOutput()
				if err != nil {
					errs[i] = fmt.Errorf("trainer %s: %v\n%s", name, err, out)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// runsByName groups the platform's runs by prime.run.name.
func runsByName(platform *rfttest.Server) map[string][]rfttest.Run {
	out := map[string][]rfttest.Run{}
	for _, r := range platform.Runs() {
		name, _ := r.Spec["name"].(string)
		out[name] = append(out[name], r)
	}
	return out
}

// fleetLanded counts the runs with prefix that have all their steps'
// metrics and cadence episodes on the platform (manifests read from dir),
// and the completed ones.
func fleetLanded(t *testing.T, platform *rfttest.Server, dir, prefix string, n, steps int) (landed, completed int) {
	byName := runsByName(platform)
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		rs := byName[name]
		if len(rs) != 1 {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if err != nil || len(raw) == 0 {
			continue
		}
		m := readManifest(t, filepath.Join(dir, name+".json"))
		if stepsLanded(t, rs[0], 1, int64(steps), func(s int64) int64 { return sumDispatch(s, m) }) {
			landed++
		}
		if rs[0].Status == rfttest.StatusCompleted {
			completed++
		}
	}
	return landed, completed
}

// checkFleet asserts each run of prefix is exactly one platform run, whole,
// every cadence episode once; it returns the episodes sent.
func checkFleet(t *testing.T, platform *rfttest.Server, dir, prefix string, n, steps int, dump func() string) int {
	t.Helper()
	byName := runsByName(platform)
	episodes := 0
	for i := range n {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		rs := byName[name]
		if len(rs) != 1 {
			t.Fatalf("run %s: want one platform run, got %d\n%s", name, len(rs), dump())
		}
		m := readManifest(t, filepath.Join(dir, name+".json"))
		episodes += m.Episodes
		checkRunWhole(t, rs[0], [][2]int64{{1, int64(steps)}}, []manifest{m}, dump)
		if rs[0].Status == rfttest.StatusFailed {
			t.Fatalf("run %s failed: %s\n%s", name, rs[0].ErrorMessage, dump())
		}
	}
	return episodes
}

// One agent over three gateways that share the registry: 30 concurrent
// runs land whole, once each. Then a gateway is killed (-9) mid-run and
// replaced by a fresh one on another port, and the agent is restarted on
// the new gateway set with its queue on disk: still one platform run per
// identity, nothing lost, nothing twice.
func TestAFleetOfGatewaysBehindAnAgentSurvivesAGatewayKilledAndReplaced(t *testing.T) {
	otelcol, trainer := binaries(t)
	agentBin := agentBinary(t)
	redis := startRedis(t, "", "", false)
	defer redis.stop()
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	gws := []*sharedGateway{}
	for range 3 {
		gws = append(gws, startSharedGateway(t, otelcol, platform, redis.addr, fleetFinalizeGrace.String(), true, "PRIME_FINALIZE_TIMEOUT="+fleetFinalizeTimeout.String()))
	}
	storage, agentHTTP := t.TempDir(), freeAddr(t)
	agent := fleetAgent(t, agentBin, agentHTTP, storage, gws...)
	var agentsMu sync.Mutex
	agents := []*collector{agent}
	allGws := append([]*sharedGateway(nil), gws...)
	dump := func() string {
		var b strings.Builder
		agentsMu.Lock()
		defer agentsMu.Unlock()
		for i, a := range agents {
			fmt.Fprintf(&b, "--- agent %d ---\n%s\n", i, a.out.String())
		}
		for i, g := range allGws {
			fmt.Fprintf(&b, "--- gateway %d ---\n%s\n", i, g.out.String())
		}
		return b.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Phase 1: 30 runs, steady state.
	dir1 := t.TempDir()
	start := time.Now()
	if err := <-fleetTrainers(ctx, t, trainer, agentHTTP, dir1, "fleet-a", fleetRuns, fleetSteps, "20ms"); err != nil {
		t.Fatalf("%v\n%s", err, dump())
	}
	sentIn := time.Since(start)
	eventually(t, "every phase-1 run landed", func() bool {
		landed, _ := fleetLanded(t, platform, dir1, "fleet-a", fleetRuns, fleetSteps)
		return landed == fleetRuns
	}, dump)
	landedIn := time.Since(start)
	eventually(t, "every phase-1 run completed", func() bool {
		_, completed := fleetLanded(t, platform, dir1, "fleet-a", fleetRuns, fleetSteps)
		return completed == fleetRuns
	}, dump)
	completedIn := time.Since(start)
	episodes := checkFleet(t, platform, dir1, "fleet-a", fleetRuns, fleetSteps, dump)
	if n := createRequests(platform); n != fleetRuns {
		t.Fatalf("phase 1: want %d create requests, got %d\n%s", fleetRuns, n, dump())
	}
	if n := closeRequests(platform); n != fleetRuns {
		t.Fatalf("phase 1: want %d close-out requests, got %d\n%s", fleetRuns, n, dump())
	}
	perGw := make([]int, len(gws))
	for i, g := range gws {
		perGw[i] = strings.Count(g.out.String(), "Created run")
	}
	t.Logf("phase 1: %d runs, %d episodes (%d uploaded at the cadence); trainers done in %v, all landed in %v (%.0f episodes/s sent, %.0f/s landed), all completed in %v; runs created per gateway %v",
		fleetRuns, episodes, countRows(t, platform), sentIn.Round(time.Millisecond), landedIn.Round(time.Millisecond),
		float64(episodes)/sentIn.Seconds(), float64(episodes)/landedIn.Seconds(), completedIn.Round(time.Millisecond), perGw)

	// Phase 2: 30 more runs, longer; gateway 0 dies mid-run.
	dir2 := t.TempDir()
	start = time.Now()
	const steps2 = 40
	trainersDone := fleetTrainers(ctx, t, trainer, agentHTTP, dir2, "fleet-b", fleetRuns, steps2, "100ms")
	confirms1 := countRequests(platform, "POST", "/rft/samples/confirm")
	// Mid-run: every phase-2 run created, most of their step-10 episodes
	// confirmed, 30 more steps to go.
	eventually(t, "phase-2 runs under way", func() bool {
		return len(platform.Runs()) == 2*fleetRuns && countRequests(platform, "POST", "/rft/samples/confirm") >= confirms1+fleetRuns*2/3
	}, dump)
	before := len(platform.Runs())
	gws[0].kill()
	killedAt := time.Since(start)
	// The trainers go on: the agent takes everything onto its disk, and
	// what it routes to the dead gateway waits in its queue.
	if err := <-trainersDone; err != nil {
		t.Fatalf("%v\n%s", err, dump())
	}
	trainersIn := time.Since(start)
	fresh := startSharedGateway(t, otelcol, platform, redis.addr, fleetFinalizeGrace.String(), true, "PRIME_FINALIZE_TIMEOUT="+fleetFinalizeTimeout.String())
	agentsMu.Lock()
	allGws = append(allGws, fresh)
	agentsMu.Unlock()
	agent.stop()
	agent = fleetAgent(t, agentBin, agentHTTP, storage, gws[1], gws[2], fresh)
	agentsMu.Lock()
	agents = append(agents, agent)
	agentsMu.Unlock()
	t.Logf("phase 2: gateway 0 killed %v in (%d runs on the platform then), trainers done %v in, agent back on the new set %v in",
		killedAt.Round(time.Millisecond), before, trainersIn.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	eventually(t, "every phase-2 run landed", func() bool {
		landed, _ := fleetLanded(t, platform, dir2, "fleet-b", fleetRuns, steps2)
		return landed == fleetRuns
	}, dump)
	landedIn = time.Since(start)
	// Close-outs: a run whose data the killed gateway held in flight keeps
	// its holds in Redis (for 10 minutes), but they count only while the
	// gateway's heartbeat does, which lapses heartbeatTTL after the kill.
	// Every run then completes within heartbeatTTL + finalize_grace + a
	// margin of the later of the kill's heartbeat lapse and every run
	// having landed, without anything done to Redis by hand.
	lapsed := killedAt + heartbeatTTL
	from := max(landedIn, lapsed)
	bound := from + fleetFinalizeGrace + fleetCloseMargin
	var open []string
	for {
		open = open[:0]
		for name, rs := range runsByName(platform) {
			if strings.HasPrefix(name, "fleet-b") && rs[0].Status != rfttest.StatusCompleted {
				open = append(open, name)
			}
		}
		if len(open) == 0 || time.Since(start) > bound {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	completedIn = time.Since(start)
	if len(open) > 0 {
		for _, name := range open {
			t.Logf("run %s still open, held in Redis by %q", name, strings.Fields(redisCLI(t, redis, "ZRANGE", "prime:holds:key:"+name, "0", "-1")))
		}
		t.Fatalf("%d runs still open %v after the start, past the bound of %v (killed at %v, its holds lapsed by %v, all landed at %v, then finalize_grace %v and a margin of %v): %v\n%s",
			len(open), completedIn.Round(time.Millisecond), bound.Round(time.Millisecond), killedAt.Round(time.Millisecond),
			lapsed.Round(time.Millisecond), landedIn.Round(time.Millisecond), fleetFinalizeGrace, fleetCloseMargin, open, dump())
	}
	t.Logf("phase 2: every run completed %v after the start, %v after the later of landing and the killed gateway's heartbeat lapse (bound %v after the start)",
		completedIn.Round(time.Millisecond), (completedIn - from).Round(time.Millisecond), bound.Round(time.Millisecond))
	episodes = checkFleet(t, platform, dir2, "fleet-b", fleetRuns, steps2, dump)
	if n := len(platform.Runs()); n != 2*fleetRuns {
		t.Fatalf("want %d platform runs in all, got %d\n%s", 2*fleetRuns, n, dump())
	}
	if n := createRequests(platform); n != 2*fleetRuns {
		t.Fatalf("want %d create requests in all, got %d\n%s", 2*fleetRuns, n, dump())
	}
	t.Logf("phase 2: %d runs, %d episodes (%d uploaded at the cadence in all phases); all landed in %v (%.0f episodes/s); all completed %v after the start; runs created by the fresh gateway: %d, closed out by it: %d (attached from Redis)",
		fleetRuns, episodes, countRows(t, platform), landedIn.Round(time.Millisecond), float64(episodes)/landedIn.Seconds(),
		completedIn.Round(time.Millisecond), strings.Count(fresh.out.String(), "Created run"), strings.Count(fresh.out.String(), "Closed out run"))

	stopStart := time.Now()
	agent.stop()
	for _, g := range []*sharedGateway{gws[1], gws[2], fresh} {
		g.stop()
	}
	t.Logf("agent and gateways stopped in %v", time.Since(stopStart).Round(time.Millisecond))
	for name, rs := range runsByName(platform) {
		if rs[0].Status != rfttest.StatusCompleted {
			t.Fatalf("run %s is %s after the gateways' shutdown\n%s", name, rs[0].Status, dump())
		}
	}
	if n := closeRequests(platform); n != 2*fleetRuns {
		t.Fatalf("want one close-out request per run (%d), got %d\n%s", 2*fleetRuns, n, dump())
	}
	stale := 0
	for _, g := range []*sharedGateway{gws[1], gws[2], fresh} {
		stale += strings.Count(g.out.String(), "Closing out a run whose last data is still being sent by another collector")
	}
	t.Logf("close-outs that gave up on another collector's leases after finalize_timeout: %d", stale)
}

// redisCLI runs one redis-cli command against the test's Redis.
func redisCLI(t *testing.T, r *redisServer, args ...string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(r.addr)
	out, err := exec.Command("redis-cli", append([]string{"-h", host, "-p", port, "--no-raw"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	if strings.TrimSpace(string(out)) == "(empty array)" {
		return ""
	}
	return string(out)
}

// countRows is the rows of every confirmed object on the platform.
func countRows(t *testing.T, platform *rfttest.Server) int {
	n := 0
	for _, r := range platform.Runs() {
		for _, o := range r.Objects {
			if o.Confirmed {
				n += len(readObject(t, o.Body))
			}
		}
	}
	return n
}

//go:build chaos

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The two tiers (deploy/): an agent holds a backlog on its disk, every run
// of it, because its gateways were down while the trainers played; the
// gateways come up, and while the agent replays, the gateway that created
// the most runs is killed (-9) and started again on its address (a
// rescheduled pod keeps its name; the static resolver keeps it in the
// ring). The agent sends again what the dead gateway never acknowledged.
// The platform fails on every route meanwhile, as in the CI test.

const (
	chaosGatewayRuns  = 10
	chaosGatewaySteps = 40
	// chaosGatewayGrace is deploy/gateway.yaml's finalize_grace. A replay
	// has no order: a run's prime.run.end may reach its gateway seconds
	// before the run's last steps (deploy/README.md, Known limits). With a
	// grace of 2 s this test loses those steps (refused as run_closed),
	// as documented.
	chaosGatewayGrace = time.Minute
)

func TestChaosKill9OfAGatewayWhileItsAgentReplaysABacklogLosesAndDuplicatesNothing(t *testing.T) {
	otelcol, trainer := binaries(t)
	agentBin := agentBinary(t)
	began := time.Now()
	seed := chaosSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	redis := startRedis(t, "", "", false)
	defer redis.stop()
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()

	// The gateways' addresses, fixed before any of them runs.
	at := []*sharedGateway{{http: freeAddr(t), grpc: freeAddr(t)}, {http: freeAddr(t), grpc: freeAddr(t)}}
	agentHTTP := freeAddr(t)
	agent := fleetAgent(t, agentBin, agentHTTP, t.TempDir(), at...)
	var mu sync.Mutex
	var gws []*sharedGateway // every gateway process, the killed one included
	var notes []string
	dump := func() string {
		mu.Lock()
		defer mu.Unlock()
		var b strings.Builder
		fmt.Fprintf(&b, "--- agent ---\n%s\n", agent.out.String())
		for i, g := range gws {
			fmt.Fprintf(&b, "--- gateway process %d (%s, %s) ---\n%s\n", i, g.grpc, notes[i], g.out.String())
		}
		return b.String()
	}
	startAt := func(a *sharedGateway, note string) *sharedGateway {
		g := startSharedGateway(t, otelcol, platform, redis.addr, chaosGatewayGrace.String(), true,
			"PRIME_OTLP_HTTP="+a.http, "PRIME_OTLP_GRPC="+a.grpc)
		g.http, g.grpc = a.http, a.grpc
		mu.Lock()
		defer mu.Unlock()
		gws, notes = append(gws, g), append(notes, note)
		return g
	}

	// The backlog: every run, whole, on the agent's disk.
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := <-fleetTrainers(ctx, t, trainer, agentHTTP, dir, "chaos-gw", chaosGatewayRuns, chaosGatewaySteps, "5ms"); err != nil {
		t.Fatalf("%v\n%s", err, dump())
	}
	backlogIn := time.Since(began)
	if n := len(platform.Requests()); n != 0 {
		t.Fatalf("%d platform requests before any gateway ran\n%s", n, dump())
	}

	// The platform fails on every route while the backlog replays.
	faults := startChaosFaults(platform, seed, chaosFaultBudget, chaosRoutes...)
	defer faults.halt()
	replay := time.Now()
	live := []*sharedGateway{startAt(at[0], "gateway 0"), startAt(at[1], "gateway 1")}
	// Kill once every run exists and a drawn share (10–50 %) of the
	// backlog's step metrics landed.
	share := 0.1 + rng.Float64()*0.4
	total := chaosGatewayRuns * chaosGatewaySteps
	eventually(t, fmt.Sprintf("every run created and %.0f%% of the step metrics landed", share*100), func() bool {
		return len(platform.Runs()) == chaosGatewayRuns && landedSteps(platform) >= int(share*float64(total))
	}, dump)
	victim := 0
	if strings.Count(live[1].out.String(), "Created run") > strings.Count(live[0].out.String(), "Created run") {
		victim = 1
	}
	killedAt, landedAtKill := time.Since(replay), landedSteps(platform)
	live[victim].kill()
	mu.Lock()
	notes[victim] = fmt.Sprintf("killed %v into the replay, %d of %d step metrics landed", killedAt.Round(time.Millisecond), landedAtKill, total)
	mu.Unlock()
	if landedAtKill == total {
		t.Fatalf("the whole backlog had landed at the kill: the test proves nothing\n%s", dump())
	}
	down := time.Duration(rng.IntN(2000)) * time.Millisecond
	time.Sleep(down)
	live[victim] = startAt(at[victim], fmt.Sprintf("gateway %d restarted after %v", victim, down))

	eventually(t, "every run landed", func() bool {
		landed, _ := fleetLanded(t, platform, dir, "chaos-gw", chaosGatewayRuns, chaosGatewaySteps)
		return landed == chaosGatewayRuns
	}, dump)
	landedIn := time.Since(replay)
	// The ends came early in the replay; their close-outs wait out the
	// grace from then.
	time.Sleep(time.Until(replay.Add(chaosGatewayGrace)))
	// Completed on the platform, and closed out by a gateway: a finalize the
	// platform processed but answered with a fault is sent again (a
	// shutdown would cut that short).
	closedOut := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, g := range gws {
			n += strings.Count(g.out.String(), "Closed out run")
		}
		return n
	}
	eventually(t, "every run completed and closed out", func() bool {
		_, completed := fleetLanded(t, platform, dir, "chaos-gw", chaosGatewayRuns, chaosGatewaySteps)
		return completed == chaosGatewayRuns && closedOut() == chaosGatewayRuns
	}, dump)
	completedIn := time.Since(replay)
	faults.halt()
	agent.stop()
	for _, g := range live {
		g.stop()
	}

	episodes := checkFleet(t, platform, dir, "chaos-gw", chaosGatewayRuns, chaosGatewaySteps, dump)
	rows := 0
	for _, run := range platform.Runs() {
		rows += checkRowsOnceByContent(t, run, dump)
	}
	faults.checkEveryRouteMetOne(t)
	// A create that met a fault (never one after processing) is sent again.
	createFaults := len(faults.metByRoute()[rfttest.RouteCreate])
	if n := createRequests(platform); n != chaosGatewayRuns+createFaults {
		t.Fatalf("want %d create requests (%d runs, %d faults), got %d\n%s", chaosGatewayRuns+createFaults, chaosGatewayRuns, createFaults, n, dump())
	}
	finalizeFaults := len(faults.metByRoute()[rfttest.RouteFinalize])
	if n := closeRequests(platform); n != chaosGatewayRuns+finalizeFaults {
		t.Fatalf("want one close-out request per run and one per finalize fault (%d + %d), got %d\n%s", chaosGatewayRuns, finalizeFaults, n, dump())
	}
	t.Logf("seed %d; backlog of %d runs × %d steps (%d episodes sent) on the agent in %v; gateway %d (created %d runs) killed %v into the replay with %d of %d step metrics landed, back after %v",
		seed, chaosGatewayRuns, chaosGatewaySteps, episodes, backlogIn.Round(time.Millisecond), victim,
		strings.Count(gws[victim].out.String(), "Created run"), killedAt.Round(time.Millisecond), landedAtKill, total, down)
	t.Logf("faults injected %d, met by a request %d: %s", faults.injected(), faults.consumed(), faults.report())
	t.Logf("every run landed %v and completed %v into the replay: %d step metrics, %d sample rows, each once; create requests %d, close-out requests %d; took %v",
		landedIn.Round(time.Millisecond), completedIn.Round(time.Millisecond), total, rows,
		createRequests(platform), closeRequests(platform), time.Since(began).Round(time.Millisecond))
}

// landedSteps counts the steps, over every run, whose loss is on the
// platform.
func landedSteps(platform *rfttest.Server) int {
	n := 0
	for _, r := range platform.Runs() {
		for _, m := range r.Metrics {
			if _, ok := m["loss"]; ok {
				n++
			}
		}
	}
	return n
}

// checkRowsOnceByContent asserts no two rows of a run's table are the same
// episode: the same step, problem_id, prompt, completion and created_at
// (a replayed episode keeps all of them; only its sample_id could differ).
// It returns the rows.
func checkRowsOnceByContent(t *testing.T, run rfttest.Run, dump func() string) int {
	t.Helper()
	seen := map[string]string{} // content → object key
	rows := 0
	for _, o := range run.Objects {
		if !o.Confirmed {
			continue
		}
		for _, row := range readTableRows(t, o.Body) {
			key := fmt.Sprint(row["step"], "\x00", row["problem_id"], "\x00", row["prompt"], "\x00", row["completion"], "\x00", row["created_at"])
			if first, ok := seen[key]; ok {
				t.Fatalf("run %s: the episode of step %v, problem_id %v is in the table twice (objects %s and %s)\n%s",
					run.ID, row["step"], row["problem_id"], first, o.Key, dump())
			}
			seen[key] = o.Key
			rows++
		}
	}
	return rows
}

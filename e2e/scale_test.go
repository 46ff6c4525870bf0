//go:build scale

// The scale measurement (not part of CI): it calls the soak's probe
// helpers (readMemory, readCPU, envDuration: build tag soak), so it
// runs with -tags scale,soak, as scripts/scale.sh does.

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// scaleFigures is one configuration's measurement.
type scaleFigures struct {
	runs, steps, episodes int
	trainersIn, landedIn  time.Duration
	completedIn           time.Duration
	gatewayHWM            []int64 // kB, VmHWM of each gateway
	gatewayCPU            []time.Duration
	agentHWM              int64 // kB, 0 without an agent
	agentCPU              time.Duration
}

func (f scaleFigures) episodesPerSec() float64 { return float64(f.episodes) / f.landedIn.Seconds() }
func (f scaleFigures) stepsPerSec() float64 {
	return float64(f.runs*f.steps) / f.landedIn.Seconds()
}

// scaleRun plays n concurrent runs through either one gateway (trainers
// straight at its OTLP/HTTP) or the agent over three gateways; every
// gateway shares one Redis. It asserts every run is one platform run,
// whole, every cadence episode once, completed, and returns the figures.
func scaleRun(t *testing.T, viaAgent bool, n, steps int, delay string) scaleFigures {
	otelcol, trainer := binaries(t)
	redis := startRedis(t, "", "", false)
	defer redis.stop()
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	nGw := 1
	if viaAgent {
		nGw = 3
	}
	var gws []*sharedGateway
	for range nGw {
		gws = append(gws, startSharedGateway(t, otelcol, platform, redis.addr, fleetFinalizeGrace.String(), true, "PRIME_FINALIZE_TIMEOUT="+fleetFinalizeTimeout.String()))
	}
	target := gws[0].http
	var agent *collector
	if viaAgent {
		target = freeAddr(t)
		agent = fleetAgent(t, agentBinary(t), target, t.TempDir(), gws...)
	}
	dump := func() string {
		var b strings.Builder
		if agent != nil {
			fmt.Fprintf(&b, "--- agent ---\n%s\n", tail(agent.out.String(), 4000))
		}
		for i, g := range gws {
			fmt.Fprintf(&b, "--- gateway %d ---\n%s\n", i, tail(g.out.String(), 4000))
		}
		return b.String()
	}
	prefix := "scale-gw"
	if viaAgent {
		prefix = "scale-agent"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	start := time.Now()
	if err := <-fleetTrainers(ctx, t, trainer, target, dir, prefix, n, steps, delay); err != nil {
		t.Fatalf("%v\n%s", err, dump())
	}
	f := scaleFigures{runs: n, steps: steps, trainersIn: time.Since(start)}
	// Poll twice a second: counting the platform's rows is itself work on
	// the same two cores.
	await := func(what string, bound time.Duration, done func(landed, completed int) bool) time.Duration {
		deadline := time.Now().Add(bound)
		for {
			landed, completed := fleetLanded(t, platform, dir, prefix, n, steps)
			if done(landed, completed) {
				return time.Since(start)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v after the trainers (%d landed, %d completed of %d)\n%s", what, bound, landed, completed, n, dump())
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	f.landedIn = await("every run landed", 5*time.Minute, func(l, _ int) bool { return l == n })
	f.completedIn = await("every run completed", 2*time.Minute, func(_, c int) bool { return c == n })
	f.episodes = checkFleet(t, platform, dir, prefix, n, steps, dump)
	for _, r := range runsByName(platform) {
		if r[0].Status != rfttest.StatusCompleted {
			t.Fatalf("run %s is %s\n%s", r[0].ID, r[0].Status, dump())
		}
	}
	if c := createRequests(platform); c != n {
		t.Fatalf("want %d create requests, got %d\n%s", n, c, dump())
	}
	if c := closeRequests(platform); c != n {
		t.Fatalf("want %d close-out requests, got %d\n%s", n, c, dump())
	}
	// VmHWM is the peak resident size over the process's life: one reading
	// while it still runs covers the whole load.
	for i, g := range gws {
		m, err := readMemory(g.cmd.Process.Pid)
		if err != nil {
			t.Fatalf("gateway %d: %v", i, err)
		}
		cpu, err := readCPU(g.cmd.Process.Pid)
		if err != nil {
			t.Fatalf("gateway %d: %v", i, err)
		}
		f.gatewayHWM = append(f.gatewayHWM, m.hwm)
		f.gatewayCPU = append(f.gatewayCPU, cpu)
	}
	if agent != nil {
		m, err := readMemory(agent.cmd.Process.Pid)
		if err != nil {
			t.Fatalf("agent: %v", err)
		}
		f.agentHWM = m.hwm
		if f.agentCPU, err = readCPU(agent.cmd.Process.Pid); err != nil {
			t.Fatalf("agent: %v", err)
		}
		agent.stop()
	}
	created := make([]int, len(gws))
	for i, g := range gws {
		created[i] = strings.Count(g.out.String(), "Created run")
		g.stop()
	}
	rss := make([]string, len(gws))
	for i, kb := range f.gatewayHWM {
		rss[i] = mb(kb)
	}
	t.Logf("%s: %d runs x %d steps, %d episodes; trainers done in %v, all landed in %v, all completed in %v; %.1f episodes/s, %.1f steps/s (start to all landed); gateway peak RSS %v, CPU %v, runs created %v",
		prefix, n, steps, f.episodes, f.trainersIn.Round(time.Millisecond), f.landedIn.Round(time.Millisecond), f.completedIn.Round(time.Millisecond),
		f.episodesPerSec(), f.stepsPerSec(), rss, f.gatewayCPU, created)
	if agent != nil {
		t.Logf("%s: agent peak RSS %s, CPU %v", prefix, mb(f.agentHWM), f.agentCPU)
	}
	return f
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// 100 concurrent runs through one gateway, then the same load through the
// agent over three gateways sharing one Redis: throughput and peak RSS of
// each, and the ratio of the two throughputs. Sizes: PRIME_SCALE_RUNS,
// PRIME_SCALE_STEPS (a multiple of 10, the cadence), PRIME_SCALE_STEP_DELAY.
func TestScaleOneGatewayAgainstAnAgentOverThreeGateways(t *testing.T) {
	n := envInt(t, "PRIME_SCALE_RUNS", 100)
	steps := envInt(t, "PRIME_SCALE_STEPS", 200)
	delay := envDuration(t, "PRIME_SCALE_STEP_DELAY", 250*time.Millisecond)
	if steps < 10 || steps%10 != 0 {
		t.Fatalf("PRIME_SCALE_STEPS=%d: want a multiple of 10", steps)
	}
	var a, b scaleFigures
	t.Run("OneGateway", func(t *testing.T) { a = scaleRun(t, false, n, steps, delay.String()) })
	if t.Failed() {
		return
	}
	t.Run("AgentOverThreeGateways", func(t *testing.T) { b = scaleRun(t, true, n, steps, delay.String()) })
	if t.Failed() {
		return
	}
	t.Logf("(a) one gateway: %.1f episodes/s, %.1f steps/s, gateway peak RSS %s", a.episodesPerSec(), a.stepsPerSec(), mb(a.gatewayHWM[0]))
	rss := make([]string, len(b.gatewayHWM))
	for i, kb := range b.gatewayHWM {
		rss[i] = mb(kb)
	}
	t.Logf("(b) agent over 3 gateways: %.1f episodes/s, %.1f steps/s, gateway peak RSS %v, agent peak RSS %s", b.episodesPerSec(), b.stepsPerSec(), rss, mb(b.agentHWM))
	t.Logf("(b)/(a) throughput: %.2f (episodes/s), %.2f (steps/s)", b.episodesPerSec()/a.episodesPerSec(), b.stepsPerSec()/a.stepsPerSec())
}

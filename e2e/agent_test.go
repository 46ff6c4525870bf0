package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The two-tier deployment (deploy/README.md): trainers send to a node-local
// agent (the load_balancing distribution, on deploy/agent.yaml as shipped),
// which routes every signal of a run to one gateway by prime.run.id /
// prime.run.key. The gateways here are the prime collector in offline mode,
// each writing to its own directory, configured like deploy/gateway.yaml
// (an in-memory queue with wait_for_result, TLS and a bearer token on the
// gRPC receiver) minus the shared registry, which two gateways that never
// see the same run do not need.
func agentGatewayConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "gateway", collectorParams{
		Offline: true, FinalizeGrace: "2s", StepInterval: "2",
		Queue: queueParams{WaitForResult: "true", Size: "5000", FlushTimeout: "300ms"},
		Retry: &retryParams{MaxElapsedTime: "60s"},
	})
}

const (
	// The ring hashes the gateways' addresses, whose ports change from run
	// to run. All 24 runs on one gateway: 0 of 20,000 simulated rings (the
	// exporter's own ring code; 16 runs: 2 of 20,000).
	agentRuns  = 24
	agentSteps = 6
)

// agentBinary is the built agent collector; like binaries, it fails rather
// than skips when it was not built.
func agentBinary(t *testing.T) string {
	t.Helper()
	agent := os.Getenv("PRIME_AGENT")
	if agent == "" {
		t.Fatal("PRIME_AGENT must name the built agent collector (bash scripts/build-agent.sh prints its path; scripts/test.sh sets it)")
	}
	return agent
}

// agentTier is the shipped agent (deploy/agent.yaml and the overlays
// given) in front of two offline gateways.
type agentTier struct {
	agent    *collector
	http     string // the agent's OTLP/HTTP receiver
	gateways [2]agentGateway
}

type agentGateway struct {
	c    *collector
	dir  string
	grpc string
}

func startAgentTier(t *testing.T, overlays []string, env ...string) *agentTier {
	t.Helper()
	otelcol, _ := binaries(t)
	agentConfig, err := os.ReadFile(filepath.Join("..", "deploy", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	auth := newFleetAuth(t)
	tier := &agentTier{http: freeAddr(t)}
	for i := range tier.gateways {
		g := &tier.gateways[i]
		g.dir, g.grpc = t.TempDir(), freeAddr(t)
		g.c = startCollector(t, otelcol, agentGatewayConfig(t), append(auth.gatewayEnv(),
			"PRIME_OTLP_GRPC="+g.grpc, "PRIME_OTLP_HTTP="+freeAddr(t), "PRIME_OFFLINE_DIR="+g.dir)...)
	}
	_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
	tier.agent = startCollectorWith(t, agentBinary(t), string(agentConfig), overlays, append(append(auth.agentEnv(),
		"PRIME_OTLP_HTTP="+tier.http, "PRIME_OTLP_GRPC="+freeAddr(t),
		"PRIME_GATEWAYS="+tier.gateways[0].grpc+","+tier.gateways[1].grpc,
		"PRIME_AGENT_STORAGE="+t.TempDir(), "PRIME_AGENT_METRICS_PORT="+metricsPort), env...)...)
	return tier
}

// outputs is every process's output, for failure messages.
func (a *agentTier) outputs() string {
	return "--- agent ---\n" + a.agent.out.String() +
		"\n--- gateway 0 ---\n" + a.gateways[0].c.out.String() +
		"\n--- gateway 1 ---\n" + a.gateways[1].c.out.String()
}

// completed counts the runs completed across the gateways.
func (a *agentTier) completed(t *testing.T) int {
	t.Helper()
	n := 0
	for _, g := range a.gateways {
		for _, r := range agentRunDirs(t, g.dir) {
			if r.Status == "completed" {
				n++
			}
		}
	}
	return n
}

func (a *agentTier) stop() {
	a.agent.stop()
	for _, g := range a.gateways {
		g.c.stop()
	}
}

func TestTheAgentRoutesEveryRunWholeToOneGateway(t *testing.T) {
	_, trainer := binaries(t)
	tier := startAgentTier(t, nil)
	gateways, agentHTTP, outputs := tier.gateways, tier.http, tier.outputs

	// Every run at once, each from its own trainer process, with its own
	// prime.run.key (and prime.run.name, which names it in run.json).
	manifests := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	failures := make([]string, agentRuns)
	for i := range agentRuns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := agentRunName(i)
			out, err := exec.CommandContext(ctx, trainer, "-endpoint", agentHTTP,
				"-run-key", name, "-run-name", name, "-seed", strconv.Itoa(i+1),
				"-steps", strconv.Itoa(agentSteps), "-step-delay", "5ms", "-eval-every", "0",
				"-manifest", filepath.Join(manifests, name+".json")).CombinedOutput()
			if err != nil {
				failures[i] = fmt.Sprintf("trainer %s: %v\n%s", name, err, out)
			}
		}()
	}
	wg.Wait()
	for _, f := range failures {
		if f != "" {
			t.Fatalf("%s\n%s", f, outputs())
		}
	}

	// Wait for every run's close-out, wherever it landed.
	eventually(t, "every run completed on a gateway", func() bool { return tier.completed(t) >= agentRuns }, outputs)
	tier.stop()

	// Each run has exactly one directory on exactly one gateway: a signal
	// routed elsewhere would have created the run a second time there.
	where := map[string][]string{} // run name → "gateway i: dir"
	perGateway := [2]int{}
	for gi, g := range gateways {
		for _, r := range agentRunDirs(t, g.dir) {
			where[r.Spec.Name] = append(where[r.Spec.Name], fmt.Sprintf("gateway %d: %s", gi, r.dir))
			perGateway[gi]++
		}
	}
	if len(where) != agentRuns {
		t.Fatalf("want %d runs across the gateways, got %d: %v\n%s", agentRuns, len(where), where, outputs())
	}
	for i := range agentRuns {
		name := agentRunName(i)
		if len(where[name]) != 1 {
			t.Fatalf("run %s: want one directory on one gateway, got %v\n%s", name, where[name], outputs())
		}
	}
	if perGateway[0] == 0 || perGateway[1] == 0 {
		t.Fatalf("all %d runs went to one gateway (%v): the agent did not spread runs\n%s", agentRuns, perGateway, outputs())
	}
	t.Logf("runs per gateway: %v", perGateway)

	// And it is whole there: every step's metrics (the metrics pipeline),
	// every sampled step's episodes and the completed status (the logs
	// pipeline).
	for gi, g := range gateways {
		for _, r := range agentRunDirs(t, g.dir) {
			sent := readManifest(t, filepath.Join(manifests, r.Spec.Name+".json"))
			steps := agentMetricSteps(t, r.dir)
			for step := int64(1); step <= agentSteps; step++ {
				if !steps[step] {
					t.Fatalf("run %s on gateway %d: metrics.jsonl has no post for step %d (has %v)\n%s", r.Spec.Name, gi, step, steps, outputs())
				}
			}
			objects := offlineObjects(t, r.dir)
			for step := int64(2); step <= agentSteps; step += 2 {
				checkStepRows(t, r.ID, step, objects[step], sent.TrainByDispatch[strconv.FormatInt(step, 10)])
			}
		}
	}
}

func agentRunName(i int) string { return fmt.Sprintf("agent-run-%02d", i) }

// agentRun is one offline run directory and its run.json.
type agentRun struct {
	dir    string
	ID     string `json:"id"`
	Status string `json:"status"`
	Spec   struct {
		Name string `json:"name"`
	} `json:"spec"`
}

// agentRunDirs reads the run.json of every run under an offline directory;
// a run.json being replaced is read again on the next poll.
func agentRunDirs(t *testing.T, dir string) []agentRun {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []agentRun
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		r := agentRun{dir: filepath.Join(dir, e.Name())}
		raw, err := os.ReadFile(filepath.Join(r.dir, "run.json"))
		if err != nil || json.Unmarshal(raw, &r) != nil {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out
}

// agentMetricSteps is the set of steps metrics.jsonl has a post for.
func agentMetricSteps(t *testing.T, runDir string) map[int64]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps := map[int64]bool{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var post struct {
			RunID   string             `json:"run_id"`
			Metrics map[string]float64 `json:"metrics"`
		}
		if err := json.Unmarshal(sc.Bytes(), &post); err != nil {
			t.Fatalf("%s: %v", runDir, err)
		}
		if !strings.HasSuffix(runDir, post.RunID) {
			t.Fatalf("%s holds a post of run %q", runDir, post.RunID)
		}
		steps[int64(post.Metrics["step"])] = true
	}
	return steps
}

// The gateway takes only what comes with the fleet's token (deploy/gateway.yaml
// behind deploy/agent.yaml). An agent with another token is refused with
// Unauthenticated, which the OTLP exporter treats as permanent: the agent
// drops what was refused instead of keeping it on its disk
// (docs/security.md: rotate a token with an overlap, never by swapping it).
// The same agent restarted with the right token delivers the next run.
// Neither token appears in any output: the receiver does not echo what it
// refused.
func TestAGatewayRefusesAnAgentWithTheWrongTokenAndTheAgentDropsWhatWasRefused(t *testing.T) {
	otelcol, trainer := binaries(t)
	agentBin := agentBinary(t)
	agentConfig, err := os.ReadFile(filepath.Join("..", "deploy", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	auth := newFleetAuth(t)
	const wrongToken = "not-the-fleets-token-31"
	dir, grpc := t.TempDir(), freeAddr(t)
	gw := startCollector(t, otelcol, agentGatewayConfig(t), append(auth.gatewayEnv(),
		"PRIME_OTLP_GRPC="+grpc, "PRIME_OTLP_HTTP="+freeAddr(t), "PRIME_OFFLINE_DIR="+dir)...)
	storage, agentHTTP := t.TempDir(), freeAddr(t)
	startAgent := func(a fleetAuth) *collector {
		_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
		return startCollector(t, agentBin, string(agentConfig), append(a.agentEnv(),
			"PRIME_OTLP_HTTP="+agentHTTP, "PRIME_OTLP_GRPC="+freeAddr(t), "PRIME_GATEWAYS="+grpc,
			"PRIME_AGENT_STORAGE="+storage, "PRIME_AGENT_METRICS_PORT="+metricsPort)...)
	}
	trainerRun := func(name string) {
		runTrainer(t, trainer, agentHTTP, "-run-key", name, "-run-name", name,
			"-steps", "4", "-step-delay", "5ms", "-eval-every", "0")
	}
	wrong := startAgent(auth.withToken(t, wrongToken))
	outputs := func() string { return "--- agent ---\n" + wrong.out.String() + "\n--- gateway ---\n" + gw.out.String() }

	trainerRun("refused-run")
	eventually(t, "the gateway's refusal, and the drop, in the agent's log", func() bool {
		out := wrong.out.String()
		return strings.Contains(out, "code = Unauthenticated") && strings.Contains(out, "Dropping data")
	}, outputs)
	if runs := agentRunDirs(t, dir); len(runs) != 0 {
		t.Fatalf("the gateway took a run from an agent with the wrong token: %v\n%s", runs, outputs())
	}
	wrong.stop()

	right := startAgent(auth)
	trainerRun("accepted-run")
	eventually(t, "the next run delivered once the agent has the fleet's token", func() bool {
		runs := agentRunDirs(t, dir)
		return len(runs) == 1 && runs[0].Status == "completed"
	}, func() string { return outputs() + "\n--- agent, restarted ---\n" + right.out.String() })
	right.stop()
	gw.stop()
	if runs := agentRunDirs(t, dir); len(runs) != 1 || runs[0].Spec.Name != "accepted-run" {
		t.Fatalf("want only accepted-run on the gateway, got %v", runs)
	}
	all := wrong.out.String() + right.out.String() + gw.out.String()
	for _, token := range []string{wrongToken, e2eGatewayToken} {
		if strings.Contains(all, token) {
			t.Fatalf("a token (%q) appears in the collectors' output", token)
		}
	}
	t.Logf("refused with: %s", firstLineWith(wrong.out.String(), "Unauthenticated"))
}

// firstLineWith is the first line of s that contains sub.
func firstLineWith(s, sub string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}

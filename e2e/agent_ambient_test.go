package e2e

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/internal/testkit/scrapetest"
)

// systemKeysOf reads an offline run's system/ keys from its metrics.jsonl.
func systemKeysOf(t *testing.T, runDir string) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		var post struct {
			Metrics map[string]any `json:"metrics"`
		}
		if err := json.Unmarshal(sc.Bytes(), &post); err != nil {
			t.Fatalf("%s: %v", runDir, err)
		}
		for k := range post.Metrics {
			if strings.HasPrefix(k, "system/") {
				keys[k] = true
			}
		}
	}
	return keys
}

// The agent tier with deploy/agent-ambient.yaml: the node's agent scrapes
// its dcgm-exporter and samples the node, gives each GPU its pod's run and
// the node's own metrics every run on the node, and load_balancing routes
// them to the gateway of each run.
func TestANodesAgentSendsEachPodsGPUsAndTheNodesMetricsToEachRunsGateway(t *testing.T) {
	_, trainer := binaries(t)
	dcgm := standIn(t, scrapetest.DCGM4GPU2Pods, 5)
	tier := startAgentTier(t, []string{"deploy/agent-ambient.yaml"},
		"PRIME_DCGM_ENDPOINT="+dcgm.Addr(), "PRIME_SYSTEM_INTERVAL=1s", "PRIME_SYSTEM_HOST=node-1")
	agent, agentHTTP, outputs, gateways := tier.agent, tier.http, tier.outputs, tier.gateways
	waitScrapes(t, agent, dcgm, 3)

	// The two trainers run at once, as two pods of one node do.
	done := make(chan string, 2)
	for _, pod := range []string{"a", "b"} {
		go func() {
			out, err := runTrainerErr(trainer, agentHTTP, "-run-key", "agent-gpu-"+pod, "-run-name", "agent-gpu-"+pod,
				"-pod", "rl/trainer-"+pod+"-0", "-steps", "10", "-step-delay", "400ms", "-eval-every", "0")
			if err != nil {
				done <- pod + ": " + err.Error() + "\n" + out
				return
			}
			done <- ""
		}()
	}
	for range 2 {
		if msg := <-done; msg != "" {
			t.Fatalf("trainer %s\n%s", msg, outputs())
		}
	}
	eventually(t, "both runs completed", func() bool { return tier.completed(t) == 2 }, outputs)
	tier.stop()

	gpuOf := regexp.MustCompile(`^system/gpu\.[a-z_]+\{gpu=(\d),host=node-1\}$`)
	runs := 0
	for _, g := range gateways {
		for _, r := range agentRunDirs(t, g.dir) {
			runs++
			pod := strings.TrimPrefix(r.Spec.Name, "agent-gpu-")
			keys := systemKeysOf(t, r.dir)
			gpus := map[string]bool{}
			for k := range keys {
				if m := gpuOf.FindStringSubmatch(k); m != nil {
					gpus[m[1]] = true
				}
			}
			want := map[string][]string{"a": {"0", "1"}, "b": {"2", "3"}}[pod]
			if got := slices.Sorted(maps.Keys(gpus)); !slices.Equal(got, want) {
				t.Fatalf("run %s has GPUs %v, want %v; its keys: %v\n%s", r.Spec.Name, got, want, slices.Sorted(maps.Keys(keys)), outputs())
			}
			for _, k := range []string{"system/cpu.percent{host=node-1}", "system/memory.percent{host=node-1}"} {
				if !keys[k] {
					t.Fatalf("run %s lacks the node's %s; its keys: %v", r.Spec.Name, k, slices.Sorted(maps.Keys(keys)))
				}
			}
		}
	}
	if runs != 2 {
		t.Fatalf("%d runs across the gateways, want 2: ambient data made a run\n%s", runs, outputs())
	}
}

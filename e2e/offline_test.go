package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The README's demo config, as the run command uses it.
func TestTheOfflineDemoWritesTheRunToADirectory(t *testing.T) {
	otelcol, trainer := binaries(t)
	config, err := os.ReadFile(filepath.Join("..", "testdata", "demo-offline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	c := startCollector(t, otelcol, string(config),
		"PRIME_OTLP_HTTP="+addr, "PRIME_OTLP_GRPC="+freeAddr(t), "PRIME_OFFLINE_DIR="+dir)

	manifestPath := filepath.Join(t.TempDir(), "manifest.json")
	runTrainer(t, trainer, addr, "-steps", itoa(demoSteps), "-step-delay", "5ms", "-manifest", manifestPath)
	sent := readManifest(t, manifestPath)
	var runDir string
	eventually(t, "run.json with status completed", func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "run.json"))
			if err == nil && strings.Contains(string(raw), `"status": "completed"`) {
				runDir = filepath.Join(dir, e.Name())
				return true
			}
		}
		return false
	}, c.out.String)
	c.stop()

	if !strings.HasPrefix(filepath.Base(runDir), "offline-") {
		fatalf(t, c, "offline ids are offline-<16 hex>, got %s", filepath.Base(runDir))
	}
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
			t.Fatalf("metrics.jsonl line is not the platform's body: %v", err)
		}
		if post.RunID != filepath.Base(runDir) {
			t.Fatalf("run_id %q in %s", post.RunID, runDir)
		}
		steps[int64(post.Metrics["step"])] = true
	}
	for step := int64(1); step <= demoSteps; step++ {
		if !steps[step] {
			fatalf(t, c, "metrics.jsonl has no post for step %d", step)
		}
	}
	// The demo config keeps the default cadence: step 10 of 12.
	objects := offlineObjects(t, runDir)
	if len(objects) != 1 || len(objects[10]) == 0 {
		fatalf(t, c, "want sample objects for step 10 only, got steps %v", keys(objects))
	}
	checkStepRows(t, filepath.Base(runDir), 10, objects[10], sent.TrainByDispatch["10"])
}

func itoa(n int) string { return strconv.Itoa(n) }

func keys[V any](m map[int64]V) []int64 {
	var out []int64
	for k := range m {
		out = append(out, k)
	}
	return out
}

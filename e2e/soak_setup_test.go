//go:build soak || scale

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// soakConfig is the README's recommended production config (run registry
// and queue on file_storage, batching in the queue at its defaults, retries
// that never give up) plus the pprof extension on loopback, which the probe
// reads the goroutine count from.
const soakConfig = `
extensions:
  file_storage:
    directory: ${env:PRIME_STORAGE_DIR}
  pprof:
    endpoint: ${env:PRIME_PPROF}
receivers:
  otlp:
    protocols:
      http:
        endpoint: ${env:PRIME_OTLP_HTTP}
exporters:
  prime:
    endpoint: ${env:PRIME_API_BASE}
    api_key: ${env:PRIME_API_KEY}
    team_id: team-soak
    storage: file_storage
    samples:
      step_interval: ${env:PRIME_STEP_INTERVAL}
    retry_on_failure:
      max_elapsed_time: 0
    sending_queue:
      storage: file_storage
      queue_size: ${env:PRIME_QUEUE_SIZE}
service:
  extensions: [file_storage, pprof]
  pipelines:
    metrics:
      receivers: [otlp]
      exporters: [prime]
    logs:
      receivers: [otlp]
      exporters: [prime]
  telemetry:
    metrics:
      level: none
`

// soakKnobs size the soak; each comes from the environment variable named
// in its tag, so scripts/soak.sh (or a longer run by hand) can change it.
type soakKnobs struct {
	runs            int           // PRIME_SOAK_RUNS: trainers in total
	concurrency     int           // PRIME_SOAK_CONCURRENCY: trainers at once
	steps           int           // PRIME_SOAK_STEPS: steps per run
	stepDelay       time.Duration // PRIME_SOAK_STEP_DELAY: the trainers' pause between steps
	episodesPerStep int           // PRIME_SOAK_EPISODES_PER_STEP
	stepInterval    int           // PRIME_SOAK_STEP_INTERVAL: samples.step_interval
	sampleEvery     time.Duration // PRIME_SOAK_SAMPLE_EVERY: probe period
	settle          time.Duration // PRIME_SOAK_SETTLE: bound on close-outs after the last trainer, and on goroutines settling
	goroutineSlack  int           // PRIME_SOAK_GOROUTINE_SLACK: goroutines allowed above the start count at the end
	maxRSSMB        int64         // PRIME_SOAK_MAX_RSS_MB: bound on the peak resident size
	queueSize       int           // PRIME_SOAK_QUEUE_SIZE: sending_queue::queue_size (the collector's default: 1000 requests)
}

func readSoakKnobs(t *testing.T) soakKnobs {
	t.Helper()
	k := soakKnobs{
		runs:            envInt(t, "PRIME_SOAK_RUNS", 96),
		concurrency:     envInt(t, "PRIME_SOAK_CONCURRENCY", 16),
		steps:           envInt(t, "PRIME_SOAK_STEPS", 500),
		stepDelay:       envDuration(t, "PRIME_SOAK_STEP_DELAY", 100*time.Millisecond),
		episodesPerStep: envInt(t, "PRIME_SOAK_EPISODES_PER_STEP", 4),
		stepInterval:    envInt(t, "PRIME_SOAK_STEP_INTERVAL", 5),
		sampleEvery:     envDuration(t, "PRIME_SOAK_SAMPLE_EVERY", 5*time.Second),
		settle:          envDuration(t, "PRIME_SOAK_SETTLE", 3*time.Minute),
		goroutineSlack:  envInt(t, "PRIME_SOAK_GOROUTINE_SLACK", 20),
		maxRSSMB:        int64(envInt(t, "PRIME_SOAK_MAX_RSS_MB", 1024)),
		queueSize:       envInt(t, "PRIME_SOAK_QUEUE_SIZE", 1000),
	}
	if k.runs < 1 || k.concurrency < 1 || k.steps < k.stepInterval || k.stepInterval < 1 {
		t.Fatalf("soak knobs make no soak: %+v", k)
	}
	return k
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

// soakRun is one trainer of the fleet: its run key (also its run name, by
// which the test finds it on the platform) and its manifest.
type soakRun struct {
	key      string
	manifest string
}

// runFleet plays k.runs demo runs, k.concurrency at a time, each under its
// own run key and seed, and returns when all have exited. A trainer that
// fails is reported with its output; the others go on.
func runFleet(t *testing.T, trainer, addr string, k soakKnobs, dir string) []soakRun {
	t.Helper()
	runs := make([]soakRun, k.runs)
	slots := make(chan struct{}, k.concurrency)
	var wg sync.WaitGroup
	for i := range runs {
		runs[i] = soakRun{key: fmt.Sprintf("soak-%03d", i), manifest: filepath.Join(dir, fmt.Sprintf("soak-%03d.json", i))}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			// The trainer's own bound; the test's -timeout bounds the whole.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, trainer,
				"-endpoint", addr, "-run-key", runs[i].key, "-run-name", runs[i].key,
				"-seed", strconv.Itoa(i+1), "-steps", strconv.Itoa(k.steps),
				"-step-delay", k.stepDelay.String(), "-episodes-per-step", strconv.Itoa(k.episodesPerStep),
				"-export-timeout", "30s", "-manifest", runs[i].manifest)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("trainer %s failed: %v\n%s", runs[i].key, err, out)
			}
		})
	}
	wg.Wait()
	return runs
}

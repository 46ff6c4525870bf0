//go:build soak || scale

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// soakConfig is docs/operations.md's recommended production config (run registry
// and queue on file_storage, batching in the queue at its defaults, retries
// that never give up) plus the pprof extension on loopback, which the probe
// reads the goroutine count from.
func soakConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-soak", Storage: true, Pprof: true, StepInterval: "${env:PRIME_STEP_INTERVAL}",
		Queue: queueParams{Size: "${env:PRIME_QUEUE_SIZE}"},
		Retry: &retryParams{MaxElapsedTime: "0"},
	})
}

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
	textBytes       int           // PRIME_SOAK_EPISODE_TEXT_BYTES: the trainers' -episode-text-bytes (600 makes OTLP records of ~2.1 KB, 2000 of ~5 KB)
	// PRIME_SOAK_DISCARD=1: the fake platform keeps no object bytes and
	// counts the rows of each object instead (rfttest discard mode), so a
	// soak of millions of episodes does not make the test process the
	// largest one. The rows are then checked by count, not one by one.
	discard bool
	// PRIME_SOAK_CHECKPOINTS, e.g. "10,50": one run (PRIME_SOAK_RUNS=1,
	// with PRIME_SOAK_DISCARD=1) played by one trainer process per part,
	// ending at those percentages of its steps and at 100 %. After each
	// part, once everything it sent has landed, the probe reads the
	// collector's RSS and live heap after GC with nothing in flight, so
	// the readings differ only by what the run keeps.
	checkpoints []int
	// PRIME_SOAK_MAX_GROWTH_PCT: with checkpoints, the bound on the live
	// heap after GC at 100 % over its value at the first checkpoint.
	maxGrowthPct int
	// PRIME_SOAK_MAX_WORK_GROWTH_PCT: with checkpoints, the bound on the
	// collector's bytes allocated per episode over the last part against
	// the first: its work per episode, counted, so the machine's pace
	// (which moved the CPU per episode of the collector and of the
	// trainer alike by up to a fifth between parts of one run) cannot
	// hide a rise or make one.
	maxWorkGrowthPct int
}

func readSoakKnobs(t *testing.T) soakKnobs {
	t.Helper()
	k := soakKnobs{
		runs:             envInt(t, "PRIME_SOAK_RUNS", 96),
		concurrency:      envInt(t, "PRIME_SOAK_CONCURRENCY", 16),
		steps:            envInt(t, "PRIME_SOAK_STEPS", 500),
		stepDelay:        envDuration(t, "PRIME_SOAK_STEP_DELAY", 100*time.Millisecond),
		episodesPerStep:  envInt(t, "PRIME_SOAK_EPISODES_PER_STEP", 4),
		stepInterval:     envInt(t, "PRIME_SOAK_STEP_INTERVAL", 5),
		sampleEvery:      envDuration(t, "PRIME_SOAK_SAMPLE_EVERY", 5*time.Second),
		settle:           envDuration(t, "PRIME_SOAK_SETTLE", 3*time.Minute),
		goroutineSlack:   envInt(t, "PRIME_SOAK_GOROUTINE_SLACK", 20),
		maxRSSMB:         int64(envInt(t, "PRIME_SOAK_MAX_RSS_MB", 1024)),
		queueSize:        envInt(t, "PRIME_SOAK_QUEUE_SIZE", 1000),
		textBytes:        envInt(t, "PRIME_SOAK_EPISODE_TEXT_BYTES", 2000),
		discard:          envInt(t, "PRIME_SOAK_DISCARD", 0) == 1,
		maxGrowthPct:     envInt(t, "PRIME_SOAK_MAX_GROWTH_PCT", 20),
		maxWorkGrowthPct: envInt(t, "PRIME_SOAK_MAX_WORK_GROWTH_PCT", 5),
	}
	if k.runs < 1 || k.concurrency < 1 || k.steps < k.stepInterval || k.stepInterval < 1 {
		t.Fatalf("soak knobs make no soak: %+v", k)
	}
	if v := os.Getenv("PRIME_SOAK_CHECKPOINTS"); v != "" {
		for f := range strings.SplitSeq(v, ",") {
			pct, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || pct <= 0 || pct >= 100 || (len(k.checkpoints) > 0 && pct <= k.checkpoints[len(k.checkpoints)-1]) {
				t.Fatalf("PRIME_SOAK_CHECKPOINTS=%q: want ascending percentages between 0 and 100, e.g. 10,50", v)
			}
			k.checkpoints = append(k.checkpoints, pct)
		}
		if k.runs != 1 || !k.discard {
			t.Fatal("PRIME_SOAK_CHECKPOINTS needs PRIME_SOAK_RUNS=1 and PRIME_SOAK_DISCARD=1: one run, its rows counted")
		}
		k.checkpoints = append(k.checkpoints, 100)
	}
	return k
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
// which the test finds it on the platform) and its manifests, one per
// trainer process that played a part of the run.
type soakRun struct {
	key       string
	seed      int
	manifests []string
}

// sent adds up what the run's trainer processes say they sent.
func (r soakRun) sent(t *testing.T) manifest {
	t.Helper()
	all := manifest{TrainByDispatch: map[string]int64{}}
	for _, path := range r.manifests {
		m := readManifest(t, path)
		all.Steps = max(all.Steps, m.Steps)
		all.Episodes += m.Episodes
		all.EvalEpisodes += m.EvalEpisodes
		for step, n := range m.TrainByDispatch {
			all.TrainByDispatch[step] += n
		}
	}
	return all
}

// play runs one demo trainer process for r: steps from..to of its run,
// ending it with status ("none" sends no prime.run.end, so a later process
// continues the run). It returns the process's CPU time (user + system),
// or false when the trainer failed, which is reported with its output.
func (r *soakRun) play(t *testing.T, trainer, addr string, k soakKnobs, dir string, from, to int, status string) (time.Duration, bool) {
	manifest := filepath.Join(dir, fmt.Sprintf("%s-%06d.json", r.key, from))
	r.manifests = append(r.manifests, manifest)
	// The trainer's own bound: the test's -timeout (a long soak's single
	// run may take longer than the 30 minutes it is without one).
	deadline := time.Now().Add(30 * time.Minute)
	if d, ok := t.Deadline(); ok {
		deadline = d
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, trainer,
		"-endpoint", addr, "-run-key", r.key, "-run-name", r.key,
		"-seed", strconv.Itoa(r.seed), "-start-step", strconv.Itoa(from), "-steps", strconv.Itoa(to), "-status", status,
		"-step-delay", k.stepDelay.String(), "-episodes-per-step", strconv.Itoa(k.episodesPerStep),
		"-episode-text-bytes", strconv.Itoa(k.textBytes),
		"-export-timeout", "30s", "-manifest", manifest)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("trainer %s (steps %d-%d) failed: %v\n%s", r.key, from, to, err, out)
		return 0, false
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), true
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
		runs[i] = soakRun{key: fmt.Sprintf("soak-%03d", i), seed: i + 1}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			runs[i].play(t, trainer, addr, k, dir, 1, k.steps, "completed")
		})
	}
	wg.Wait()
	return runs
}

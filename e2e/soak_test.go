//go:build soak

package e2e

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The soak: many concurrent runs with episodes, through the built collector
// on the production config, while a probe samples its resident memory and
// goroutines. Not part of CI (build tag soak): run it with scripts/soak.sh.
func TestSoakManyConcurrentRunsLandExactlyOnceWithBoundedMemoryAndNoLeakedGoroutines(t *testing.T) {
	otelcol, trainer := binaries(t)
	k := readSoakKnobs(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-soak"}})
	defer platform.Close()
	addr, pprofAddr, storageDir := freeAddr(t), freeAddr(t), t.TempDir()
	c := startCollector(t, otelcol, soakConfig,
		"PRIME_OTLP_HTTP="+addr, "PRIME_PPROF="+pprofAddr, "PRIME_API_BASE="+platform.BaseURL(), "PRIME_API_KEY="+e2eKey,
		"PRIME_STORAGE_DIR="+storageDir, "PRIME_STEP_INTERVAL="+strconv.Itoa(k.stepInterval), "PRIME_QUEUE_SIZE="+strconv.Itoa(k.queueSize))

	p := newProbe(c.cmd.Process.Pid, pprofAddr)
	heapAtStart, err := p.liveHeap()
	if err != nil {
		fatalf(t, c, "the collector's heap at the start: %v", err)
	}
	start, err := p.take("start")
	if err != nil {
		fatalf(t, c, "the first reading of the collector: %v", err)
	}
	phase := newPhase("load")
	stop := make(chan struct{})
	sampling := p.every(t, k.sampleEvery, phase.get, stop)
	began := time.Now()

	runs := runFleet(t, trainer, addr, k, t.TempDir())
	trainersDone := time.Since(began)
	if t.Failed() {
		close(stop)
		sampling.Wait()
		fatalf(t, c, "a trainer failed")
	}
	phase.set("drain")
	awaitCloseOuts(t, c, platform, len(runs), k.settle)
	landed := time.Since(began)

	// Idle connections and workers come and go; a leak stays. Give the
	// count the settle time to come back within the slack.
	phase.set("idle")
	var end sample
	deadline := time.Now().Add(k.settle)
	for {
		if end, err = p.take("end"); err != nil {
			fatalf(t, c, "reading the collector at the end: %v", err)
		}
		if end.goroutines <= start.goroutines+k.goroutineSlack || time.Now().After(deadline) {
			break
		}
		time.Sleep(k.sampleEvery)
	}
	close(stop)
	sampling.Wait()
	heapAtEnd, err := p.liveHeap()
	if err != nil {
		fatalf(t, c, "the collector's heap at the end: %v", err)
	}

	fig := verifySoak(t, c, platform, runs, k)
	fig.heapAtStart, fig.heapAtEnd = heapAtStart, heapAtEnd
	fig.storageBytes = dirSize(t, storageDir)
	stopBegan := time.Now()
	c.stop()
	fig.shutdown = time.Since(stopBegan)
	fig.trainers, fig.landed = trainersDone, landed
	reportSoak(t, k, fig, p.all())

	out := c.out.String()
	if path := os.Getenv("PRIME_SOAK_LOG"); path != "" {
		if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
			t.Errorf("writing the collector log: %v", err)
		}
	}
	if strings.Contains(out, e2eKey) {
		t.Error("the API key appears in the collector's output")
	}
	if end.goroutines > start.goroutines+k.goroutineSlack {
		t.Errorf("goroutines leak: %d at the start, %d at the end after %s idle (slack %d)", start.goroutines, end.goroutines, k.settle, k.goroutineSlack)
	}
	if peak := maxOf(p.all(), func(s sample) int64 { return s.mem.hwm }); peak > k.maxRSSMB*1024 {
		t.Errorf("peak resident size %s is above the bound of %d MB", mb(peak), k.maxRSSMB)
	}
	if end.mem.rss > k.maxRSSMB*1024 {
		t.Errorf("resident size at the end %s is above the bound of %d MB", mb(end.mem.rss), k.maxRSSMB)
	}
}

// phase labels the samples the background probe takes.
type phase struct {
	mu sync.Mutex
	v  string
}

func newPhase(v string) *phase { return &phase{v: v} }

func (p *phase) get() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.v
}

func (p *phase) set(v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.v = v
}

// awaitCloseOuts waits until n runs exist and all are completed. Snapshots
// of the platform copy every object, so it polls gently.
func awaitCloseOuts(t *testing.T, c *collector, platform *rfttest.Server, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		done := 0
		runs := platform.Runs()
		for _, r := range runs {
			if r.Status == rfttest.StatusCompleted {
				done++
			}
		}
		if len(runs) == n && done == n {
			return
		}
		if time.Now().After(deadline) {
			fatalf(t, c, "after %s: %d runs on the platform, %d completed; want %d completed", within, len(runs), done, n)
		}
		time.Sleep(time.Second)
	}
}

// soakFigures is what the soak reports.
type soakFigures struct {
	runs, steps, episodes, evalEpisodes, rows, objects, metricPosts int
	heapAtStart, heapAtEnd                                          int64 // live heap after a GC, bytes
	storageBytes                                                    int64 // file_storage's files at the end
	trainers, landed, shutdown                                      time.Duration
	// complaints counts the collector's warn and error lines by level
	// and message.
	complaints map[string]int
}

// verifySoak checks what landed: one completed run per trainer, every
// step's metrics, and every cadence step's rows exactly once.
func verifySoak(t *testing.T, c *collector, platform *rfttest.Server, runs []soakRun, k soakKnobs) soakFigures {
	t.Helper()
	byName := map[string]rfttest.Run{}
	for _, r := range platform.Runs() {
		name, _ := r.Spec["name"].(string)
		if _, dup := byName[name]; dup {
			fatalf(t, c, "two platform runs for %q", name)
		}
		byName[name] = r
	}
	var fig soakFigures
	for _, want := range runs {
		run, ok := byName[want.key]
		if !ok {
			fatalf(t, c, "no platform run for %s", want.key)
		}
		if !run.Finalized {
			fatalf(t, c, "run %s was not finalized", want.key)
		}
		sent := readManifest(t, want.manifest)
		for step := int64(1); step <= int64(k.steps); step++ {
			for _, key := range []string{"loss", "reward/mean", "reward/count", "lr"} {
				if _, ok := run.Metrics[step][key]; !ok {
					fatalf(t, c, "run %s step %d has no %q: %v", want.key, step, key, run.Metrics[step])
				}
			}
		}
		byStep := map[int64][][]byte{}
		for _, o := range run.Objects {
			if !o.Confirmed {
				fatalf(t, c, "run %s: object %s was uploaded but never confirmed", want.key, o.Key)
			}
			if o.Step%int64(k.stepInterval) != 0 {
				fatalf(t, c, "run %s: object for off-cadence step %d", want.key, o.Step)
			}
			byStep[o.Step] = append(byStep[o.Step], o.Body)
		}
		for step := int64(k.stepInterval); step <= int64(k.steps); step += int64(k.stepInterval) {
			n := sent.TrainByDispatch[strconv.FormatInt(step, 10)]
			checkStepRows(t, run.ID, step, byStep[step], n)
			fig.rows += int(n)
		}
		fig.runs++
		fig.steps += len(run.Metrics)
		fig.episodes += sent.Episodes
		fig.evalEpisodes += sent.EvalEpisodes
		fig.objects += len(run.Objects)
		fig.metricPosts += run.MetricPosts
	}
	fig.complaints = map[string]int{}
	for line := range strings.Lines(c.out.String()) {
		// The console encoder: time, level, caller, message, fields.
		f := strings.SplitN(line, "\t", 5)
		if len(f) >= 4 && (f[1] == "warn" || f[1] == "error") {
			fig.complaints[f[1]+": "+f[3]]++
		}
	}
	return fig
}

// reportSoak writes the figures and the sampled series to the test log.
func reportSoak(t *testing.T, k soakKnobs, fig soakFigures, samples []sample) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "soak: %d runs (%d at once) x %d steps, step delay %s, %d train episodes per step, step_interval %d, queue_size %d\n",
		k.runs, k.concurrency, k.steps, k.stepDelay, k.episodesPerStep, k.stepInterval, k.queueSize)
	fmt.Fprintf(&b, "landed: %d runs completed, %d steps with metrics (%d metric posts), %d sample objects holding %d rows\n",
		fig.runs, fig.steps, fig.metricPosts, fig.objects, fig.rows)
	fmt.Fprintf(&b, "sent: %d episodes (%d of them eval)\n", fig.episodes, fig.evalEpisodes)
	fmt.Fprintf(&b, "durations: trainers %s, all closed out %s, SIGTERM to exit %s\n",
		fig.trainers.Round(time.Second), fig.landed.Round(time.Second), fig.shutdown.Round(10*time.Millisecond))
	fmt.Fprintf(&b, "collector log: %d distinct warn/error messages\n", len(fig.complaints))
	for _, m := range slices.Sorted(maps.Keys(fig.complaints)) {
		fmt.Fprintf(&b, "  %5d x %s\n", fig.complaints[m], m)
	}
	first, last := samples[0], samples[len(samples)-1]
	peakG := maxOf(samples, func(s sample) int64 { return int64(s.goroutines) })
	fmt.Fprintf(&b, "RSS: start %s, end %s (anon %s, file %s), peak (VmHWM) %s, peak sampled %s\n", mb(first.mem.rss), mb(last.mem.rss),
		mb(last.mem.anon), mb(last.mem.file), mb(last.mem.hwm), mb(maxOf(samples, func(s sample) int64 { return s.mem.rss })))
	fmt.Fprintf(&b, "live heap after GC: start %s, end %s (%.0f bytes per run, %.0f per step served)\n",
		mb(fig.heapAtStart/1024), mb(fig.heapAtEnd/1024), float64(fig.heapAtEnd-fig.heapAtStart)/float64(fig.runs),
		float64(fig.heapAtEnd-fig.heapAtStart)/float64(fig.steps))
	fmt.Fprintf(&b, "file_storage on disk at the end: %s\n", mb(fig.storageBytes/1024))
	fmt.Fprintf(&b, "goroutines: start %d, peak sampled %d, end %d\n", first.goroutines, peakG, last.goroutines)
	fmt.Fprintf(&b, "collector CPU (user+system): %s\n", last.cpu)
	fmt.Fprintf(&b, "%8s  %-6s %10s %10s %10s %10s %10s %9s\n", "t", "phase", "VmRSS", "RssAnon", "RssFile", "VmHWM", "goroutines", "CPU")
	for _, s := range samples {
		fmt.Fprintf(&b, "%8s  %-6s %10s %10s %10s %10s %10d %9s\n", s.at.Round(100*time.Millisecond), s.phase,
			mb(s.mem.rss), mb(s.mem.anon), mb(s.mem.file), mb(s.mem.hwm), s.goroutines, s.cpu)
	}
	t.Log("\n" + b.String())
	if path := os.Getenv("PRIME_SOAK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Errorf("writing the soak report: %v", err)
		}
	}
}

// dirSize is the total size of the files under dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n += info.Size()
		return err
	})
	if err != nil {
		t.Errorf("sizing %s: %v", dir, err)
	}
	return n
}

func maxOf(samples []sample, f func(sample) int64) int64 {
	var m int64
	for _, s := range samples {
		m = max(m, f(s))
	}
	return m
}

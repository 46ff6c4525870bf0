//go:build soak

package e2e

import (
	"errors"
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
// With PRIME_SOAK_CHECKPOINTS it is one long run instead, read at those
// shares of its length and at its end (playInParts).
func TestSoakManyConcurrentRunsLandExactlyOnceWithBoundedMemoryAndNoLeakedGoroutines(t *testing.T) {
	otelcol, trainer := binaries(t)
	k := readSoakKnobs(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-soak"}, DiscardObjects: k.discard})
	defer platform.Close()
	addr, pprofAddr, storageDir := freeAddr(t), freeAddr(t), t.TempDir()
	c := startCollector(t, otelcol, soakConfig(t),
		"PRIME_OTLP_HTTP="+addr, "PRIME_PPROF="+pprofAddr, "PRIME_API_BASE="+platform.BaseURL(), "PRIME_API_KEY="+e2eKey,
		"PRIME_STORAGE_DIR="+storageDir, "PRIME_STEP_INTERVAL="+strconv.Itoa(k.stepInterval), "PRIME_QUEUE_SIZE="+strconv.Itoa(k.queueSize))

	p := newProbe(c.cmd.Process.Pid, pprofAddr)
	p.landed = platform.ConfirmedRows
	heapAtStart, err := p.liveHeap()
	if err != nil {
		fatalf(t, c, "the collector's heap at the start: %v", err)
	}
	marks := &checkpoints{t: t, c: c, p: p, platform: platform, dir: os.Getenv("PRIME_SOAK_HEAP_DIR")}
	if marks.dir != "" {
		if err := marks.saveProfile(0); err != nil {
			fatalf(t, c, "the heap profile at the start: %v", err)
		}
	}
	start, err := p.take("start")
	if err != nil {
		fatalf(t, c, "the first reading of the collector: %v", err)
	}
	before := checkpoint{at: start} // no episodes yet
	if before.allocated, before.collections, err = p.gcWork(); err != nil {
		fatalf(t, c, "the first reading of the collector: %v", err)
	}
	phase := newPhase("load")
	stop := make(chan struct{})
	sampling := p.every(t, k.sampleEvery, phase.get, stop)
	var halt sync.Once
	stopSampling := func() {
		halt.Do(func() { close(stop) })
		sampling.Wait()
	}
	// A fatal failure ends the test with the sampler still running.
	t.Cleanup(stopSampling)
	began := time.Now()

	var runs []soakRun
	if len(k.checkpoints) > 0 {
		runs = []soakRun{playInParts(t, c, trainer, addr, k, t.TempDir(), marks, phase)}
	} else {
		runs = runFleet(t, trainer, addr, k, t.TempDir())
	}
	trainersDone := time.Since(began)
	if t.Failed() {
		stopSampling()
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
	stopSampling()
	heapAtEnd, err := p.liveHeap()
	if err != nil {
		fatalf(t, c, "the collector's heap at the end: %v", err)
	}
	if marks.dir != "" && len(k.checkpoints) == 0 {
		// Many runs have no checkpoints; the end's profile, against the
		// start's, shows what the closed runs left behind.
		if err := marks.saveProfile(100); err != nil {
			fatalf(t, c, "the heap profile at the end: %v", err)
		}
	}

	fig := verifySoak(t, c, platform, runs, k)
	fig.heapAtStart, fig.heapAtEnd = heapAtStart, heapAtEnd
	fig.checkpoints, fig.start = marks.taken, before
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
	if first, last, ok := marks.span(); ok && last.heap > first.heap*int64(100+k.maxGrowthPct)/100 {
		t.Errorf("the live heap after GC grew with the run: %s at %d%% of its steps, %s at %d%% (bound +%d%%)",
			mb(first.heap/1024), first.pct, mb(last.heap/1024), last.pct, k.maxGrowthPct)
	}
	if parts := fig.parts(); len(parts) > 1 {
		first, last := parts[0], parts[len(parts)-1]
		if last.allocated > first.allocated*int64(100+k.maxWorkGrowthPct)/100 {
			t.Errorf("the collector's work per episode grew with the run: %d bytes allocated per episode over the first part, %d over the last (bound +%d%%)",
				first.allocated, last.allocated, k.maxWorkGrowthPct)
		}
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
	// checkpoints are the readings at 10 %, 50 % and 100 % of the rows
	// landed (with PRIME_SOAK_DISCARD=1).
	checkpoints []checkpoint
	start       checkpoint // the collector before the load
}

// perEpisode is a part of the run read per episode it sent.
type perEpisode struct {
	cpu, trainer time.Duration // the collector's CPU, and the part's trainer process's
	allocated    int64         // the collector's bytes allocated
	collections  float64       // the collector's own garbage collections
}

// paced is the collector's CPU per episode over the trainer's: the
// trainer's is the same work in every part, so the machine's pace cancels.
func (e perEpisode) paced() float64 { return float64(e.cpu) / float64(max(1, e.trainer)) }

// parts reads each part of the run (from the checkpoint before it, or the
// start) per episode.
func (fig soakFigures) parts() []perEpisode {
	out := make([]perEpisode, len(fig.checkpoints))
	prev := fig.start
	for i, m := range fig.checkpoints {
		n := int64(max(1, m.episodes-prev.episodes))
		out[i] = perEpisode{
			cpu:         (m.at.cpu - prev.at.cpu) / time.Duration(n),
			trainer:     m.trainerCPU / time.Duration(n),
			allocated:   (m.allocated - prev.allocated) / n,
			collections: float64(m.collections-prev.collections) / float64(n),
		}
		prev = m
	}
	return out
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
		sent := want.sent(t)
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
			if k.discard {
				// No bytes kept: the step has its objects here, and the
				// rows are counted for the whole soak below.
				if n > 0 && len(byStep[step]) == 0 {
					fatalf(t, c, "run %s: step %d has %d train episodes and no object", want.key, step, n)
				}
			} else {
				checkStepRows(t, run.ID, step, byStep[step], n)
			}
			fig.rows += int(n)
		}
		fig.runs++
		fig.steps += len(run.Metrics)
		fig.episodes += sent.Episodes
		fig.evalEpisodes += sent.EvalEpisodes
		fig.objects += len(run.Objects)
		fig.metricPosts += run.MetricPosts
	}
	if got := platform.ConfirmedRows(); k.discard && got != int64(fig.rows) {
		fatalf(t, c, "%d rows in confirmed objects, want every cadence step's train episodes once: %d", got, fig.rows)
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
	fmt.Fprintf(&b, "soak: %d runs (%d at once) x %d steps, step delay %s, %d train episodes per step of %d bytes of chat text, step_interval %d, queue_size %d, objects discarded: %v\n",
		k.runs, k.concurrency, k.steps, k.stepDelay, k.episodesPerStep, k.textBytes, k.stepInterval, k.queueSize, k.discard)
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
	if len(fig.checkpoints) > 0 {
		fmt.Fprintf(&b, "checkpoints, each once its part had landed (live heap after a forced GC; RSS just before it):\n")
		fmt.Fprintf(&b, "%6s %9s %9s %8s %8s %8s %10s %10s %10s %10s %10s %11s %11s %8s %13s %10s\n", "steps", "episodes", "rows", "t", "part", "landing",
			"live heap", "VmRSS", "RssAnon", "RssFile", "goroutines", "CPU/episode", "trainer's", "ratio", "alloc/episode", "GCs/1k ep")
		parts := fig.parts()
		for i, m := range fig.checkpoints {
			closed := ""
			if m.runClosed {
				closed = "  (run already closed out)"
			}
			e := parts[i]
			fmt.Fprintf(&b, "%5d%% %9d %9d %8s %8s %8s %10s %10s %10s %10s %10d %11s %11s %8.2f %13d %10.2f%s\n", m.pct, m.episodes, m.rows, m.at.at.Round(time.Second),
				m.played.Round(time.Second), m.landed.Round(100*time.Millisecond),
				mb(m.heap/1024), mb(m.at.mem.rss), mb(m.at.mem.anon), mb(m.at.mem.file), m.at.goroutines, e.cpu.Round(time.Microsecond),
				e.trainer.Round(time.Microsecond), e.paced(), e.allocated, 1000*e.collections, closed)
		}
		fmt.Fprintf(&b, "CPU/episode is the collector's over the part; trainer's is the part's trainer process's; ratio is the first over the second;\n"+
			"alloc/episode is the collector's bytes allocated per episode, GCs/1k ep its own garbage collections per 1,000 (checkpoints' forced ones not counted)\n")
		end := len(parts) - 1
		fmt.Fprintf(&b, "CPU per episode, last part over the first: %.2f; read against the trainer's: %.2f\n",
			float64(parts[end].cpu)/float64(parts[0].cpu), parts[end].paced()/parts[0].paced())
		if trend, ok := fitCPUTrend(samples); ok {
			at := func(pct int) time.Duration { return trend.at(fig.checkpoints[end].rows * int64(pct) / 100) }
			fmt.Fprintf(&b, "CPU per episode on the line through the load's %d intervals (each %.0f %% off it, weighted rms): %s at 10 %% of the rows, %s at 50 %%, %s at 100 %%: %.3f\n",
				trend.intervals, 100*trend.spread, at(10).Round(100*time.Nanosecond), at(50).Round(100*time.Nanosecond), at(100).Round(100*time.Nanosecond),
				float64(at(100))/float64(at(10)))
		}
		first, last := fig.checkpoints[0], fig.checkpoints[len(fig.checkpoints)-1]
		var played time.Duration
		for _, m := range fig.checkpoints {
			played += m.played
		}
		fmt.Fprintf(&b, "rate while the trainer played: %.0f episodes/s\n", float64(last.episodes)/played.Seconds())
		growth := func(a, b int64) string { return fmt.Sprintf("%+.1f %%", 100*float64(b-a)/float64(a)) }
		fmt.Fprintf(&b, "%d%% -> %d%%: live heap %s (%.1f bytes per row landed since), VmRSS %s, RssAnon %s; bound on the live heap +%d %%\n",
			first.pct, last.pct, growth(first.heap, last.heap), float64(last.heap-first.heap)/float64(last.rows-first.rows),
			growth(first.at.mem.rss, last.at.mem.rss), growth(first.at.mem.anon, last.at.mem.anon), k.maxGrowthPct)
	}
	fmt.Fprintf(&b, "file_storage on disk at the end: %s\n", mb(fig.storageBytes/1024))
	fmt.Fprintf(&b, "goroutines: start %d, peak sampled %d, end %d\n", first.goroutines, peakG, last.goroutines)
	fmt.Fprintf(&b, "collector CPU (user+system): %s\n", last.cpu)
	fmt.Fprintf(&b, "%8s  %-6s %10s %10s %10s %10s %10s %9s %9s\n", "t", "phase", "VmRSS", "RssAnon", "RssFile", "VmHWM", "goroutines", "CPU", "rows")
	for _, s := range samples {
		fmt.Fprintf(&b, "%8s  %-6s %10s %10s %10s %10s %10d %9s %9d\n", s.at.Round(100*time.Millisecond), s.phase,
			mb(s.mem.rss), mb(s.mem.anon), mb(s.mem.file), mb(s.mem.hwm), s.goroutines, s.cpu, s.rows)
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

// playInParts plays the soak's one run as one trainer process per part,
// each ending at the next of k.checkpoints' percentages of its steps (the
// last at 100 %, with prime.run.end), and reads the collector once each
// part has landed: every row it sent confirmed and every step's metrics
// posted, so nothing is in flight but what the run keeps. Each process's
// -steps is its part's last step, so the run is created with the first
// part's max_steps and the simulated curves restart each part; neither
// matters to what is measured.
func playInParts(t *testing.T, c *collector, trainer, addr string, k soakKnobs, dir string, marks *checkpoints, phase *phase) soakRun {
	t.Helper()
	run := soakRun{key: "soak-000", seed: 1}
	from := 1
	for _, pct := range k.checkpoints {
		to := max(from, k.steps*pct/100)
		status := "none"
		if pct == 100 {
			status = "completed"
		}
		phase.set("load")
		began := time.Now()
		trainerCPU, ok := run.play(t, trainer, addr, k, dir, from, to, status)
		if !ok {
			return run
		}
		played := time.Since(began)
		phase.set("land")
		marks.at(pct, run, k, to, played, trainerCPU)
		from = to + 1
	}
	return run
}

// checkpoint is a reading of the collector at the end of a part of the
// run, once the part had landed.
type checkpoint struct {
	pct      int           // of the run's steps played
	rows     int64         // confirmed rows of the run so far
	episodes int           // sent so far, eval ones included
	played   time.Duration // the part's trainer, start to exit
	// trainerCPU is the part's trainer process's CPU time. Its work per
	// episode is the same in every part, so it reads the machine's pace
	// along the run: the peer the collector's CPU per episode is read against.
	trainerCPU time.Duration
	landed     time.Duration // from the trainer's exit to the last row and metrics
	runClosed  bool          // the run had been closed out already (the 100 % reading came late)
	at         sample
	heap       int64 // live heap after a forced GC, bytes
	// allocated and collections are the collector's bytes allocated and
	// garbage collections run on its own so far (probe.gcWork).
	allocated, collections int64
}

// checkpoints reads the collector at the end of each part of the run and,
// when dir is set, keeps its heap profile there.
type checkpoints struct {
	t        *testing.T
	c        *collector
	p        *probe
	platform *rfttest.Server
	dir      string // PRIME_SOAK_HEAP_DIR: heap-<pct>.pb.gz profiles; "" keeps none

	taken []checkpoint
}

// at waits until everything r sent up to step has landed and reads the
// collector as the pct checkpoint.
func (m *checkpoints) at(pct int, r soakRun, k soakKnobs, step int, played, trainerCPU time.Duration) {
	m.t.Helper()
	sent := r.sent(m.t)
	var rows int64
	for s, n := range sent.TrainByDispatch {
		if v, _ := strconv.ParseInt(s, 10, 64); v%int64(k.stepInterval) == 0 {
			rows += n
		}
	}
	began := time.Now()
	deadline := began.Add(k.settle)
	var run rfttest.Run
	for {
		if m.platform.ConfirmedRows() >= rows {
			if runs := m.platform.Runs(); len(runs) == 1 && len(runs[0].Metrics) >= step {
				run = runs[0]
				break
			}
		}
		if time.Now().After(deadline) {
			fatalf(m.t, m.c, "%s after the trainer's part to %d%%: %d of %d rows confirmed", k.settle, pct, m.platform.ConfirmedRows(), rows)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cp := checkpoint{pct: pct, rows: m.platform.ConfirmedRows(), episodes: sent.Episodes, played: played, trainerCPU: trainerCPU,
		landed: time.Since(began), runClosed: run.Status != rfttest.StatusRunning}
	var err error
	if cp.at, err = m.p.take(fmt.Sprintf("%d%%", pct)); err != nil {
		fatalf(m.t, m.c, "the %d%% checkpoint: %v", pct, err)
	}
	if cp.allocated, cp.collections, err = m.p.gcWork(); err != nil {
		fatalf(m.t, m.c, "the %d%% checkpoint: %v", pct, err)
	}
	if cp.heap, err = m.p.liveHeap(); err != nil {
		fatalf(m.t, m.c, "the %d%% checkpoint: %v", pct, err)
	}
	if m.dir != "" {
		if err := m.saveProfile(pct); err != nil {
			fatalf(m.t, m.c, "the %d%% checkpoint's heap profile: %v", pct, err)
		}
	}
	m.taken = append(m.taken, cp)
}

func (m *checkpoints) saveProfile(pct int) error {
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(m.dir, fmt.Sprintf("heap-%03d.pb.gz", pct)))
	if err != nil {
		return err
	}
	return errors.Join(m.p.heapProfile(f), f.Close())
}

// span is the first and last checkpoint, when there are two.
func (m *checkpoints) span() (first, last checkpoint, ok bool) {
	if len(m.taken) < 2 {
		return checkpoint{}, checkpoint{}, false
	}
	return m.taken[0], m.taken[len(m.taken)-1], true
}

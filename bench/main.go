package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

// options are the command line.
type options struct {
	run        runOptions
	reps       int
	configs    []string
	loads      []loadSpec
	modes      []overflowMode
	profileDir string // "": no profile
	// harnessProfile: a CPU profile of this process, whose fake platform
	// and sink share the cores with the collector ("": none).
	harnessProfile string
}

// overflowMode is what the sending queue does when full.
type overflowMode string

const (
	// block: block_on_overflow, the receiver's call waits for room, so
	// the senders slow down to the exporter's pace, as an SDK exporter
	// waiting on its export call does.
	block overflowMode = "block"
	// refuse: the receiver refuses what does not fit (Unavailable) and the
	// senders send it again after 20 ms, as an SDK exporter retries.
	refuse overflowMode = "refuse"
)

var overflowModes = []overflowMode{block, refuse}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("primebench", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.run.collector, "collector", "", "the bench collector binary (built from bench/builder-config.yaml)")
	fs.StringVar(&o.run.agent, "agent", "", "the agent collector binary (deploy/agent's build), for -configs prime-agent")
	fs.StringVar(&o.run.workDir, "workdir", "_build/bench", "where collector configs and logs go")
	fs.IntVar(&o.run.senders, "senders", 4, "concurrent OTLP gRPC clients")
	fs.DurationVar(&o.run.timeout, "timeout", 10*time.Minute, "bound on one measured run")
	fs.IntVar(&o.run.queueMiB, "queue-mib", defaultQueueMiB, "every measured exporter's in-memory sending queue, MiB (bytes sizer)")
	fs.IntVar(&o.reps, "reps", 3, "reps per configuration, interleaved")
	configs := fs.String("configs", strings.Join(configurations, ","), "configurations to run")
	modes := fs.String("overflow", "block,refuse", "what a full sending queue does: block (block_on_overflow) and/or refuse; each mode is a column of the report")
	small := fs.Int("small", 200_000, "episodes of the small load")
	smallBytes := fs.Int("small-bytes", 2<<10, "encoded size of a small episode")
	large := fs.Int("large", 4_000, "episodes of the large load")
	largeBytes := fs.Int("large-bytes", 200<<10, "encoded size of a large episode")
	runs := fs.Int("runs", 8, "training runs the load carries at once")
	shapeList := fs.String("shapes", "", "episode shapes, each a pair of loads reported apart (default: every shape: plain,verifiers,native,tokens)")
	quick := fs.Bool("quick", false, "one rep of a tenth of each load: a smoke run, not a measurement")
	fs.StringVar(&o.profileDir, "profile-dir", "", "also write a CPU profile of prime and of debug per load here (pprof extension)")
	fs.StringVar(&o.harnessProfile, "harness-profile", "", "write a CPU profile of this process (senders, fake platform, sink, floor) here")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.run.collector == "" {
		return o, errors.New("-collector is required")
	}
	if *quick {
		o.reps, *small, *large = 1, *small/10, *large/10
	}
	for _, m := range strings.Split(*modes, ",") {
		if !slices.Contains(overflowModes, overflowMode(m)) {
			return o, fmt.Errorf("unknown -overflow mode %q (want some of %v)", m, overflowModes)
		}
		o.modes = append(o.modes, overflowMode(m))
	}
	o.configs = strings.Split(*configs, ",")
	for _, c := range o.configs {
		if !slices.Contains(allConfigurations(), c) {
			return o, fmt.Errorf("unknown configuration %q (want some of %v)", c, allConfigurations())
		}
	}
	if o.reps < 1 || o.run.senders < 1 || *runs < 1 || o.run.queueMiB < 1 {
		return o, errors.New("-reps, -senders, -runs and -queue-mib must be positive")
	}
	all, err := newShapes()
	if err != nil {
		return o, err
	}
	shapes := all
	if *shapeList != "" {
		if shapes, err = pickShapes(all, *shapeList); err != nil {
			return o, err
		}
	}
	// Requests stay well below the otlp receiver's 4 MiB message limit, and
	// near what an SDK's batch processor sends (512 records at most).
	for _, sh := range shapes {
		o.loads = append(o.loads,
			loadSpec{name: sh.name + "-" + sizeName(*smallBytes), shape: sh, size: sizeName(*smallBytes), episodes: *small, episodeBytes: *smallBytes,
				perRequest: clamp((512<<10) / *smallBytes, 1, 512), perStep: 1000, runs: *runs},
			loadSpec{name: sh.name + "-" + sizeName(*largeBytes), shape: sh, size: sizeName(*largeBytes), large: true, episodes: *large, episodeBytes: *largeBytes,
				perRequest: clamp((2<<20) / *largeBytes, 1, 512), perStep: 50, runs: *runs})
	}
	return o, nil
}

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }

func sizeName(b int) string {
	if b >= 1<<10 {
		return fmt.Sprintf("%dKB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "primebench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.harnessProfile != "" {
		f, err := os.Create(o.harnessProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "primebench:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "primebench:", err)
		os.Exit(1)
	}
}

// run measures each load in turn (a shape's small load, then its large
// one, shape after shape; one load's bytes in memory at a time),
// reps interleaved across overflow modes and configurations, each rep
// starting with the Snappy floor at the load's text, and prints the tables
// and ratios.
func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.run.workDir, 0o755); err != nil {
		return err
	}
	rep := report{cores: runtime.GOMAXPROCS(0), reps: o.reps, queueMiB: o.run.queueMiB, figs: map[column]map[string]figures{}, floors: map[string]time.Duration{}}
	for _, spec := range o.loads {
		built := time.Now()
		l, err := buildLoad(spec, runtime.GOMAXPROCS(0))
		if err != nil {
			return err
		}
		progress("load %s: %d requests, %.1f MB, built in %s", spec.name, len(l.requests), float64(l.bytes)/1e6, time.Since(built).Round(time.Millisecond))
		ft, err := sampleFloorText(l)
		if err != nil {
			return err
		}
		results := map[column]map[string][]result{}
		var floors []float64
		for r := 1; r <= o.reps; r++ {
			runtime.GC()
			f, err := snappyFloor(ft, runtime.GOMAXPROCS(0), 500*time.Millisecond)
			if err != nil {
				return err
			}
			floors = append(floors, float64(f))
			progress("load %s rep %d Snappy floor %.1f µs CPU per episode, every core compressing (%.1f KB of cell text each)", spec.name, r,
				float64(f)/float64(time.Microsecond), float64(len(ft.text))/float64(ft.episodes)/1024)
			for _, mode := range o.modes {
				col := spec.column(mode)
				if results[col] == nil {
					results[col] = map[string][]result{}
				}
				for _, c := range o.configs {
					runtime.GC() // the last run's garbage is not this run's cost
					res, err := measure(ctx, o.run, l, c, mode, r, "", 0)
					if err != nil {
						return err
					}
					progress("load %s rep %d %-6s %-8s %6.2f s  %8.0f episodes/s  CPU %6.2f s  peak RSS %4d MiB  peak queue %4d MiB  retries %d",
						spec.name, r, mode, c, res.wall.Seconds(), float64(spec.episodes)/res.wall.Seconds(), res.cpu.Seconds(), res.peakRSS>>20, res.peakQ>>20, res.retries)
					results[col][c] = append(results[col][c], res)
				}
			}
		}
		rep.floors[spec.name] = time.Duration(median(floors))
		rep.loads = append(rep.loads, l)
		for _, mode := range o.modes {
			col := spec.column(mode)
			rep.cols = append(rep.cols, col)
			rep.figs[col] = map[string]figures{}
			for c, rs := range results[col] {
				rep.figs[col][c] = summarize(l, rs)
			}
		}
		for _, config := range []string{"prime", "debug"} {
			if o.profileDir == "" || !slices.Contains(o.configs, config) {
				continue
			}
			col := spec.column(o.modes[0])
			if err := profile(ctx, o, l, config, o.modes[0], rep.figs[col][config].wall); err != nil {
				return err
			}
		}
		for _, mode := range o.modes {
			rep.printLoad(os.Stdout, l, mode)
		}
		l.requests = nil // the next load needs the memory
	}
	for _, sh := range rep.shapes() {
		rep.printRatios(os.Stdout, sh)
	}
	rep.printTargets(os.Stdout)
	return nil
}

// profile runs config once more on l with the pprof extension and writes
// its CPU profile over the measured runs' median span: prime's, and
// debug's beside it, since debug's is the receiver's share both pay.
func profile(ctx context.Context, o options, l *load, config string, mode overflowMode, span time.Duration) error {
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.profileDir, config+"-"+l.spec.name+".pprof")
	runtime.GC()
	if _, err := measure(ctx, o.run, l, config, mode, 0, path, span); err != nil {
		return err
	}
	progress("load %s: CPU profile of %s in %s", l.spec.name, config, path)
	return nil
}

// progress goes to stderr, so stdout holds the report alone.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...)
}

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
	profileDir string // "": no profile
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("primebench", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.run.collector, "collector", "", "the bench collector binary (built from bench/builder-config.yaml)")
	fs.StringVar(&o.run.workDir, "workdir", "_build/bench", "where collector configs and logs go")
	fs.IntVar(&o.run.senders, "senders", 4, "concurrent OTLP gRPC clients")
	fs.DurationVar(&o.run.timeout, "timeout", 10*time.Minute, "bound on one measured run")
	fs.IntVar(&o.reps, "reps", 3, "reps per configuration, interleaved")
	configs := fs.String("configs", strings.Join(configurations, ","), "configurations to run")
	small := fs.Int("small", 200_000, "episodes of the small load")
	smallBytes := fs.Int("small-bytes", 2<<10, "encoded size of a small episode")
	large := fs.Int("large", 4_000, "episodes of the large load")
	largeBytes := fs.Int("large-bytes", 200<<10, "encoded size of a large episode")
	runs := fs.Int("runs", 8, "training runs the load carries at once")
	quick := fs.Bool("quick", false, "one rep of a tenth of each load: a smoke run, not a measurement")
	fs.StringVar(&o.profileDir, "profile-dir", "", "also write a CPU profile of prime per load here (pprof extension)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.run.collector == "" {
		return o, errors.New("-collector is required")
	}
	if *quick {
		o.reps, *small, *large = 1, *small/10, *large/10
	}
	o.configs = strings.Split(*configs, ",")
	for _, c := range o.configs {
		if !slices.Contains(configurations, c) {
			return o, fmt.Errorf("unknown configuration %q (want some of %v)", c, configurations)
		}
	}
	if o.reps < 1 || o.run.senders < 1 || *runs < 1 {
		return o, errors.New("-reps, -senders and -runs must be positive")
	}
	// Requests stay well below the otlp receiver's 4 MiB message limit, and
	// near what an SDK's batch processor sends (512 records at most).
	o.loads = []loadSpec{
		{name: sizeName(*smallBytes), episodes: *small, episodeBytes: *smallBytes, perRequest: clamp((512<<10) / *smallBytes, 1, 512), perStep: 1000, runs: *runs},
		{name: sizeName(*largeBytes), episodes: *large, episodeBytes: *largeBytes, perRequest: clamp((2<<20) / *largeBytes, 1, 512), perStep: 50, runs: *runs},
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
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "primebench:", err)
		os.Exit(1)
	}
}

// run measures each load in turn (one load's bytes in memory at a time),
// reps interleaved across configurations, and prints the tables and ratios.
func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.run.workDir, 0o755); err != nil {
		return err
	}
	var loads []*load
	figs := map[string]map[string]figures{}
	for _, spec := range o.loads {
		built := time.Now()
		l, err := buildLoad(spec, runtime.GOMAXPROCS(0))
		if err != nil {
			return err
		}
		progress("load %s: %d requests, %.1f MB, built in %s", spec.name, len(l.requests), float64(l.bytes)/1e6, time.Since(built).Round(time.Millisecond))
		results := map[string][]result{}
		for rep := 1; rep <= o.reps; rep++ {
			for _, c := range o.configs {
				runtime.GC() // the last run's garbage is not this run's cost
				r, err := measure(ctx, o.run, l, c, rep, "", 0)
				if err != nil {
					return err
				}
				progress("load %s rep %d %-8s %6.2f s  %8.0f episodes/s  CPU %6.2f s  peak RSS %4d MiB",
					spec.name, rep, c, r.wall.Seconds(), float64(spec.episodes)/r.wall.Seconds(), r.cpu.Seconds(), r.peakRSS>>20)
				results[c] = append(results[c], r)
			}
		}
		figs[spec.name] = map[string]figures{}
		for c, rs := range results {
			figs[spec.name][c] = summarize(l, rs)
		}
		if o.profileDir != "" && slices.Contains(o.configs, "prime") {
			if err := profilePrime(ctx, o, l, figs[spec.name]["prime"].wall); err != nil {
				return err
			}
		}
		printLoad(os.Stdout, l, o.reps, figs[spec.name])
		l.requests = nil // the next load needs the memory
		loads = append(loads, l)
	}
	printRatios(os.Stdout, loads, figs)
	return nil
}

// profilePrime runs prime once more on l with the pprof extension and
// writes its CPU profile over the measured runs' median span.
func profilePrime(ctx context.Context, o options, l *load, span time.Duration) error {
	if err := os.MkdirAll(o.profileDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.profileDir, "prime-"+l.spec.name+".pprof")
	runtime.GC()
	if _, err := measure(ctx, o.run, l, "prime", 0, path, span); err != nil {
		return err
	}
	progress("load %s: CPU profile of prime in %s", l.spec.name, path)
	return nil
}

// progress goes to stderr, so stdout holds the report alone.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...)
}

package offlinesync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
)

// Platform is what a sync asks of the platform: the exporter's own online
// backend (platform.Online), so the calls, retries and replay rules are
// the exporter's.
type Platform interface {
	platform.Runs
	platform.Objects
}

// Options configure a sync.
type Options struct {
	Platform Platform
	// Endpoint is the API prefix the runs go to; the journal records it.
	Endpoint string
	// Frontend is the dashboard's base, for the links in the reports.
	Frontend string
	// TeamID creates runs whose run.json names no team.
	TeamID string
	// RunID attaches the one run directory to this platform run instead
	// of creating one.
	RunID string
	// DryRun plans and sends nothing; it needs no Platform.
	DryRun bool
	// Parallel objects are uploaded at once in each run (0 → 4).
	Parallel int
	// ParallelRuns runs are synced at once (0 → 4), each under its own
	// lock and journal: at most ParallelRuns × Parallel objects in flight.
	ParallelRuns int
	// RetryFor bounds how long a replayable call that keeps failing
	// retryably is tried again before the run is left for the next sync
	// (0 → 5 minutes, exporterhelper's default).
	RetryFor time.Duration
	Progress Progress
	// Sleep waits between retries; nil → rft.Sleep, a timer honouring ctx. Tests
	// inject.
	Sleep func(ctx context.Context, d time.Duration) error
}

// ErrKeyRefused ends a sync: the platform refused PRIME_API_KEY, so every
// further call would be refused too.
var ErrKeyRefused = misconfigured{errors.New("the platform refused PRIME_API_KEY (401): set a valid key and run prime-sync again")}

// Sync syncs the run directories, ParallelRuns at a time, and reports on
// each, in the order given. Each run keeps its own lock and journal, so
// running several at once changes nothing of what each sends (see the
// package doc). Until the platform has accepted the key once, runs go one
// at a time: a refused key is refused once, not once per run in flight.
// A refused key stops the sync: the runs not yet begun are reported with
// ErrKeyRefused. Any other failure is its run's alone; the others go on.
func Sync(ctx context.Context, opts Options, dirs []string) []Report {
	opts.Parallel = cmp.Or(opts.Parallel, 4)
	opts.ParallelRuns = cmp.Or(opts.ParallelRuns, 4)
	opts.RetryFor = cmp.Or(opts.RetryFor, 5*time.Minute)
	if opts.Progress == nil {
		opts.Progress = quiet{}
	}
	if opts.Sleep == nil {
		opts.Sleep = rft.Sleep
	}
	var total int64
	for _, d := range dirs {
		total += pendingBytes(d)
	}
	opts.Progress.Start(len(dirs), total)
	defer opts.Progress.Finish()

	key := newKeyCheck(opts.Platform)
	if opts.Platform != nil {
		opts.Platform = key
	}
	var (
		reports = make([]Report, len(dirs))
		stopMu  sync.Mutex
		stop    error // why runs not yet begun are not begun
		todo    = make(chan int)
		ended   = make([]chan struct{}, len(dirs))
		wg      sync.WaitGroup
	)
	stopped := func() error {
		stopMu.Lock()
		defer stopMu.Unlock()
		return stop
	}
	for i := range ended {
		ended[i] = make(chan struct{})
	}
	for range min(opts.ParallelRuns, len(dirs)) {
		wg.Go(func() {
			for i := range todo {
				r := Report{Dir: dirs[i]}
				if err := cmp.Or(stopped(), ctx.Err()); err != nil {
					r.Outcome, r.Err = outcomeOf(err), err
				} else {
					opts.Progress.Run(i+1, dirs[i])
					r = syncRun(ctx, &opts, dirs[i])
				}
				if errors.Is(r.Err, ErrKeyRefused) {
					stopMu.Lock()
					stop = cmp.Or(stop, r.Err)
					stopMu.Unlock()
				}
				reports[i] = r
				opts.Progress.Ended(dirs[i], r.Err)
				close(ended[i])
			}
		})
	}
	for i := range dirs {
		if i > 0 {
			// One at a time until the key is known good: the run before
			// this one proves it, or ends (then this one tries).
			select {
			case <-key.accepted:
			case <-ended[i-1]:
			case <-ctx.Done():
			}
		}
		todo <- i
	}
	close(todo)
	wg.Wait()
	return reports
}

// pendingBytes estimates what is left to send of a run, for the bar.
func pendingBytes(dir string) int64 {
	j, err := loadJournal(dir)
	if err != nil {
		return 0
	}
	_, n, _ := readMetrics(dir, j.MetricsOffset)
	objs, _ := listObjects(dir)
	for _, o := range objs {
		if !j.Objects[o.Name].done() {
			n += o.Size
		}
	}
	return n
}

// syncRun is one run directory's sync: lock, run id, metrics, objects,
// close-out, each step journaled.
func syncRun(ctx context.Context, opts *Options, dir string) Report {
	rep := Report{Dir: dir}
	rec, err := readRun(dir)
	if err != nil {
		return failed(rep, configError("%s: %w", dir, err))
	}
	rep.Identity = rec.Identity
	if !opts.DryRun {
		unlock, err := lock(dir)
		if err != nil {
			return failed(rep, fmt.Errorf("%s: %w", dir, err))
		}
		defer unlock()
	}
	j, err := loadJournal(dir)
	if err != nil {
		return failed(rep, configError("%s: %w", dir, err))
	}
	s := &runSync{opts: opts, dir: dir, rec: rec, j: j, rep: &rep}
	s.journal = &journalWriter{dir: dir, mu: &s.mu, j: j}
	if opts.DryRun {
		// A dry run says what it would send even when the real sync would
		// stop, and says why it would.
		s.plan()
		if err := s.check(); err != nil {
			return failed(rep, err)
		}
		return rep
	}
	if err := s.check(); err != nil {
		return failed(rep, err)
	}
	err = s.run(ctx)
	rep.RunID = j.RunID
	if j.RunID != "" {
		rep.Dashboard = rft.TrainingDashboardURL(opts.Frontend, j.RunID)
	}
	rep.Refused = len(j.MetricsRefused)
	for _, o := range j.Objects {
		if o.Refused != "" {
			rep.Refused++
		}
	}
	if err != nil {
		if platform.KeyRefused(err) {
			err = ErrKeyRefused
		}
		return failed(rep, err)
	}
	return rep
}

func failed(rep Report, err error) Report {
	rep.Err, rep.Outcome = err, outcomeOf(err)
	return rep
}

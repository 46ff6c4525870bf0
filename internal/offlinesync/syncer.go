package offlinesync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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
	// Parallel objects are uploaded at once (0 → 4).
	Parallel int
	// RetryFor bounds how long a replayable call that keeps failing
	// retryably is tried again before the run is left for the next sync
	// (0 → 5 minutes, exporterhelper's default).
	RetryFor time.Duration
	Progress Progress
	// Sleep waits between retries; nil → a timer honouring ctx. Tests
	// inject.
	Sleep func(ctx context.Context, d time.Duration) error
}

// ErrKeyRefused ends a sync: the platform refused PRIME_API_KEY, so every
// further call would be refused too.
var ErrKeyRefused = misconfigured{errors.New("the platform refused PRIME_API_KEY (401): set a valid key and run prime-sync again")}

// Sync syncs each run directory in turn and reports on each. A refused
// key stops it: the runs not yet begun are reported with ErrKeyRefused.
func Sync(ctx context.Context, opts Options, dirs []string) []Report {
	opts.Parallel = cmp.Or(opts.Parallel, 4)
	opts.RetryFor = cmp.Or(opts.RetryFor, 5*time.Minute)
	if opts.Progress == nil {
		opts.Progress = quiet{}
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	var total int64
	for _, d := range dirs {
		total += pendingBytes(d)
	}
	opts.Progress.Start(len(dirs), total)
	defer opts.Progress.Finish()

	reports := make([]Report, 0, len(dirs))
	var stop error
	for i, d := range dirs {
		if stop != nil {
			reports = append(reports, Report{Dir: d, Outcome: outcomeOf(stop), Err: stop})
			continue
		}
		opts.Progress.Run(i+1, d)
		r := syncRun(ctx, &opts, d)
		if errors.Is(r.Err, ErrKeyRefused) || ctx.Err() != nil {
			stop = cmp.Or(r.Err, ctx.Err())
		}
		reports = append(reports, r)
	}
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

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

package offlinesync

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
)

// meeting holds each run at its first metrics post until want runs are
// there at once: a sync that claims to run them together must get them
// all there. It gives up after a while, and the test then fails.
type meeting struct {
	Platform
	t    *testing.T
	want int

	mu      sync.Mutex
	arrived map[string]bool
	all     chan struct{}
}

func newMeeting(t *testing.T, p Platform, want int) *meeting {
	return &meeting{Platform: p, t: t, want: want, arrived: map[string]bool{}, all: make(chan struct{})}
}

func (m *meeting) PostMetrics(ctx context.Context, runID string, metrics map[string]float64) error {
	m.mu.Lock()
	if !m.arrived[runID] {
		m.arrived[runID] = true
		if len(m.arrived) == m.want {
			close(m.all)
		}
	}
	n := len(m.arrived)
	m.mu.Unlock()
	select {
	case <-m.all:
	case <-time.After(10 * time.Second):
		m.t.Errorf("only %d of %d runs were syncing at once", n, m.want)
	}
	return m.Platform.PostMetrics(ctx, runID, metrics)
}

// inFlight is a Progress counting the runs syncing at once.
type inFlight struct {
	quiet
	mu       sync.Mutex
	now, max int
	ended    []string
}

func (p *inFlight) Run(int, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now++
	p.max = max(p.max, p.now)
}

func (p *inFlight) Ended(dir string, _ error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now--
	p.ended = append(p.ended, dir)
}

func TestRunsSyncAtOnceEachThroughItsOwnJournalAndEveryObjectOnce(t *testing.T) {
	tests := []struct {
		name         string
		parallelRuns int
		wantAtOnce   int
	}{
		{"one at a time", 1, 1},
		{"three at once", 3, 3},
		{"more slots than runs", 8, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var dirs []string
			for range 6 {
				dirs = append(dirs, offlineRun(t, "team-1", []int64{2, 4, 6}, completed))
			}
			progress := &inFlight{}
			opts := f.options()
			opts.ParallelRuns, opts.Progress = tt.parallelRuns, progress
			opts.Platform = newMeeting(t, f.online, tt.wantAtOnce)

			reports := Sync(context.Background(), opts, dirs)
			assert.Equal(t, tt.wantAtOnce, progress.max, "runs syncing at once")
			assert.ElementsMatch(t, dirs, progress.ended, "one progress over every run")
			require.Len(t, reports, len(dirs))
			ids := map[string]bool{}
			for i, r := range reports {
				require.NoError(t, r.Err)
				assert.Equal(t, dirs[i], r.Dir, "reports in the order given")
				assert.Equal(t, "completed", r.State)
				ids[r.RunID] = true
				j, err := loadJournal(r.Dir)
				require.NoError(t, err)
				assert.Equal(t, r.RunID, j.RunID, "each run's own journal")
			}
			assert.Len(t, ids, len(dirs), "one platform run per directory")

			runs := f.platform.Runs()
			require.Len(t, runs, len(dirs))
			for _, run := range runs {
				assert.Equal(t, 4, run.MetricPosts, "run %s: every metrics post once", run.ID)
				require.Len(t, run.Objects, 3, "run %s: every object once", run.ID)
				for _, o := range run.Objects {
					assert.True(t, o.Confirmed)
				}
				assert.True(t, run.Finalized)
			}

			sent := len(f.platform.Requests())
			again := Sync(context.Background(), f.options(), dirs)
			assert.Equal(t, 0, ExitCode(again))
			assert.Equal(t, sent, len(f.platform.Requests()), "a second sync sends nothing")
		})
	}
}

func TestOneRunFailingLeavesTheOthersToFinish(t *testing.T) {
	tests := []struct {
		name     string
		team     string
		prepare  func(t *testing.T, dir string) (cleanup func())
		outcome  Outcome
		exitCode int
		want     string
	}{
		{
			name: "the platform refuses its team", team: "team-2",
			outcome: Misconfigured, exitCode: 2, want: "the platform refused to create the run (team team-2)",
		},
		{
			name: "its journal is not a journal", team: "team-1",
			prepare: func(t *testing.T, dir string) func() {
				require.NoError(t, os.WriteFile(filepath.Join(dir, JournalFile), []byte("{"), 0o600))
				return func() {}
			},
			outcome: Misconfigured, exitCode: 2, want: "do not edit it",
		},
		{
			name: "another sync holds it", team: "team-1",
			prepare: func(t *testing.T, dir string) func() {
				unlock, err := lock(dir)
				require.NoError(t, err)
				return unlock
			},
			outcome: Left, exitCode: 1, want: ErrBusy.Error(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			good1 := offlineRun(t, "team-1", []int64{2}, completed)
			bad := offlineRun(t, tt.team, []int64{2}, completed)
			good2 := offlineRun(t, "team-1", []int64{2}, completed)
			if tt.prepare != nil {
				defer tt.prepare(t, bad)()
			}
			opts := f.options()
			opts.ParallelRuns = 2

			reports := Sync(context.Background(), opts, []string{good1, bad, good2})
			require.Len(t, reports, 3)
			for _, r := range []Report{reports[0], reports[2]} {
				assert.NoError(t, r.Err, r.Dir)
				assert.Equal(t, "completed", r.State)
			}
			assert.Equal(t, tt.outcome, reports[1].Outcome)
			assert.ErrorContains(t, reports[1].Err, tt.want)
			assert.Equal(t, tt.exitCode, ExitCode(reports))
			assert.Contains(t, Unfinished(reports), bad)
			assert.NotContains(t, Unfinished(reports), good1)
			assert.Len(t, f.platform.Runs(), 2, "the other runs are on the platform")
		})
	}
}

func TestARefusedKeyIsRefusedOnceThoughRunsSyncAtOnce(t *testing.T) {
	f := newFixture(t)
	var dirs []string
	for range 5 {
		dirs = append(dirs, offlineRun(t, "team-1", []int64{2}, completed))
	}
	c, err := rft.New(rft.Options{BaseURL: f.platform.BaseURL(), APIKey: "wrong", Sleep: noSleep})
	require.NoError(t, err)
	opts := f.options()
	opts.ParallelRuns = 4
	opts.Platform = platform.NewOnline(c, noHost{}, zap.NewNop())

	reports := Sync(context.Background(), opts, dirs)
	for _, r := range reports {
		assert.ErrorIs(t, r.Err, ErrKeyRefused)
		assert.Equal(t, Misconfigured, r.Outcome)
	}
	assert.Equal(t, []string{"/api/v1/rft/external-runs", "/api/v1/user/whoami"}, requestPaths(f.platform),
		"the runs wait for the key to be accepted once: one refusal, confirmed by whoami, is enough")
}

func TestTheSameRunNamedTwiceIsSentOnce(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", []int64{2, 4}, completed)
	// RunDirs keeps one of two spellings of a path; a symlink is another
	// path to the same directory, and its lock is the same lock.
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	opts := f.options()
	opts.ParallelRuns = 2

	reports := Sync(context.Background(), opts, []string{dir, link})
	for _, r := range reports {
		if r.Err != nil {
			assert.ErrorIs(t, r.Err, ErrBusy, "the one that found the other syncing leaves it")
		}
	}
	runs := f.platform.Runs()
	require.Len(t, runs, 1)
	assert.Equal(t, 4, runs[0].MetricPosts)
	assert.Len(t, runs[0].Objects, 2)
}

func TestACancelledSyncReportsTheRunsItDidNotBegin(t *testing.T) {
	f := newFixture(t)
	var dirs []string
	for range 4 {
		dirs = append(dirs, offlineRun(t, "team-1", []int64{2}, completed))
	}
	ctx, cancel := context.WithCancel(context.Background())
	opts := f.options()
	opts.ParallelRuns = 1
	// Cancelled while the first run creates its platform run.
	opts.Platform = cancelAtCreate{Platform: f.online, cancel: cancel}

	reports := Sync(ctx, opts, dirs)
	require.Len(t, reports, 4)
	for _, r := range reports {
		assert.Equal(t, Left, r.Outcome, r.Dir)
		assert.Error(t, r.Err)
	}
	for _, r := range reports[1:] {
		assert.ErrorIs(t, r.Err, context.Canceled)
	}
	assert.LessOrEqual(t, len(f.platform.Runs()), 1, "no run begun after the cancel")
}

type cancelAtCreate struct {
	Platform
	cancel context.CancelFunc
}

func (c cancelAtCreate) CreateRun(ctx context.Context, req rft.CreateRunRequest, origin platform.Origin) (rft.Run, error) {
	c.cancel()
	return c.Platform.CreateRun(ctx, req, origin)
}

func TestADryRunOfManyRunsPlansEachAndNeedsNoKey(t *testing.T) {
	var dirs []string
	for range 3 {
		dirs = append(dirs, offlineRun(t, "team-1", []int64{2}, completed))
	}
	reports := Sync(context.Background(), Options{DryRun: true, ParallelRuns: 3, Endpoint: "https://h/api/v1"}, dirs)
	for i, r := range reports {
		require.NoError(t, r.Err)
		assert.Equal(t, dirs[i], r.Dir)
		assert.Contains(t, r.Plan, "finalize the run (completed)")
	}
}

package offlinesync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/sampletable"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

const testKey = "sk-sync-test"

type noHost struct{}

func (noHost) GetExtensions() map[component.ID]component.Component { return nil }

// fixture is a fake platform and the exporter's online backend for it.
type fixture struct {
	t        *testing.T
	platform *rfttest.Server
	online   *platform.Online
}

func newFixture(t *testing.T) *fixture {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testKey, AllowedTeams: []string{"team-1"}})
	t.Cleanup(srv.Close)
	c, err := rft.New(rft.Options{BaseURL: srv.BaseURL(), APIKey: testKey, Sleep: noSleep})
	require.NoError(t, err)
	return &fixture{t: t, platform: srv, online: platform.NewOnline(c, noHost{}, zap.NewNop())}
}

func noSleep(context.Context, time.Duration) error { return nil }

func (f *fixture) options() Options {
	return Options{Platform: f.online, Endpoint: f.platform.BaseURL(), Frontend: "https://app.example", Sleep: noSleep}
}

// requests renders the platform requests as "METHOD path", storage PUTs as
// "PUT storage".
func (f *fixture) requests() []string {
	var out []string
	for _, r := range f.platform.Requests() {
		p := strings.TrimPrefix(r.Path, "/api/v1")
		if strings.HasPrefix(p, "/storage/") {
			p = "storage"
		}
		out = append(out, r.Method+" "+p)
	}
	return out
}

// offlineRun writes a run the way the exporter does offline: steps
// metrics posts, an object for each of objectSteps, and an end.
func offlineRun(t *testing.T, team string, objectSteps []int64, end func(context.Context, *platform.Offline, string)) string {
	t.Helper()
	dir := t.TempDir()
	off, err := platform.NewOffline(dir)
	require.NoError(t, err)
	ctx := context.Background()
	run, err := off.CreateRun(ctx, rft.CreateRunRequest{BaseModel: "m", TeamID: team, Environments: []rft.Environment{{ID: "env"}}},
		platform.Origin{Identity: `prime.run.key="k"`, TeamID: team})
	require.NoError(t, err)
	for step := int64(1); step <= 4; step++ {
		require.NoError(t, off.PostMetrics(ctx, run.ID, map[string]float64{"step": float64(step), "loss": 1 / float64(step)}))
	}
	for i, step := range objectSteps {
		var buf bytes.Buffer
		ep := sampletable.Episode{Step: step, Trajectory: `[{"role":"user"}]`, Prompt: "p", CreatedAt: time.Unix(1, 0).UTC()}
		require.NoError(t, sampletable.NewEncoder().Encode(&buf, run.ID, step, int64(i), []sampletable.Episode{ep}))
		_, done, err := off.Advance(ctx, run.ID, platform.Object{Step: step, Range: int64(i)}, buf.Bytes())
		require.NoError(t, err)
		require.True(t, done, "an offline object is written in one stage")
	}
	if end != nil {
		end(ctx, off, run.ID)
	}
	return platform.RunDirectory(dir, run.ID)
}

func completed(ctx context.Context, off *platform.Offline, id string) { _ = off.Finalize(ctx, id, 0) }

func TestASyncSendsRunMetricsObjectsAndCloseOutInTheExportersOrder(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", []int64{2, 4}, completed)

	reports := Sync(context.Background(), f.options(), []string{dir})
	require.Len(t, reports, 1)
	r := reports[0]
	require.NoError(t, r.Err)
	assert.Equal(t, Done, r.Outcome)
	assert.True(t, r.Created)
	assert.Equal(t, int64(4), r.MetricsPosted)
	assert.Equal(t, 2, r.ObjectsUploaded)
	assert.Equal(t, "completed", r.State)
	assert.Equal(t, "https://app.example/dashboard/training/"+r.RunID, r.Dashboard)
	assert.Equal(t, []string{
		"POST /rft/external-runs",
		"POST /rft/metrics", "POST /rft/metrics", "POST /rft/metrics", "POST /rft/metrics",
	}, f.requests()[:5])
	assert.Equal(t, "POST /rft/finalize", f.requests()[len(f.requests())-1])

	runs := f.platform.Runs()
	require.Len(t, runs, 1)
	assert.Equal(t, "team-1", runs[0].Spec["team_id"])
	assert.Len(t, runs[0].Objects, 2)

	// The journal says everything went: a second sync sends nothing.
	before := len(f.platform.Requests())
	again := Sync(context.Background(), f.options(), []string{dir})
	require.NoError(t, again[0].Err)
	assert.Equal(t, before, len(f.platform.Requests()))
	assert.Equal(t, 0, ExitCode(again))
}

// stopAfterPut is the online backend, cancelled right after the PUT of the
// first object is journaled: a sync killed before its confirm.
type stopAfterPut struct {
	*platform.Online
	cancel context.CancelFunc
}

func (s stopAfterPut) Advance(ctx context.Context, runID string, obj platform.Object, body []byte) (platform.Object, bool, error) {
	if obj.Put {
		s.cancel()
		return obj, false, context.Canceled
	}
	return s.Online.Advance(ctx, runID, obj, body)
}

func TestAnObjectPutButNotConfirmedIsOnlyConfirmedByTheNextSync(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", []int64{2}, completed)
	ctx, cancel := context.WithCancel(context.Background())
	opts := f.options()
	opts.Platform = stopAfterPut{Online: f.online, cancel: cancel}

	first := Sync(ctx, opts, []string{dir})
	require.Error(t, first[0].Err)
	assert.Equal(t, Left, first[0].Outcome)
	j, err := loadJournal(dir)
	require.NoError(t, err)
	entry := j.Objects["step_2_0.parquet"]
	require.NotNil(t, entry)
	assert.True(t, entry.Put, "the PUT is journaled")
	assert.False(t, entry.Confirmed)

	sent := len(f.platform.Requests())
	second := Sync(context.Background(), f.options(), []string{dir})
	require.NoError(t, second[0].Err)
	assert.Equal(t, []string{"POST /rft/samples/confirm", "POST /rft/finalize"}, f.requests()[sent:],
		"no second presign, no second PUT: the journaled key is confirmed")
	objs := f.platform.Runs()[0].Objects
	require.Len(t, objs, 1)
	assert.Equal(t, entry.Key, objs[0].Key)
	assert.True(t, objs[0].Confirmed)
}

func TestAPUTThatKeepsFailingAfterItsPresignIsRetriedAtTheSameURL(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", []int64{2}, completed)
	// The client's in-place attempts all fail: the sync's retry PUTs again.
	f.platform.Inject(rfttest.RoutePut, rfttest.Fault{Status: 500}, rfttest.Fault{Status: 500}, rfttest.Fault{Status: 500})

	r := Sync(context.Background(), f.options(), []string{dir})[0]
	require.NoError(t, r.Err)
	assert.Equal(t, 1, r.ObjectsUploaded)
	byRoute := f.platform.RequestsByRoute()
	assert.Equal(t, 1, byRoute[rfttest.RoutePresign], "no second presign")
	assert.Equal(t, 4, byRoute[rfttest.RoutePut])
	var queries []string
	for _, req := range f.platform.Requests() {
		if req.Method == "PUT" && strings.HasPrefix(req.Path, "/storage/") {
			queries = append(queries, req.Path+"?"+req.Query)
		}
	}
	require.Len(t, queries, 4)
	for _, q := range queries[1:] {
		assert.Equal(t, queries[0], q, "every PUT goes to the one presigned URL")
	}
	objs := f.platform.Runs()[0].Objects
	require.Len(t, objs, 1)
	assert.True(t, objs[0].Confirmed)
}

func TestARefusedMetricsLineIsJournaledAndTheRestLands(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", nil, completed)
	f.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{}, rfttest.Fault{Status: 400, Body: `{"detail":"bad metrics"}`})

	r := Sync(context.Background(), f.options(), []string{dir})[0]
	require.NoError(t, r.Err)
	assert.Equal(t, int64(3), r.MetricsPosted)
	assert.Equal(t, 1, r.Refused)
	assert.Contains(t, r.Summary(), "refused 1 (see sync.json)")
	j, err := loadJournal(dir)
	require.NoError(t, err)
	require.Len(t, j.MetricsRefused, 1)
	assert.Contains(t, j.MetricsRefused[0].Error, "bad metrics")
	assert.Equal(t, "completed", j.ClosedOut, "a refused item does not hold the close-out back")
}

func TestTimeRowsAndTimestampsAreReplayedUnchanged(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", nil, completed)
	// Lines as offline mode writes them: a step's row with its time, and a
	// row of a time alone (metrics with no step).
	local := filepath.Base(dir)
	var lines []string
	for _, m := range []map[string]float64{
		{"step": 5, "_timestamp": 1767225600.5, "loss": 0.2},
		{"_timestamp": 1767225600.25, "inference/ttft": 0.25},
	} {
		line, err := json.Marshal(rft.MetricsRequest{RunID: local, Metrics: m})
		require.NoError(t, err)
		lines = append(lines, string(line))
	}
	mf, err := os.OpenFile(filepath.Join(dir, platform.MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = mf.WriteString(strings.Join(lines, "\n") + "\n")
	require.NoError(t, err)
	require.NoError(t, mf.Close())

	r := Sync(context.Background(), f.options(), []string{dir})[0]
	require.NoError(t, r.Err)
	assert.Equal(t, int64(6), r.MetricsPosted)
	var bodies []string
	for _, req := range f.platform.Requests() {
		if strings.HasSuffix(req.Path, "/rft/metrics") {
			bodies = append(bodies, string(req.Body))
		}
	}
	require.Len(t, bodies, 6)
	assert.Equal(t, []string{
		strings.Replace(lines[0], local, r.RunID, 1),
		strings.Replace(lines[1], local, r.RunID, 1),
	}, bodies[4:], "the same bodies, with the platform run's id")
	run := f.platform.Runs()[0]
	assert.Equal(t, map[float64]map[string]float64{1767225600.25: {"inference/ttft": 0.25}}, run.TimeMetrics)
	assert.Equal(t, map[string]float64{"loss": 0.2}, run.Metrics[5])
}

func TestWhatNoRetryFixesIsAConfigurationError(t *testing.T) {
	tests := []struct {
		name    string
		team    string
		prepare func(t *testing.T, dir string, opts *Options)
		want    string
	}{
		{
			name: "no team anywhere", team: "",
			want: "set --team-id or PRIME_TEAM_ID",
		},
		{
			name: "a team the platform refuses", team: "team-2",
			want: "the platform refused to create the run (team team-2)",
		},
		{
			name: "another endpoint than the journal's", team: "team-1",
			prepare: func(t *testing.T, dir string, _ *Options) {
				j := &Journal{Version: journalVersion, Endpoint: "https://elsewhere/api/v1", RunID: "run-9"}
				require.NoError(t, j.save(dir, false))
			},
			want: "was synced to https://elsewhere/api/v1 as run run-9",
		},
		{
			name: "a --run-id the journal disagrees with", team: "team-1",
			prepare: func(t *testing.T, dir string, opts *Options) {
				j := &Journal{Version: journalVersion, Endpoint: opts.Endpoint, RunID: "run-9"}
				require.NoError(t, j.save(dir, false))
				opts.RunID = "run-8"
			},
			want: "--run-id run-8 disagrees",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			dir := offlineRun(t, tt.team, nil, completed)
			opts := f.options()
			if tt.prepare != nil {
				tt.prepare(t, dir, &opts)
			}
			r := Sync(context.Background(), opts, []string{dir})
			assert.Equal(t, Misconfigured, r[0].Outcome)
			assert.ErrorContains(t, r[0].Err, tt.want)
			assert.Equal(t, 2, ExitCode(r))
			for _, req := range f.platform.Requests() {
				assert.NotContains(t, req.Path, "metrics", "nothing is sent to a run the sync cannot place")
			}
		})
	}
}

func TestARefusedKeyStopsTheWholeSync(t *testing.T) {
	f := newFixture(t)
	a := offlineRun(t, "team-1", nil, completed)
	b := offlineRun(t, "team-1", nil, completed)
	c, err := rft.New(rft.Options{BaseURL: f.platform.BaseURL(), APIKey: "wrong", Sleep: noSleep})
	require.NoError(t, err)
	opts := f.options()
	opts.Platform = platform.NewOnline(c, noHost{}, zap.NewNop())

	reports := Sync(context.Background(), opts, []string{a, b})
	for _, r := range reports {
		assert.ErrorIs(t, r.Err, ErrKeyRefused)
		assert.Equal(t, Misconfigured, r.Outcome)
	}
	assert.Equal(t, []string{"/api/v1/rft/external-runs", "/api/v1/user/whoami"}, requestPaths(f.platform),
		"one refusal, confirmed by whoami, is enough")
}

func TestAnAttachedRunThatFailedIsLeftToItsLauncher(t *testing.T) {
	f := newFixture(t)
	f.platform.AddRun("run-7")
	dir := offlineRun(t, "", []int64{2}, func(ctx context.Context, off *platform.Offline, id string) {
		_ = off.SetStatus(ctx, id, rft.StatusFailed, "cancelled: user")
	})
	opts := f.options()
	opts.RunID = "run-7"

	r := Sync(context.Background(), opts, []string{dir})[0]
	require.NoError(t, r.Err)
	assert.True(t, r.Attached)
	assert.Equal(t, "failed", r.State)
	run, _ := f.platform.Run("run-7")
	assert.Equal(t, rfttest.StatusRunning, run.Status, "no status call for an attached run")
	assert.Equal(t, 4, run.MetricPosts)
	assert.Len(t, run.Objects, 1)
}

func TestAFailedRunIsMarkedWithTheExportersMessage(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", nil, func(ctx context.Context, off *platform.Offline, id string) {
		_ = off.SetStatus(ctx, id, rft.StatusFailed, "crashed: no telemetry for 30m0s")
	})
	r := Sync(context.Background(), f.options(), []string{dir})[0]
	require.NoError(t, r.Err)
	run := f.platform.Runs()[0]
	assert.Equal(t, rfttest.StatusFailed, run.Status)
	assert.Equal(t, "crashed: no telemetry for 30m0s", run.ErrorMessage)
}

func TestALiveRunIsSyncedAsFarAsItGoesAndLeftOpen(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", []int64{2}, nil)
	// A line the collector is still writing has no newline yet.
	mf, err := os.OpenFile(filepath.Join(dir, platform.MetricsFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = mf.WriteString(`{"run_id":"x","metrics":{"step":5,`)
	require.NoError(t, err)
	require.NoError(t, mf.Close())

	r := Sync(context.Background(), f.options(), []string{dir})[0]
	require.NoError(t, r.Err)
	assert.Equal(t, "open", r.State)
	assert.Equal(t, int64(4), r.MetricsPosted, "the half-written line waits")
	assert.Equal(t, rfttest.StatusRunning, f.platform.Runs()[0].Status)
}

func TestADryRunPlansAndSendsNothing(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", []int64{2, 4}, completed)
	opts := f.options()
	opts.DryRun, opts.Platform = true, nil
	r := Sync(context.Background(), opts, []string{dir})[0]
	require.NoError(t, r.Err)
	assert.Equal(t, []string{
		"create a run: model m, team team-1, 1 environment(s)",
		r.Plan[1], // metrics, with their size
		r.Plan[2],
		"finalize the run (completed)",
	}, r.Plan)
	assert.Contains(t, r.Plan[1], "post 4 metrics line(s)")
	assert.Contains(t, r.Plan[2], "upload 2 object(s)")
	assert.Empty(t, f.platform.Requests())
	_, err := os.Stat(filepath.Join(dir, JournalFile))
	assert.True(t, errors.Is(err, os.ErrNotExist), "a dry run writes no journal")
}

func TestASecondSyncOfABusyRunDirectoryLeavesIt(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "team-1", nil, completed)
	unlock, err := lock(dir)
	require.NoError(t, err)
	defer unlock()
	r := Sync(context.Background(), f.options(), []string{dir})[0]
	assert.ErrorIs(t, r.Err, ErrBusy)
	assert.Equal(t, Left, r.Outcome)
	assert.Empty(t, f.platform.Requests())
}

func TestRunDirsFindsRunsAndNamesAPathWithout(t *testing.T) {
	a := offlineRun(t, "team-1", nil, nil)
	dirs, err := RunDirs([]string{filepath.Dir(a), a})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(filepath.Dir(a), filepath.Base(a))}, dirs, "one run, however it is named")

	empty := t.TempDir()
	_, err = RunDirs([]string{empty})
	assert.ErrorContains(t, err, empty+" holds no run.json and no run directories")
}

func TestTheJournalRoundTripsAnObjectsProgress(t *testing.T) {
	dir := t.TempDir()
	j, err := loadJournal(dir)
	require.NoError(t, err)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := &ObjectEntry{Step: 2}
	e.progress(platform.Object{Step: 2, Key: "k", URL: "https://u", PresignedAt: at, ExpiresIn: 15 * time.Minute, Put: true})
	j.Objects["step_2_0.parquet"] = e
	require.NoError(t, j.save(dir, true))
	back, err := loadJournal(dir)
	require.NoError(t, err)
	got := back.Objects["step_2_0.parquet"].object()
	assert.Equal(t, platform.Object{Step: 2, Key: "k", URL: "https://u", PresignedAt: at, ExpiresIn: 15 * time.Minute, Put: true}, got)
	raw, err := os.ReadFile(filepath.Join(dir, JournalFile))
	require.NoError(t, err)
	assert.True(t, json.Valid(raw))
}

func TestADryRunStillPlansWhatItCannotYetSendAndSaysWhy(t *testing.T) {
	f := newFixture(t)
	dir := offlineRun(t, "", []int64{2}, completed)
	opts := f.options()
	opts.DryRun, opts.Platform = true, nil
	r := Sync(context.Background(), opts, []string{dir})[0]
	assert.Equal(t, Misconfigured, r.Outcome)
	assert.ErrorContains(t, r.Err, "set --team-id or PRIME_TEAM_ID")
	require.NotEmpty(t, r.Plan)
	assert.Contains(t, r.Plan[0], "team (none yet: set --team-id or PRIME_TEAM_ID)")
	assert.Empty(t, f.platform.Requests())
}

// requestPaths are the paths of every request the fake platform received, in order.
func requestPaths(p *rfttest.Server) []string {
	var paths []string
	for _, r := range p.Requests() {
		paths = append(paths, r.Path)
	}
	return paths
}

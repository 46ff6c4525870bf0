package primeexporter

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestDisabledModeAcceptsEverythingAndSendsNothing(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Mode = ModeDisabled })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("d"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("d"), runEnd("completed", ""))))
	assert.Empty(t, h.platform.Requests())
}

func TestOfflineModeWritesTheSameLifecycleToADirectory(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Mode = ModeOffline; c.Directory = dir })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("off"), map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}})))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("off"), runEnd("completed", ""))))
	h.shutdown()
	assert.Empty(t, h.platform.Requests(), "offline mode makes no request")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	id := entries[0].Name()
	assert.Regexp(t, regexp.MustCompile(`^offline-[0-9a-f]{16}$`), id)

	var run platform.RunRecord
	raw, err := os.ReadFile(filepath.Join(dir, id, "run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &run))
	assert.Equal(t, "completed", run.Status)
	assert.Equal(t, "Qwen/Qwen3-8B", run.Spec.BaseModel)
	require.NotNil(t, run.FinishedAt)

	f, err := os.Open(filepath.Join(dir, id, "metrics.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var lines []map[string]any
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		lines = append(lines, line)
	}
	assert.Equal(t, []map[string]any{
		{"run_id": id, "metrics": map[string]any{"step": 1.0, "loss": 1.0}},
		{"run_id": id, "metrics": map[string]any{"step": 2.0, "loss": 0.5}},
	}, lines, "one line per post, the body the platform would get")

	for _, p := range []string{filepath.Join(dir, id), filepath.Join(dir, id, "run.json"), filepath.Join(dir, id, "metrics.jsonl")} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Zero(t, st.Mode().Perm()&0o077, "%s is owner-only", p)
	}
}

func TestOfflineModeWritesTimeRowsAndTimestampsAsTheOnlinePathPostsThem(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Mode = ModeOffline; c.Directory = dir })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, timedGauges(t, trainRun("off-t"),
		timedPoint{"loss", 0.5, atNoon, 1}, timedPoint{"inference/ttft", 0.25, atNoonHalf, nil})))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("off-t"), timedMetricsEvent(atNoonHalf, 0, map[string]float64{"inference/tps": 900}))))
	h.shutdown()

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	id := entries[0].Name()
	body, err := os.ReadFile(filepath.Join(dir, id, "metrics.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, `{"run_id":"`+id+`","metrics":{"_timestamp":1767225600,"loss":0.5,"step":1}}`+"\n"+
		`{"run_id":"`+id+`","metrics":{"_timestamp":1767225600.5,"inference/ttft":0.25}}`+"\n"+
		`{"run_id":"`+id+`","metrics":{"_timestamp":1767225600.5,"inference/tps":900}}`+"\n",
		string(body), "one line per post, the exact body the platform would get")
}

func TestOfflineModeRefusesRunIDsThatWouldLeaveTheDirectory(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Mode = ModeOffline; c.Directory = filepath.Join(dir, "runs") })
	for _, bad := range []string{"../../escape", "/abs/path", "a\x00b", "..", `a\b`} {
		require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(map[string]string{"prime.run.id": bad}, map[int64]map[string]float64{1: {"loss": 1}})))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the runs directory itself")
	assert.Equal(t, int64(5), h.count(metricRejected, map[string]string{"reason": "run_refused"}))
}

func TestACreateRefusedForTheTeamIsRememberedAndOtherRunsGoOn(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey, AllowedTeams: []string{"good-team"}})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "good-team"
	h := newHarnessWithHost(t, srv, cfg, componenttest.NewNopHost())
	ctx := context.Background()

	banned := trainRun("banned")
	banned["prime.run.team_id"] = "other-team"
	for i := 0; i < 3; i++ {
		require.NoError(t, h.exp.pushMetrics(ctx, gauges(banned, map[int64]map[string]float64{int64(i): {"loss": 1}})))
	}
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("fine"), map[int64]map[string]float64{1: {"loss": 1}})))

	creates := 0
	for _, r := range srv.Requests() {
		if r.Path == "/api/v1/rft/external-runs" {
			creates++
		}
	}
	assert.Equal(t, 2, creates, "the refused create is asked once, the other run's once")
	require.Len(t, srv.Runs(), 1)
	assert.Equal(t, 1, srv.Runs()[0].MetricPosts)
	assert.Contains(t, h.logText(), "External training runs are not enabled for this team")
	assert.Equal(t, int64(3), h.count(metricRejected, map[string]string{"reason": "run_refused"}))
}

func TestAnAmbiguousCreateFailureKeepsTheDataAndWarnsOfADuplicate(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	h.platform.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 502, AfterProcessing: true})
	md := gauges(trainRun("amb"), map[int64]map[string]float64{1: {"loss": 1}})
	err := h.exp.pushMetrics(ctx, md)
	require.Error(t, err, "the data stays with the collector's retry")
	assert.Contains(t, h.logText(), "a duplicate, empty run may exist")
	assert.Contains(t, h.logText(), `run=prime.run.key="amb"`)

	require.NoError(t, h.exp.pushMetrics(ctx, md))
	runs := h.platform.Runs()
	require.Len(t, runs, 2, "the lost response registered a run; the retry made the one that is tracked")
	assert.Zero(t, runs[0].MetricPosts)
	assert.Equal(t, 1, runs[1].MetricPosts)
}

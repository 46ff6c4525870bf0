package platform

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/rft"
)

func TestOfflineWritesTheBodiesTheOnlinePathWouldSend(t *testing.T) {
	dir := t.TempDir()
	off, err := NewOffline(dir)
	require.NoError(t, err)
	ctx := context.Background()
	origin := Origin{Identity: `prime.run.key="exp-1"`, TeamID: "team-1"}
	run, err := off.CreateRun(ctx, rft.CreateRunRequest{BaseModel: "m", Environments: []rft.Environment{}, TeamID: "team-1"}, origin)
	require.NoError(t, err)
	require.NoError(t, off.PostMetrics(ctx, run.ID, map[string]float64{"step": 1, "loss": 0.5}))
	require.NoError(t, store(ctx, off, run.ID, Object{Step: 10, Range: 2}, []byte("PAR1…"), func(Object) { t.Fatal("a file has no progress to save") }))
	require.NoError(t, off.Finalize(ctx, run.ID, 0))
	require.NoError(t, off.SetStatus(ctx, run.ID, rft.StatusFailed, "late"), "a closed run stays as it is")

	line, err := os.ReadFile(filepath.Join(dir, run.ID, MetricsFile))
	require.NoError(t, err)
	want, err := json.Marshal(rft.MetricsRequest{RunID: run.ID, Metrics: map[string]float64{"step": 1, "loss": 0.5}})
	require.NoError(t, err)
	assert.Equal(t, string(want)+"\n", string(line))

	obj := filepath.Join(dir, run.ID, SamplesDir, "step_10_2.parquet")
	body, err := os.ReadFile(obj)
	require.NoError(t, err)
	assert.Equal(t, "PAR1…", string(body))
	info, err := os.Stat(obj)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "owner-only")

	var rec RunRecord
	raw, err := os.ReadFile(filepath.Join(dir, run.ID, RunFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rec))
	assert.Equal(t, "completed", rec.Status)
	assert.Equal(t, "m", rec.Spec.BaseModel)
	assert.Equal(t, origin.Identity, rec.Identity, "the sync says which run it was")
	assert.Equal(t, origin.TeamID, rec.TeamID)
}

// A collector restarted on the same directory finds the run it created
// there: its close-out keeps the spec and creation date prime-sync needs,
// rather than writing the record of an attached run over them.
func TestARunCreatedBeforeARestartKeepsItsRecord(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first, err := NewOffline(dir)
	require.NoError(t, err)
	run, err := first.CreateRun(ctx, rft.CreateRunRequest{BaseModel: "m", Environments: []rft.Environment{}}, Origin{Identity: `prime.run.key="k"`})
	require.NoError(t, err)
	created := readRunRecord(t, dir, run.ID)

	second, err := NewOffline(dir)
	require.NoError(t, err)
	require.NoError(t, second.PostMetrics(ctx, run.ID, map[string]float64{"step": 2, "loss": 0.25}))
	require.NoError(t, second.Finalize(ctx, run.ID, 0))

	rec := readRunRecord(t, dir, run.ID)
	assert.False(t, rec.Attached)
	require.NotNil(t, rec.Spec)
	assert.Equal(t, "m", rec.Spec.BaseModel)
	assert.Equal(t, `prime.run.key="k"`, rec.Identity)
	assert.True(t, created.CreatedAt.Equal(rec.CreatedAt), "created %v, now %v", created.CreatedAt, rec.CreatedAt)
	assert.Equal(t, "completed", rec.Status)
}

func readRunRecord(t *testing.T, dir, runID string) RunRecord {
	t.Helper()
	var rec RunRecord
	raw, err := os.ReadFile(filepath.Join(dir, runID, RunFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &rec))
	return rec
}

func TestOfflineRefusesWhatJSONOrTheFilesystemCannotHold(t *testing.T) {
	dir := t.TempDir()
	off, err := NewOffline(dir)
	require.NoError(t, err)
	ctx := context.Background()
	for _, id := range []string{"..", "a/b", `a\b`, "a\x00b", ""} {
		assert.Error(t, off.AttachRun(ctx, id, Origin{}), "run id %q", id)
	}
	require.NoError(t, off.AttachRun(ctx, "run-1", Origin{Identity: `prime.run.id="run-1"`}))
	err = off.PostMetrics(ctx, "run-1", map[string]float64{"b": math.Inf(1), "a": math.NaN(), "ok": 1})
	require.EqualError(t, err, "non-finite metric values are never sent: a, b")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing was made outside run-1")
}

package upload

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/platform/platformtest"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// tracesConfig is testConfig with Prime Traces on, over srv's Prime Traces
// endpoint; exclusive keeps the documents' rows out of the table. Its
// in-place retries are instant, two attempts at most.
func tracesConfig(t *testing.T, srv *rfttest.Server, exclusive bool) Config {
	t.Helper()
	c, err := rft.NewTraces(rft.TracesOptions{
		URL: srv.URL(), APIKey: fleettest.APIKey, MaxAttempts: 2,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	require.NoError(t, err)
	traces := platform.NewOnlineTraces(c, zap.NewNop())
	t.Cleanup(traces.CloseIdleConnections)
	return testConfig(func(cfg *Config) { cfg.Traces, cfg.Exclusive = traces, exclusive })
}

// trainerDocument is a verifiers Episode.to_record() document of prime-rl
// dispatched at step: the trainer's own run stamp (prl-7), one trainable
// trace. Its timestamp is fixed by its
// step: it is part of what makes a replay recognisable.
func trainerDocument(t *testing.T, id string, step int64) plog.LogRecord {
	t.Helper()
	doc := map[string]any{
		"id": id, "env": map[string]any{"id": "gsm8k"}, "task": map[string]any{"type": "qa", "data": map[string]any{"idx": 7}},
		"run": map[string]any{"type": "train", "id": "prl-7", "work": map[string]any{"type": "train", "step": step}},
		"ok":  true, "errors": []any{},
		"traces": []any{map[string]any{
			"id": "t-" + id, "agent": map[string]any{"name": "solver", "trainable": true},
			"nodes": []any{
				map[string]any{"message": map[string]any{"role": "user", "content": "q"}},
				map[string]any{"parent": 0, "message": map[string]any{"role": "assistant", "content": "a"}},
			},
			"calls": []any{}, "rewards": map[string]any{"correct": map[string]any{"score": 1, "weight": 1}},
			"metrics": map[string]any{}, "info": map[string]any{"advantage": 0.5}, "timing": map[string]any{},
		}},
	}
	body, err := json.Marshal(doc)
	require.NoError(t, err)
	lr := record(string(body))
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(step) * time.Second)))
	return lr
}

// traceIDs lists the committed documents' ids with the run id each member
// trace carries.
func traceIDs(srv *rfttest.Server) []string {
	var out []string
	for _, d := range srv.TraceDocuments() {
		traces := d.Doc["traces"].([]any)
		run := traces[0].(map[string]any)["run"].(map[string]any)
		out = append(out, d.Doc["id"].(string)+"@"+run["id"].(string))
	}
	return out
}

func TestExclusiveRoutingSendsDocumentsToPrimeTracesStampedWithThePlatformRunAndColumnEpisodesToTheTable(t *testing.T) {
	srv := fleettest.NewPlatform(t)
	r := newLiveRun(t, srv, tracesConfig(t, srv, true))
	_, err := r.push(trainerDocument(t, "e1", 20), trainerDocument(t, "e2", 21), stepEpisode(20, "column"))
	require.NoError(t, err)
	r.end(runs.StatusCompleted)

	id := r.run().ID
	require.Eventually(t, func() bool { run, _ := srv.Run(id); return run.Status == rfttest.StatusCompleted }, 10*time.Second, 5*time.Millisecond,
		"the run is closed out once its uploads are done")
	run := r.run()
	assert.Equal(t, []string{"e1@" + run.ID, "e2@" + run.ID}, traceIDs(srv), "every document of every step, the platform run on its traces")
	assert.Equal(t, []string{"step 20: q-column#0:0"}, platformtest.Objects(t, run), "only the column-keyed episode is a row")
	docs := srv.TraceDocuments()
	assert.Equal(t, "team-1", docs[0].Team)
	docRun := docs[0].Doc["run"].(map[string]any)
	assert.Equal(t, "prl-7", docRun["trainer_run_id"], "the trainer's own id is kept")
	assert.Equal(t, "train", docRun["work"].(map[string]any)["type"])
	assert.Equal(t, map[string]int{"documents": 2, "trace batches": 1, "rows": 1}, r.tel.counts(), "one batch of both documents")
}

func TestBothRoutingAlsoWritesTheDocumentsRowsToTheTable(t *testing.T) {
	srv := fleettest.NewPlatform(t)
	r := newLiveRun(t, srv, tracesConfig(t, srv, false))
	_, err := r.push(trainerDocument(t, "e1", 20), trainerDocument(t, "e2", 21))
	require.NoError(t, err)
	assert.Len(t, traceIDs(srv), 2)
	// A document's row has no prompt column: its prompt is in the trace.
	assert.Equal(t, []string{"step 20: #0:0"}, r.objects(), "step 20 is on the cadence, 21 is not")
}

func TestAnAccountWithoutPrimeTracesMovesTheRunToTheTableOnceAndForAll(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: fleettest.APIKey, TracesDisabledTeams: []string{"team-1"}})
	t.Cleanup(srv.Close)
	r := newLiveRun(t, srv, tracesConfig(t, srv, true))
	_, err := r.push(trainerDocument(t, "e1", 20), trainerDocument(t, "e2", 30))
	require.NoError(t, err)
	before := srv.TraceRequests()
	_, err = r.push(trainerDocument(t, "e3", 40))
	require.NoError(t, err)

	assert.Equal(t, []string{"step 20: #0:0", "step 30: #0:0", "step 40: #0:0"}, r.objects(),
		"the refused batch's rows and every later one's are in the table")
	assert.Empty(t, srv.TraceDocuments())
	assert.Equal(t, before, srv.TraceRequests(), "Prime Traces is not asked again")
	assert.Equal(t, 1, r.logs.FilterMessageSnippet("Prime Traces is not enabled for this account").Len())
}

func TestNoOtherRefusalMovesARunToTheTable(t *testing.T) {
	tests := []struct {
		name  string
		fault rfttest.Fault
	}{
		{"403 forbidden", rfttest.Fault{Status: 403, Code: "forbidden"}},
		{"400 invalid_trace", rfttest.Fault{Status: 400, Code: "invalid_trace"}},
		{"401 unauthenticated", rfttest.Fault{Status: 401, Code: "unauthenticated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fleettest.NewPlatform(t)
			r := newLiveRun(t, srv, tracesConfig(t, srv, true))
			srv.Inject(rfttest.RouteTraces, tt.fault)
			_, err := r.push(trainerDocument(t, "e1", 20))
			require.NoError(t, err)
			assert.Empty(t, r.run().Objects, "nothing goes to the table")
			assert.Empty(t, srv.TraceDocuments())
			assert.Equal(t, map[string]int{"reject traces_rejected": 1}, r.tel.counts())
		})
	}
}

func TestARefusalAfterACommitDoesNotSplitTheRun(t *testing.T) {
	srv := fleettest.NewPlatform(t)
	r := newLiveRun(t, srv, tracesConfig(t, srv, true))
	_, err := r.push(trainerDocument(t, "e1", 20))
	require.NoError(t, err)
	srv.Inject(rfttest.RouteTraces, rfttest.Fault{Status: 403, Code: "service_not_enabled"})
	_, err = r.push(trainerDocument(t, "e2", 30))
	require.NoError(t, err)
	assert.Empty(t, r.run().Objects)
	assert.Len(t, srv.TraceDocuments(), 1)
	assert.Equal(t, map[string]int{"documents": 1, "trace batches": 1, "reject traces_rejected": 1}, r.tel.counts())
}

func TestAnOutageHandsTheDocumentsBackAndTheRetryCommitsEachOnce(t *testing.T) {
	srv := fleettest.NewPlatform(t)
	r := newLiveRun(t, srv, tracesConfig(t, srv, false))
	// The first attempt is committed but its answer is lost; the second
	// finds the platform down.
	srv.Inject(rfttest.RouteTraces, rfttest.Fault{Status: 503, AfterProcessing: true}, rfttest.Fault{Status: 503})
	recs := []plog.LogRecord{trainerDocument(t, "e1", 20), trainerDocument(t, "e2", 20)}
	retry, err := r.push(recs...)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "retryable")
	assert.Equal(t, map[Loc]bool{{Record: 0}: true, {Record: 1}: true}, retry, "handed back: the documents, and their rows behind them")
	assert.Len(t, srv.TraceDocuments(), 2)

	_, err = r.push(retried(recs, retry)...)
	require.NoError(t, err)
	_, err = r.push(recs...)
	require.NoError(t, err, "the queue replays the whole push")
	assert.Len(t, traceIDs(srv), 2, "each document committed once")
	assert.Equal(t, []string{"step 20: #0:0 #0:1"}, r.objects(), "each row once")
}

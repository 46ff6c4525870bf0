package primeexporter

import (
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
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// nativeEpisode is a verifiers Episode.to_record() document of prime-rl,
// dispatched at step: the trainer's own run stamp, one trainable trace.
func nativeEpisode(id string, step int64) func(plog.LogRecord) {
	return func(lr plog.LogRecord) {
		lr.SetEventName("prime.episode")
		// A record's timestamp is part of what makes a replay recognisable.
		lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(step) * time.Second)))
		lr.Body().SetStr(`{"id":"` + id + `","env":{"id":"gsm8k"},"task":{"type":"qa","data":{"idx":7}},` +
			`"run":{"type":"train","id":"prl-7","work":{"type":"train","step":` + jsonInt(step) + `}},"ok":true,"errors":[],` +
			`"traces":[{"id":"t-` + id + `","agent":{"name":"solver","trainable":true},` +
			`"nodes":[{"message":{"role":"user","content":"q-` + id + `"}},{"parent":0,"message":{"role":"assistant","content":"a"}}],` +
			`"calls":[],"rewards":{"correct":{"score":1,"weight":1}},"metrics":{},"info":{"advantage":0.5},"timing":{}}]}`)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// tracesHarness is an online exporter with Prime Traces on, against the
// fake platform's Prime Traces endpoint; its in-place retries are instant.
func tracesHarness(t *testing.T, srv *rfttest.Server, routing Routing, edit func(*Config)) *harness {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.FinalizeTimeout = 5 * time.Second
	cfg.Traces = TracesConfig{Enabled: true, Endpoint: srv.URL(), Routing: routing}
	if edit != nil {
		edit(cfg)
	}
	return newHarnessWithHost(t, srv, cfg, componenttest.NewNopHost(), withTracesOptions(func(o *rft.TracesOptions) {
		o.MaxAttempts = 2
		o.Sleep = func(context.Context, time.Duration) error { return nil }
	}))
}

func newTracesPlatform(t *testing.T, opts rfttest.Options) *rfttest.Server {
	t.Helper()
	opts.APIKey = testAPIKey
	srv := rfttest.NewServer(opts)
	t.Cleanup(srv.Close)
	return srv
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
	srv := newTracesPlatform(t, rfttest.Options{})
	h := tracesHarness(t, srv, RoutingExclusive, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("ex"),
		nativeEpisode("e1", 20), nativeEpisode("e2", 21), episode(20, "column"), runEnd("completed", ""))))

	run := h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	assert.Equal(t, []string{"e1@" + run.ID, "e2@" + run.ID}, traceIDs(srv), "every document of every step, the platform run on its traces")
	assert.Equal(t, []string{"step 20: q-column#0:0"}, objects(t, run), "only the column-keyed episode is a row")
	docs := srv.TraceDocuments()
	assert.Equal(t, "team-1", docs[0].Team)
	docRun := docs[0].Doc["run"].(map[string]any)
	assert.Equal(t, "prl-7", docRun["trainer_run_id"], "the trainer's own id is kept")
	assert.Equal(t, "train", docRun["work"].(map[string]any)["type"])
	assert.Equal(t, int64(2), h.count(metricTraceDocs, nil))
	assert.Equal(t, int64(1), h.count(metricTraceBatches, nil), "one batch")
}

func TestBothRoutingAlsoWritesTheDocumentsRowsToTheTable(t *testing.T) {
	srv := newTracesPlatform(t, rfttest.Options{})
	h := tracesHarness(t, srv, RoutingBoth, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("both"), nativeEpisode("e1", 20), nativeEpisode("e2", 21))))
	run := h.onlyRun()
	assert.Len(t, traceIDs(srv), 2)
	require.Equal(t, 1, len(run.Objects), "step 20 is on the cadence, 21 is not")
	assert.Len(t, readRows(t, run.Objects[0].Body), 1)
}

func TestAnAccountWithoutPrimeTracesMovesTheRunToTheTableOnceAndForAll(t *testing.T) {
	srv := newTracesPlatform(t, rfttest.Options{TracesDisabledTeams: []string{"team-1"}})
	h := tracesHarness(t, srv, RoutingExclusive, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("fb"), nativeEpisode("e1", 20), nativeEpisode("e2", 30))))
	before := srv.TraceRequests()
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("fb"), nativeEpisode("e3", 40))))

	run := h.onlyRun()
	assert.Equal(t, 3, len(run.Objects), "the refused batch's rows and every later one's are in the table")
	assert.Empty(t, srv.TraceDocuments())
	assert.Equal(t, before, srv.TraceRequests(), "Prime Traces is not asked again")
	assert.Equal(t, 1, h.logs.FilterMessageSnippet("Prime Traces is not enabled for this account").Len())
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
			srv := newTracesPlatform(t, rfttest.Options{})
			h := tracesHarness(t, srv, RoutingExclusive, nil)
			srv.Inject(rfttest.RouteTraces, tt.fault)
			require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("no-fb"), nativeEpisode("e1", 20))))
			assert.Zero(t, len(h.onlyRun().Objects), "nothing goes to the table")
			assert.Empty(t, srv.TraceDocuments())
			assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "traces_rejected"}))
		})
	}
}

func TestARefusalAfterACommitDoesNotSplitTheRun(t *testing.T) {
	srv := newTracesPlatform(t, rfttest.Options{})
	h := tracesHarness(t, srv, RoutingExclusive, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("split"), nativeEpisode("e1", 20))))
	srv.Inject(rfttest.RouteTraces, rfttest.Fault{Status: 403, Code: "service_not_enabled"})
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("split"), nativeEpisode("e2", 30))))
	assert.Zero(t, len(h.onlyRun().Objects))
	assert.Len(t, srv.TraceDocuments(), 1)
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "traces_rejected"}))
}

func TestAnOutageHandsTheDocumentsBackAndTheRetryCommitsEachOnce(t *testing.T) {
	srv := newTracesPlatform(t, rfttest.Options{})
	h := tracesHarness(t, srv, RoutingBoth, nil)
	ctx := context.Background()
	// The first attempt is committed but its answer is lost; the second
	// finds the platform down.
	srv.Inject(rfttest.RouteTraces, rfttest.Fault{Status: 503, AfterProcessing: true}, rfttest.Fault{Status: 503})
	err := h.exp.pushLogs(ctx, events(trainRun("replay"), nativeEpisode("e1", 20), nativeEpisode("e2", 20)))
	var back consumererror.Logs
	require.True(t, errors.As(err, &back), "handed back: %v", err)
	assert.Len(t, srv.TraceDocuments(), 2)

	require.NoError(t, h.exp.pushLogs(ctx, back.Data()))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("replay"), nativeEpisode("e1", 20), nativeEpisode("e2", 20))), "the queue replays the whole push")
	run := h.onlyRun()
	assert.Len(t, traceIDs(srv), 2, "each document committed once")
	require.Equal(t, 1, len(run.Objects))
	assert.Len(t, readRows(t, run.Objects[0].Body), 2, "each row once")
}

func TestARestartWithStorageKeepsTheRunsPrimeTracesChoices(t *testing.T) {
	srv := newTracesPlatform(t, rfttest.Options{TracesDisabledTeams: []string{"team-1"}})
	rs := &restartable{t: t, platform: srv, storage: newMemStorage(), edit: func(c *Config) {
		c.Traces = TracesConfig{Enabled: true, Endpoint: srv.URL(), Routing: RoutingExclusive}
	}}
	ctx := context.Background()
	first := rs.start()
	batch := events(trainRun("keep"), nativeEpisode("e1", 20))
	require.NoError(t, first.exp.pushLogs(ctx, batch))
	crash(first)

	second := rs.start()
	before := srv.TraceRequests()
	require.NoError(t, second.exp.pushLogs(ctx, batch), "the queue hands the batch over again")
	require.NoError(t, second.exp.pushLogs(ctx, events(trainRun("keep"), nativeEpisode("e2", 30))))
	assert.Equal(t, before, srv.TraceRequests(), "the run stays on the table")
	assert.Equal(t, 2, len(second.onlyRun().Objects), "e1 once, then e2")
}

func TestOfflineModeKeepsEachBatchAsTheJSONLPrimeTracesWouldReceive(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) {
		c.Mode, c.Directory = ModeOffline, dir
		c.Traces = TracesConfig{Enabled: true, Endpoint: defaultTracesEndpoint, Routing: RoutingExclusive}
	})
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("off"), nativeEpisode("e1", 20), nativeEpisode("e2", 20))))
	runs, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	files, err := filepath.Glob(filepath.Join(dir, runs[0].Name(), "traces", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	body, err := os.ReadFile(files[0])
	require.NoError(t, err)
	lines := strings.Split(string(body), "\n")
	require.Len(t, lines, 2)
	_, key, err := rft.TraceJSONL([][]byte{[]byte(lines[0]), []byte(lines[1])})
	require.NoError(t, err)
	assert.Equal(t, strings.TrimPrefix(key, "sha256:")+".jsonl", filepath.Base(files[0]), "named by its idempotency key")
	assert.Contains(t, lines[0], `"id":"`+runs[0].Name()+`"`)
}

package primeexporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap/zapcore"

	"github.com/primeintellect/primeexporter/internal/platform/platformtest"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestAPrimeMetricsEventTakesTheStepMetricsPath(t *testing.T) {
	h := newHarness(t, nil)
	ld := events(trainRun("ev"),
		metricsEvent(7, map[string]float64{"lr": 1e-6, "grad_norm": 0.5}),
		func(lr plog.LogRecord) {
			lr.SetEventName("prime.metrics")
			body := lr.Body().SetEmptyMap()
			body.PutInt("prime.step", 8) // a body map; the step still comes from the attribute
			lr.Attributes().PutInt("prime.step", 8)
			body.PutDouble("loss", 0.25)
		},
	)
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	run := h.onlyRun()
	assert.Equal(t, map[string]float64{"lr": 1e-6, "grad_norm": 0.5}, run.Metrics[7])
	assert.Equal(t, 0.25, run.Metrics[8]["loss"])
}

func TestTheEventNameAttributeWorksForSDKsWithoutTheField(t *testing.T) {
	h := newHarness(t, nil)
	ld := events(trainRun("old-sdk"), func(lr plog.LogRecord) {
		lr.Attributes().PutStr("event.name", "prime.metrics")
		lr.Attributes().PutInt("prime.step", 2)
		lr.Attributes().PutDouble("loss", 0.5)
	})
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	assert.Equal(t, 0.5, h.onlyRun().Metrics[2]["loss"])
}

func TestOrdinaryLogLinesAndUnknownEventsAreIgnoredAndCounted(t *testing.T) {
	h := newHarness(t, nil)
	ld := events(trainRun("noise"),
		plainLog("epoch 1 started"),
		func(lr plog.LogRecord) { lr.SetEventName("prime.unknown_thing") },
		metricsEvent(1, map[string]float64{"loss": 1}),
	)
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	assert.Equal(t, map[string]float64{"loss": 1}, h.onlyRun().Metrics[1], "the good record still lands")
	assert.Equal(t, int64(2), h.count(metricSkipped, map[string]string{"reason": "not_an_event"}))
	assert.Contains(t, h.logText(), "prime.unknown_thing")
	assert.NotContains(t, h.logText(), "epoch 1 started", "ordinary log lines are not echoed")
}

func TestAMetricsEventWithABadValueLosesOnlyThatValue(t *testing.T) {
	h := newHarness(t, nil)
	ld := events(trainRun("bad"), func(lr plog.LogRecord) {
		lr.SetEventName("prime.metrics")
		lr.Attributes().PutInt("prime.step", 3)
		lr.Attributes().PutDouble("loss", 0.5)
		lr.Attributes().PutStr("note", "not a number")
	}, func(lr plog.LogRecord) {
		lr.SetEventName("prime.metrics")
		lr.Attributes().PutStr("prime.step", "three")
		lr.Attributes().PutDouble("loss", 0.1)
	})
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	assert.Equal(t, map[int64]map[string]float64{3: {"loss": 0.5}}, h.onlyRun().Metrics)
	text := h.logText()
	assert.Contains(t, text, "note")
	assert.Contains(t, text, "prime.step")
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "bad_value"}))
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "bad_step"}))
}

func TestMetricsAndLogsOfOneRunArrivingTogetherCreateOneRun(t *testing.T) {
	for i := 0; i < 20; i++ {
		h := newHarness(t, nil)
		ctx := context.Background()
		concurrently(
			func() {
				assert.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("race"), map[int64]map[string]float64{1: {"loss": 1}})))
			},
			func() {
				assert.NoError(t, h.exp.pushLogs(ctx, events(trainRun("race"), metricsEvent(1, map[string]float64{"lr": 0.1}))))
			},
			func() {
				assert.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("race"), map[int64]map[string]float64{2: {"loss": 0.5}})))
			},
		)
		run := h.onlyRun()
		assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1, "lr": 0.1}, 2: {"loss": 0.5}}, run.Metrics)
	}
}

func TestAPrimeMetricsEventIsPostedAsThePlatformsSDKPostsIt(t *testing.T) {
	tests := []struct {
		name       string
		record     func(plog.LogRecord)
		want       []string // each post's metrics object
		wantNoStep int64
	}{
		{"an event with no step is the row of its record's time",
			timedMetricsEvent(atNoon, atNoonHalf, map[string]float64{"inference/ttft": 0.25}),
			[]string{`{"_timestamp":1767225600,"inference/ttft":0.25}`}, 0},
		{"an event with no step and no record time is the row of its observed time",
			timedMetricsEvent(0, atNoonHalf, map[string]float64{"inference/ttft": 0.25}),
			[]string{`{"_timestamp":1767225600.5,"inference/ttft":0.25}`}, 0},
		{"an event with neither time is rejected as having no step",
			timedMetricsEvent(0, 0, map[string]float64{"inference/ttft": 0.25}),
			nil, 1},
		{"an event with a step carries its time as _timestamp",
			func(lr plog.LogRecord) {
				metricsEvent(4, map[string]float64{"loss": 0.5})(lr)
				lr.SetTimestamp(atNoonHalf)
			},
			[]string{`{"_timestamp":1767225600.5,"loss":0.5,"step":4}`}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("ev-t"), tt.record)))
			var want []string
			for _, m := range tt.want {
				want = append(want, `{"run_id":"`+h.onlyRun().ID+`","metrics":`+m+`}`)
			}
			assert.Equal(t, want, metricsBodies(h.platform), "the exact bodies on the wire")
			assert.Equal(t, tt.wantNoStep, h.count(metricRejected, map[string]string{"reason": "no_step"}))
		})
	}
}

// --- samples: episodes → Parquet objects → presign, PUT, confirm ---

// What the upload does with a push's episodes (cadence, rejections,
// splitting, ranges, the platform's answers, resume, the delivered set) is
// internal/upload's to test (upload_test.go), against a run's lease and the
// fake platform. Here: what the exporter around it decides (the PUT
// client, the hand-back, requests pushed together, the close-out after the
// uploads, offline mode and the persistent queue through the config).

// episode is one prime.episode record dispatched at step, with a one-branch
// trajectory carrying text.
func episode(step int64, text string) func(plog.LogRecord) {
	return func(lr plog.LogRecord) {
		lr.SetEventName("prime.episode")
		lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(step) * time.Second)))
		lr.Attributes().PutInt("prime.work.step", step)
		body := lr.Body().SetEmptyMap()
		body.PutStr("prompt", "q-"+text)
		body.PutDouble("reward", 1)
		branch := body.PutEmptySlice("trajectory").AppendEmpty().SetEmptyMap()
		msg := branch.PutEmptySlice("messages").AppendEmpty().SetEmptyMap()
		msg.PutStr("role", "assistant")
		msg.PutStr("content", text)
		branch.PutInt("num_input_tokens", 10)
		branch.PutInt("num_output_tokens", 20)
	}
}

func withAttr(f func(plog.LogRecord), k, v string) func(plog.LogRecord) {
	return func(lr plog.LogRecord) {
		f(lr)
		lr.Attributes().PutStr(k, v)
	}
}

// readRows and objects read back the objects the fake platform received
// (platformtest, shared with internal/upload's tests).
func readRows(t *testing.T, body []byte) []platformtest.Row { return platformtest.Rows(t, body) }

func objects(t *testing.T, run rfttest.Run) []string { return platformtest.Objects(t, run) }

func routes(srv *rfttest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		p := r.Path
		switch {
		case strings.HasSuffix(p, "/samples/presign"):
			out = append(out, "presign")
		case strings.HasSuffix(p, "/samples/confirm"):
			out = append(out, "confirm")
		case strings.HasPrefix(p, "/storage/"):
			out = append(out, "put")
		case strings.HasSuffix(p, "/finalize"):
			out = append(out, "finalize")
		}
	}
	return out
}

// The exporter gives presigned PUTs a bare client of their own
// (platformClient): none of the API client's key, headers or auth
// extensions.
func TestTheObjectPutCarriesNoPlatformCredentials(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("creds"), episode(10, "x"))))
	puts := 0
	for _, r := range h.platform.Requests() {
		if strings.HasPrefix(r.Path, "/storage/") {
			puts++
			assert.Empty(t, r.Header.Get("Authorization"))
			assert.Empty(t, r.Header.Get("x-api-key"))
			assert.Equal(t, "application/parquet", r.Header.Get("Content-Type"))
		}
	}
	assert.Equal(t, 1, puts)
}

// The collector's retry gets only what failed: the step the platform
// could not take now (503) comes back; the step that landed and the
// request's metrics event beside it do not. (What the upload does with
// the retried step, internal/upload's upload_test.go tests.)
func TestAHandBackCarriesTheFailedStepsEpisodeButNotTheMetricsEventBesideIt(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	h.platform.Inject(rfttest.RoutePresign, rfttest.Fault{}, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	err := h.exp.pushLogs(ctx, events(trainRun("dup"), episode(10, "x"), episode(20, "y"), metricsEvent(20, map[string]float64{"loss": 1})))
	var partial consumererror.Logs
	require.True(t, errors.As(err, &partial))
	require.Equal(t, 1, partial.Data().LogRecordCount(), "step 20's episode alone")
	prompt, _ := partial.Data().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Map().Get("prompt")
	assert.Equal(t, "q-y", prompt.Str())
	require.NoError(t, h.exp.pushLogs(ctx, partial.Data()))
	assert.Equal(t, []string{"step 10: q-x#0:0", "step 20: q-y#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, 1, h.onlyRun().MetricPosts, "the metrics event was not handed back")
}

func TestTheRunIsClosedOutOnlyAfterItsLastObjectIsConfirmed(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("order"), episode(10, "a"), episode(20, "b"), runEnd("completed", ""))))
	h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	assert.Equal(t, []string{"presign", "put", "confirm", "presign", "put", "confirm", "finalize"}, routes(h.platform))
}

func TestOfflineModeWritesTheExactObjectBytesUnderTheRunsSamplesFolder(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Mode = ModeOffline; c.Directory = dir })
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("offs"), episode(10, "a"), episode(20, "b"))))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("offs"), episode(10, "late"))))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	samples := filepath.Join(dir, entries[0].Name(), "samples")
	for name, want := range map[string]string{
		"step_10_0.parquet": "q-a", "step_10_1.parquet": "q-late", "step_20_0.parquet": "q-b",
	} {
		body, err := os.ReadFile(filepath.Join(samples, name))
		require.NoError(t, err)
		rows := readRows(t, body)
		require.Len(t, rows, 1)
		assert.Equal(t, want, rows[0].Prompt)
		assert.Equal(t, entries[0].Name(), rows[0].RunID)
	}
}

// batchOf appends the parts' resources side by side, as exporterhelper's
// batcher does with a trainer's requests.
func batchOf(parts ...plog.Logs) plog.Logs {
	ld := plog.NewLogs()
	for _, p := range parts {
		p.ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
	}
	return ld
}

func TestATrainersRequestsInOneBatchGoAsOneObjectPerStep(t *testing.T) {
	h := newHarness(t, nil)
	ld := batchOf(
		events(trainRun("m"), episode(10, "a"), episode(10, "b")),
		events(trainRun("m"), episode(10, "c"), episode(20, "d")),
		events(trainRun("m"), episode(20, "e")),
	)
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	assert.Equal(t, []string{"step 10: q-a#0:0 q-b#0:1 q-c#0:2", "step 20: q-d#0:0 q-e#0:1"}, objects(t, h.onlyRun()))
	assert.Equal(t, []string{"presign", "put", "confirm", "presign", "put", "confirm"}, routes(h.platform), "one object per step, not per request")
}

func TestAFailedStepOfRequestsPushedTogetherGoesBackUnderEachRequestsResource(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	// Step 10's confirm fails in place twice (a 500 is about this request):
	// its records go back, each under the resource it came with.
	h.platform.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 500}, rfttest.Fault{Status: 500})
	first, second := trainRun("back"), trainRun("back")
	err := h.exp.pushLogs(ctx, batchOf(
		events(first, episode(10, "a"), episode(20, "b")),
		events(second, episode(10, "c")),
	))
	var partial consumererror.Logs
	require.ErrorAs(t, err, &partial)
	back := partial.Data()
	require.Equal(t, 2, back.ResourceLogs().Len(), "one resource per request that had records of the failed step")
	for i, want := range []string{"q-a", "q-c"} {
		rl := back.ResourceLogs().At(i)
		require.Equal(t, 1, rl.ScopeLogs().At(0).LogRecords().Len())
		prompt, _ := rl.ScopeLogs().At(0).LogRecords().At(0).Body().Map().Get("prompt")
		assert.Equal(t, want, prompt.Str(), "resource %d", i)
	}
	require.NoError(t, h.exp.pushLogs(ctx, back))
	assert.Equal(t, []string{"step 20: q-b#0:0", "step 10: q-a#0:0 q-c#0:1"}, objects(t, h.onlyRun()))
}

func TestWithAPersistentQueueEachRequestIsItsOwnObjectSoAReplayRemakesIt(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		id := component.MustNewID("file_storage")
		c.QueueConfig.Get().StorageID = &id
	})
	ld := batchOf(
		events(trainRun("pq"), episode(10, "a")),
		events(trainRun("pq"), episode(10, "b")),
	)
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	assert.Equal(t, []string{"step 10: q-a#0:0", "step 10: q-b#1:0"}, objects(t, h.onlyRun()))
}

// --- Prime Traces: native episode documents ---

// Routing, the fallback to the table and replays of documents are
// internal/upload's to test (documents_test.go). Here: the run's choice
// kept across a restart through the storage extension, and offline mode's
// files.

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

func TestARestartWithStorageKeepsTheRunsPrimeTracesChoices(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey, TracesDisabledTeams: []string{"team-1"}})
	t.Cleanup(srv.Close)
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

// --- bad input: what is rejected, and only that ---

// The bad-input batches: every run's records cycle through a pattern of 100
// slots, the first ten of them malformed, one of each kind, the other 90
// good. Two more resources carry only records that cannot be placed: one
// with no identity, one whose run cannot be created (no model).
const (
	badCycle      = 100
	badCycles     = 32 // logs: 3 runs × 32 × 100 = 9,600 records
	badResourceN  = 200
	episodeSteps  = 10 // good episodes go to steps 10, 20, …, 100 (on the cadence)
	metricSteps   = 50
	pointCycles   = 48 // metrics: 2 runs × 48 × 100 = 9,600 points
	pointSteps    = 40
	badRunNoModel = "bad-nomodel"
)

// badRecord is one kind of malformed log record and how it is accounted.
type badRecord struct {
	kind    string
	record  func(plog.LogRecord)
	counter string
	reason  string
}

func badLogRecords() []badRecord {
	removeStep := func(lr plog.LogRecord) { lr.Attributes().Remove("prime.work.step") }
	then := func(f, g func(plog.LogRecord)) func(plog.LogRecord) {
		return func(lr plog.LogRecord) { f(lr); g(lr) }
	}
	metricsOnly := func(set func(plog.LogRecord)) func(plog.LogRecord) {
		return func(lr plog.LogRecord) { lr.SetEventName(eventMetrics); set(lr) }
	}
	return []badRecord{
		{"an episode with no step", then(episode(10, "bad"), removeStep), metricRejected, "no_step"},
		{"an episode with a string step", withAttr(episode(10, "bad"), "prime.work.step", "ten"), metricRejected, "bad_step"},
		{"an episode with a fractional step", then(episode(10, "bad"), func(lr plog.LogRecord) { lr.Attributes().PutDouble("prime.work.step", 10.5) }), metricRejected, "bad_step"},
		{"an episode with a map reward", then(episode(10, "bad"), func(lr plog.LogRecord) { lr.Body().Map().PutEmptyMap("reward") }), metricRejected, "bad_value"},
		{"an episode with a bad work type", withAttr(episode(10, "bad"), "prime.work.type", "test"), metricRejected, "bad_work_type"},
		{"a metrics event with a string value", metricsOnly(func(lr plog.LogRecord) {
			lr.Attributes().PutInt(attrStep, 5)
			lr.Attributes().PutStr("bad/value", "high")
		}), metricRejected, "bad_value"},
		{"a metrics event with a NaN", metricsOnly(func(lr plog.LogRecord) {
			lr.Attributes().PutInt(attrStep, 5)
			lr.Attributes().PutDouble("kl/nan", math.NaN())
		}), metricRejected, "non_finite"},
		{"a metrics event with no step", metricsOnly(func(lr plog.LogRecord) { lr.Attributes().PutDouble("loss", 1) }), metricRejected, "no_step"},
		{"an unknown prime.* event", func(lr plog.LogRecord) { lr.SetEventName("prime.rollout") }, metricSkipped, "not_an_event"},
		{"an ordinary log line", plainLog("epoch done"), metricSkipped, "not_an_event"},
	}
}

// goodLogs tells what a run's good records should put on the platform.
type goodLogs struct {
	prompts map[string]int64             // episode prompt → step
	metrics map[int64]map[string]float64 // step → key → value
}

// logBatch appends one resource's records: n cycles of the pattern, or,
// for a resource whose records can never be placed, n good records.
func logBatch(ld plog.Logs, res map[string]string, cycles int, bad []badRecord) goodLogs {
	rl := ld.ResourceLogs().AppendEmpty()
	resource(rl.Resource(), res)
	records := rl.ScopeLogs().AppendEmpty().LogRecords()
	key := res[attrRunKey]
	good := goodLogs{prompts: map[string]int64{}, metrics: map[int64]map[string]float64{}}
	ep, mt := 0, 0
	addGood := func(episodeSlot bool) {
		lr := records.AppendEmpty()
		if episodeSlot {
			step := int64(episodeSteps * (1 + ep%10))
			text := fmt.Sprintf("%s-%d", key, ep)
			episode(step, text)(lr)
			good.prompts["q-"+text] = step
			ep++
			return
		}
		step := int64(1 + mt%metricSteps)
		name := fmt.Sprintf("m/%d", mt)
		metricsEvent(step, map[string]float64{name: float64(mt)})(lr)
		if good.metrics[step] == nil {
			good.metrics[step] = map[string]float64{}
		}
		good.metrics[step][name] = float64(mt)
		mt++
	}
	if bad == nil {
		for i := range cycles {
			addGood(i%2 == 0)
		}
		return good
	}
	for range cycles {
		for slot := range badCycle {
			if slot < len(bad) {
				bad[slot].record(records.AppendEmpty())
				continue
			}
			addGood(slot%2 == 0)
		}
	}
	return good
}

func TestATenThousandRecordLogBatchWithMalformedRecordsLandsEveryGoodOneExactlyOnce(t *testing.T) {
	h := newHarness(t, nil)
	bad := badLogRecords()
	runs := []string{"bad-a", "bad-b", "bad-c"}

	ld := plog.NewLogs()
	want := map[string]goodLogs{}
	want[runs[0]] = logBatch(ld, trainRun(runs[0]), badCycles, bad)
	logBatch(ld, map[string]string{attrRunModel: "m"}, badResourceN, nil) // no identity
	want[runs[1]] = logBatch(ld, trainRun(runs[1]), badCycles, bad)
	logBatch(ld, map[string]string{attrRunKey: badRunNoModel}, badResourceN, nil)
	want[runs[2]] = logBatch(ld, trainRun(runs[2]), badCycles, bad)
	require.Equal(t, 10_000, ld.LogRecordCount())

	before := h.logs.Len() // start-up lines are not this batch's
	require.NoError(t, h.exp.pushLogs(context.Background(), ld), "bad input never fails its batch")

	require.Len(t, h.platform.Runs(), len(runs), "the run without a model is not created")
	posts := postedMetrics(t, h.platform)
	for _, key := range runs {
		run := h.runByKey(key)
		assertRowsLandOnce(t, run, want[key].prompts)
		assertPostsLandOnce(t, run, posts[run.ID], want[key].metrics)
	}
	assert.Equal(t, int64(len(runs)*badCycles*45), h.count(metricSampleRows, nil))

	// Every bad record is counted by its reason, exactly.
	perRun := int64(len(runs) * badCycles)
	wantRejected := map[string]int64{"no_identity": badResourceN, "run_refused": badResourceN}
	wantSkipped := map[string]int64{}
	for _, b := range bad {
		if b.counter == metricRejected {
			wantRejected[b.reason] += perRun
		} else {
			wantSkipped[b.reason] += perRun
		}
	}
	assertCounts(t, h, "logs", wantRejected, wantSkipped)

	// One warning per run and reason, naming the attribute or key.
	var wantWarns []string
	for _, key := range runs {
		id := h.runByKey(key).ID
		for _, w := range []struct{ reason, names string }{
			{"no_step", "prime.work.step"}, {"bad_step", "prime.work.step"},
			{"bad_value", "reward"}, {"bad_work_type", "prime.work.type"},
		} {
			wantWarns = append(wantWarns, fmt.Sprintf("Rejected a prime.episode record that cannot become a row run_id=%s reason=%s names=%s", id, w.reason, w.names))
		}
		for _, w := range []struct{ reason, metric string }{
			{"bad_value", "bad/value"}, {"non_finite", "kl/nan"}, {"no_step", "prime.step"},
		} {
			wantWarns = append(wantWarns, fmt.Sprintf("Rejected a value that cannot be sent run_id=%s reason=%s metric=%s names=%s", id, w.reason, w.metric, w.metric))
		}
	}
	wantWarns = append(wantWarns,
		"Rejected data without a run identity: it is dropped names=prime.run.key",
		"Rejected data: the run cannot be created, so it is dropped names=prime.run.model")
	// Keyed by event name alone: the line names whichever run sent it
	// first, and a batch's runs are sent at once.
	var got []string
	unknown := 0
	for _, w := range h.warningsSince(t, before) {
		if strings.HasPrefix(w, "Ignored a log record with an unknown prime.* event name") {
			unknown++
			assert.Regexp(t, `run_id=(`+h.runByKey(runs[0]).ID+`|`+h.runByKey(runs[1]).ID+`|`+h.runByKey(runs[2]).ID+`) event_name=prime.rollout$`, w)
			continue
		}
		got = append(got, w)
	}
	assert.Equal(t, 1, unknown, "one line for the unknown event name")
	assert.ElementsMatch(t, wantWarns, got)
}

func TestATenThousandPointMetricsBatchWithBadPointsPostsEveryGoodOneExactlyOnce(t *testing.T) {
	h := newHarness(t, nil)
	runs := []string{"bad-m1", "bad-m2"}
	md := pmetric.NewMetrics()
	want := map[string]map[int64]map[string]float64{}
	want[runs[0]] = pointBatch(md, trainRun(runs[0]), pointCycles)
	pointBatch(md, map[string]string{attrRunModel: "m"}, -badResourceN) // no identity
	want[runs[1]] = pointBatch(md, trainRun(runs[1]), pointCycles)
	pointBatch(md, map[string]string{attrRunKey: badRunNoModel}, -badResourceN)
	require.Equal(t, 10_000, md.DataPointCount())

	before := h.logs.Len()
	require.NoError(t, h.exp.pushMetrics(context.Background(), md), "bad input never fails its batch")

	require.Len(t, h.platform.Runs(), len(runs))
	posts := postedMetrics(t, h.platform)
	for _, key := range runs {
		run := h.runByKey(key)
		assertPostsLandOnce(t, run, posts[run.ID], want[key])
	}
	perRun := int64(len(runs) * pointCycles)
	assertCounts(t, h, "metrics", map[string]int64{
		"no_step": 2 * perRun, "bad_step": 4 * perRun, "non_finite": 4 * perRun,
		"no_identity": badResourceN, "run_refused": badResourceN,
	}, map[string]int64{})

	var wantWarns []string
	for _, key := range runs {
		id := h.runByKey(key).ID
		for _, w := range []struct{ reason, metric string }{
			{"no_step", "nostep"}, {"bad_step", "badstep"}, {"non_finite", "nonfinite"},
		} {
			wantWarns = append(wantWarns, fmt.Sprintf("Rejected a value that cannot be sent run_id=%s reason=%s metric=%s names=%s", id, w.reason, w.metric, w.metric))
		}
	}
	wantWarns = append(wantWarns,
		"Rejected data without a run identity: it is dropped names=prime.run.key",
		"Rejected data: the run cannot be created, so it is dropped names=prime.run.model")
	assert.ElementsMatch(t, wantWarns, h.warningsSince(t, before))
}

// pointBatch appends one resource's points: cycles of 100 with ten bad
// points first (two with no step, two with a string step, two with a
// fractional one, two NaN, two ±Inf), the rest good gauge and sum points
// whose keys are unique. A negative cycles is that many good points alone.
func pointBatch(md pmetric.Metrics, res map[string]string, cycles int) map[int64]map[string]float64 {
	rm := md.ResourceMetrics().AppendEmpty()
	resource(rm.Resource(), res)
	ms := rm.ScopeMetrics().AppendEmpty().Metrics()
	gauge := func(name string) pmetric.NumberDataPointSlice {
		m := ms.AppendEmpty()
		m.SetName(name)
		return m.SetEmptyGauge().DataPoints()
	}
	loss := gauge("loss")
	tokensMetric := ms.AppendEmpty()
	tokensMetric.SetName("tokens")
	tokensMetric.SetEmptySum().SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	tokens := tokensMetric.Sum().DataPoints()
	noStep, badStep, nonFinite := gauge("nostep"), gauge("badstep"), gauge("nonfinite")

	want := map[int64]map[string]float64{}
	g := 0
	addGood := func() {
		dps, name := loss, "loss"
		if g%2 == 1 {
			dps, name = tokens, "tokens"
		}
		step := int64(1 + g%pointSteps)
		dp := dps.AppendEmpty()
		dp.SetDoubleValue(float64(g))
		dp.Attributes().PutInt(attrStep, step)
		dp.Attributes().PutInt("i", int64(g))
		if want[step] == nil {
			want[step] = map[string]float64{}
		}
		want[step][fmt.Sprintf("%s{i=%d}", name, g)] = float64(g)
		g++
	}
	if cycles < 0 {
		for range -cycles {
			addGood()
		}
		return want
	}
	for range cycles {
		for slot := range badCycle {
			switch {
			case slot < 2:
				noStep.AppendEmpty().SetDoubleValue(1) // no prime.step, no timestamp to match a step gauge at
			case slot < 4:
				dp := badStep.AppendEmpty()
				dp.SetDoubleValue(1)
				dp.Attributes().PutStr(attrStep, "ten")
			case slot < 6:
				dp := badStep.AppendEmpty()
				dp.SetDoubleValue(1)
				dp.Attributes().PutDouble(attrStep, 2.5)
			case slot < 10:
				dp := nonFinite.AppendEmpty()
				dp.SetDoubleValue([]float64{math.NaN(), math.NaN(), math.Inf(1), math.Inf(-1)}[slot-6])
				dp.Attributes().PutInt(attrStep, 3)
			default:
				addGood()
			}
		}
	}
	return want
}

// runByKey is the platform run the exporter created for a run key.
func (h *harness) runByKey(key string) rfttest.Run {
	h.t.Helper()
	// The exporter's own "Created run" line says which run a key made.
	var id string
	for _, e := range h.logs.FilterMessage("Created run").All() {
		if e.ContextMap()["run"] == fmt.Sprintf("prime.run.key=%q", key) {
			id, _ = e.ContextMap()["run_id"].(string)
		}
	}
	require.NotEmpty(h.t, id, "run %s was created", key)
	run, ok := h.platform.Run(id)
	require.True(h.t, ok, "run %s is on the platform", id)
	return run
}

// assertRowsLandOnce reads every object of the run back with parquet-go:
// each good prompt is one row, in its step, and nothing else is there.
func assertRowsLandOnce(t *testing.T, run rfttest.Run, want map[string]int64) {
	t.Helper()
	seen := map[string]int{}
	sampleIDs := map[int64]map[int64]bool{}
	for _, o := range run.Objects {
		require.True(t, o.Confirmed, "object %s is confirmed", o.Key)
		for _, r := range readRows(t, o.Body) {
			require.Equal(t, run.ID, r.RunID)
			require.Equal(t, o.Step, r.Step)
			require.Equal(t, want[r.Prompt], r.Step, "row %q is in the step it was dispatched at", r.Prompt)
			seen[r.Prompt]++
			if sampleIDs[r.Step] == nil {
				sampleIDs[r.Step] = map[int64]bool{}
			}
			require.False(t, sampleIDs[r.Step][r.SampleID], "sample_id %d is unique in step %d", r.SampleID, r.Step)
			sampleIDs[r.Step][r.SampleID] = true
		}
	}
	require.Len(t, seen, len(want), "run %s: every good episode and no other has a row", run.ID)
	for prompt, n := range seen {
		require.Equal(t, 1, n, "run %s: episode %q has exactly one row", run.ID, prompt)
	}
}

// assertPostsLandOnce: every good value was posted exactly once, in its
// step's post, and the platform's rows are exactly the good values.
func assertPostsLandOnce(t *testing.T, run rfttest.Run, posts []map[string]float64, want map[int64]map[string]float64) {
	t.Helper()
	sent := map[string]int{}
	for _, p := range posts {
		step := int64(p["step"])
		for k := range p {
			if k != "step" {
				sent[fmt.Sprintf("%d/%s", step, k)]++
			}
		}
	}
	n := 0
	for step, values := range want {
		for k := range values {
			require.Equal(t, 1, sent[fmt.Sprintf("%d/%s", step, k)], "run %s: step %d %s is posted once", run.ID, step, k)
			n++
		}
	}
	require.Len(t, sent, n, "run %s: nothing but the good values is posted", run.ID)
	require.Equal(t, want, run.Metrics)
	require.Equal(t, len(want), run.MetricPosts, "run %s: one post per step", run.ID)
}

// postedMetrics are the accepted metrics bodies by run id.
func postedMetrics(t *testing.T, srv *rfttest.Server) map[string][]map[string]float64 {
	t.Helper()
	out := map[string][]map[string]float64{}
	for _, r := range srv.Requests() {
		if !strings.HasSuffix(r.Path, "/rft/metrics") {
			continue
		}
		var body struct {
			RunID   string             `json:"run_id"`
			Metrics map[string]float64 `json:"metrics"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body))
		out[body.RunID] = append(out[body.RunID], body.Metrics)
	}
	return out
}

// assertCounts checks the signal's rejected and skipped counters reason by
// reason, and that no other reason was counted.
func assertCounts(t *testing.T, h *harness, signal string, rejected, skipped map[string]int64) {
	t.Helper()
	for counter, want := range map[string]map[string]int64{metricRejected: rejected, metricSkipped: skipped} {
		var total int64
		for reason, n := range want {
			assert.Equal(t, n, h.count(counter, map[string]string{"signal": signal, "reason": reason}), "%s{reason=%s}", counter, reason)
			total += n
		}
		assert.Equal(t, total, h.count(counter, nil), "%s: no other reason", counter)
	}
}

// warningsSince renders every warn-level line from the from-th on as its message with the fields
// that place it (run_id, reason, metric, event_name) and names=<the
// attribute or key its error names>, found from a list of candidates.
func (h *harness) warningsSince(t *testing.T, from int) []string {
	t.Helper()
	names := []string{"prime.work.step", "prime.work.type", "reward", "bad/value", "kl/nan",
		"nostep", "badstep", "nonfinite", "prime.step", "prime.run.model", "prime.run.key"}
	var out []string
	for _, e := range h.logs.All()[from:] {
		if e.Level != zapcore.WarnLevel {
			continue
		}
		f := e.ContextMap()
		line := e.Message
		for _, k := range []string{"run_id", "reason", "metric", "event_name"} {
			if v, ok := f[k]; ok {
				line += fmt.Sprintf(" %s=%v", k, v)
			}
		}
		if msg, ok := f["error"].(string); ok {
			i := slices.IndexFunc(names, func(n string) bool { return strings.Contains(msg, n) })
			if i >= 0 {
				line += " names=" + names[i]
			} else {
				line += " names=none: " + msg
			}
		}
		out = append(out, line)
	}
	return out
}

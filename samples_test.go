package primeexporter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

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

// row is what the independent reader (parquet-go) finds in an object.
type row struct {
	RunID    string
	Step     int64
	SampleID int64
	Prompt   string
}

func readRows(t *testing.T, body []byte) []row {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	require.NoError(t, err, "parquet-go opens the object")
	cols := f.Schema().Columns()
	var out []row
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, rg.NumRows())
		n, _ := rows.ReadRows(buf)
		require.NoError(t, rows.Close())
		for _, pr := range buf[:n] {
			var r row
			for _, v := range pr {
				switch cols[v.Column()][0] {
				case "run_id":
					r.RunID = string(v.ByteArray())
				case "step":
					r.Step = v.Int64()
				case "sample_id":
					r.SampleID = v.Int64()
				case "prompt":
					r.Prompt = string(v.ByteArray())
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// objects lists the run's confirmed objects as "step:prompts" with their
// sample ids, in confirm order.
func objects(t *testing.T, run rfttest.Run) []string {
	t.Helper()
	var out []string
	for _, o := range run.Objects {
		require.True(t, o.Confirmed, "object %s is confirmed", o.Key)
		var parts []string
		for _, r := range readRows(t, o.Body) {
			require.Equal(t, run.ID, r.RunID)
			require.Equal(t, o.Step, r.Step, "rows are keyed by the object's step")
			parts = append(parts, fmt.Sprintf("%s#%d:%d", r.Prompt, r.SampleID>>32, r.SampleID&(1<<32-1)))
		}
		out = append(out, fmt.Sprintf("step %d: %s", o.Step, strings.Join(parts, " ")))
	}
	return out
}

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

func TestOnlyStepsOnTheCadenceAreUploadedAndTheRestAreCountedApart(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("cad"),
		episode(10, "a"), episode(10, "b"), episode(11, "c"), episode(20, "d"),
		withAttr(episode(20, "e"), "prime.work.type", "eval"),
	)))
	assert.Equal(t, []string{"step 10: q-a#0:0 q-b#0:1", "step 20: q-d#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, int64(1), h.count(metricSkipped, map[string]string{"reason": "off_cadence"}))
	assert.Equal(t, int64(1), h.count(metricSkipped, map[string]string{"reason": "eval"}))
	assert.Zero(t, h.count(metricRejected, nil), "skipping is not a loss")
}

func TestAStepWithNoRowsMakesNoRequest(t *testing.T) {
	h := newHarness(t, nil)
	empty := func(lr plog.LogRecord) {
		lr.SetEventName("prime.episode")
		lr.Attributes().PutInt("prime.work.step", 10)
		lr.Body().SetEmptyMap().PutEmptySlice("trajectory")
	}
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("empty"), empty, episode(30, "x"), withAttr(episode(40, "y"), "prime.work.type", "eval"))))
	assert.Equal(t, []string{"step 30: q-x#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, []string{"presign", "put", "confirm"}, routes(h.platform))
	assert.Equal(t, int64(1), h.count(metricSkipped, map[string]string{"reason": "empty_trajectory"}))
}

func TestAnOffPolicyStragglerLandsInASecondObjectOfItsStepWithItsOwnRange(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("late"), episode(10, "a"), episode(10, "b"))))
	// Dispatched at 10, it arrives with step 20's batch.
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("late"), episode(20, "c"), episode(10, "straggler"))))
	assert.Equal(t, []string{
		"step 10: q-a#0:0 q-b#0:1",
		"step 10: q-straggler#1:0",
		"step 20: q-c#0:0",
	}, objects(t, h.onlyRun()))
}

func TestBadEpisodesAreRejectedOneByOneAndTheRestLand(t *testing.T) {
	h := newHarness(t, nil)
	badReward := func(lr plog.LogRecord) {
		episode(10, "bad")(lr)
		lr.Body().Map().PutEmptyMap("reward")
	}
	stringStep := func(lr plog.LogRecord) {
		episode(10, "bad2")(lr)
		lr.Attributes().PutStr("prime.work.step", "ten")
	}
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("mixed"), badReward, episode(10, "good"), stringStep)))
	assert.Equal(t, []string{"step 10: q-good#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "bad_value"}))
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "bad_step"}))
	text := h.logText()
	assert.Contains(t, text, "reward")
	assert.Contains(t, text, "prime.work.step")
}

func TestAFailedPresignLosesOnlyThatStep(t *testing.T) {
	h := newHarness(t, nil)
	h.platform.Inject(rfttest.RoutePresign, rfttest.Fault{Status: 400})
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("p"), episode(10, "lost"), episode(20, "kept"))))
	assert.Equal(t, []string{"step 20: q-kept#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "upload_rejected"}))
}

func TestAPresignWithoutURLIsAnErrorNamingTheKeysThatCameBack(t *testing.T) {
	h := newHarness(t, nil)
	h.platform.Inject(rfttest.RoutePresign, rfttest.Fault{Status: 200, Body: `{"data":{"s3Key":"k.parquet"}}`})
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("nourl"), episode(10, "x"))))
	assert.Empty(t, h.onlyRun().Objects)
	assert.Contains(t, h.logText(), "s3Key")
}

func TestAPutAnsweredWith503IsRetriedAndLandsOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.platform.Inject(rfttest.RoutePut, rfttest.Fault{Status: 503})
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("put503"), episode(10, "x"))))
	assert.Equal(t, []string{"step 10: q-x#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, []string{"presign", "put", "put", "confirm"}, routes(h.platform))
}

func TestAPutAnsweredWith403IsFinal(t *testing.T) {
	h := newHarness(t, nil)
	h.platform.Inject(rfttest.RoutePut, rfttest.Fault{Status: 403})
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("put403"), episode(10, "x"))))
	assert.Empty(t, h.onlyRun().Objects)
	assert.Equal(t, []string{"presign", "put"}, routes(h.platform))
}

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

func TestAFailedConfirmIsRetriedWithoutUploadingAgain(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	// Both in-place attempts fail: the records go back to the collector.
	// A 500 is about this request, so step 20 still goes (after a 503 the
	// platform is down and it would go back unsent).
	h.platform.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 500}, rfttest.Fault{Status: 500})
	err := h.exp.pushLogs(ctx, events(trainRun("conf"), episode(10, "x"), episode(20, "y")))
	require.Error(t, err)
	var partial consumererror.Logs
	require.True(t, errors.As(err, &partial))
	assert.Equal(t, 1, partial.Data().LogRecordCount(), "only step 10's record comes back")

	require.NoError(t, h.exp.pushLogs(ctx, partial.Data()))
	assert.Equal(t, []string{"step 20: q-y#0:0", "step 10: q-x#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, []string{"presign", "put", "confirm", "confirm", "presign", "put", "confirm", "confirm"}, routes(h.platform),
		"step 10: presign, put, two failed confirms; step 20 in full; then step 10's confirm alone")
}

func TestARetryNeverReuploadsAStepThatWasConfirmed(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	h.platform.Inject(rfttest.RoutePresign, rfttest.Fault{}, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	err := h.exp.pushLogs(ctx, events(trainRun("dup"), episode(10, "x"), episode(20, "y"), metricsEvent(20, map[string]float64{"loss": 1})))
	var partial consumererror.Logs
	require.True(t, errors.As(err, &partial))
	require.NoError(t, h.exp.pushLogs(ctx, partial.Data()))
	assert.Equal(t, []string{"step 10: q-x#0:0", "step 20: q-y#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, 1, h.onlyRun().MetricPosts, "the metrics event was not handed back")
}

func TestAnEpisodeLargerThanTheLimitIsRejectedOnItsOwn(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Samples.MaxEpisodeBytes = 2000 })
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("big"), episode(10, strings.Repeat("x", 5000)), episode(10, "small"))))
	assert.Equal(t, []string{"step 10: q-small#0:0"}, objects(t, h.onlyRun()))
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "episode_too_large"}))
	assert.Contains(t, h.logText(), "max_episode_bytes")
}

func TestAStepLargerThanTheObjectLimitIsSplitWithARangePerPart(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Samples.MaxEpisodeBytes = 4000; c.Samples.MaxObjectBytes = 4000 })
	text := strings.Repeat("t", 1000)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("split"), episode(10, text), episode(10, text), episode(10, text))))
	got := objects(t, h.onlyRun())
	require.Len(t, got, 3)
	assert.Contains(t, got[0], "#0:0")
	assert.Contains(t, got[1], "#1:0")
	assert.Contains(t, got[2], "#2:0")
}

func TestTheRunIsClosedOutOnlyAfterItsLastObjectIsConfirmed(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("order"), episode(10, "a"), episode(20, "b"), runEnd("completed", ""))))
	h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	assert.Equal(t, []string{"presign", "put", "confirm", "presign", "put", "confirm", "finalize"}, routes(h.platform))
}

func TestAnAttachedRunDrawsItsRangesFromTheUpperHalf(t *testing.T) {
	h := newHarness(t, nil)
	h.platform.AddRun("run-att")
	require.NoError(t, h.exp.pushLogs(context.Background(), events(map[string]string{"prime.run.id": "run-att"}, episode(10, "a"), episode(10, "b"))))
	run, _ := h.platform.Run("run-att")
	require.Len(t, run.Objects, 1)
	for _, r := range readRows(t, run.Objects[0].Body) {
		rng := r.SampleID >> 32
		assert.GreaterOrEqual(t, rng, int64(1<<20))
		assert.Less(t, rng, int64(1<<21))
		assert.Less(t, r.SampleID, int64(1<<53))
	}
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

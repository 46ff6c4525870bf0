package primeexporter

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// During an outage a run's data waits in exporterhelper's back-off, where
// the close-out's drain cannot see it, while the run's end needs no request
// and is accepted at once: a close-out then would refuse the data when its
// retry comes, and it would be lost.
func TestACloseOutWaitsForTheRunsDataInTheCollectorsRetry(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	back := endWithStep2InRetry(t, h, "hb")

	require.NoError(t, h.exp.pushMetrics(ctx, back.Data()), "the retry is accepted: the run is still open")
	run := h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}}, run.Metrics)
	assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "run_closed"}))
	reqs := h.platform.Requests()
	assert.Equal(t, "/api/v1/rft/finalize", reqs[len(reqs)-1].Path, "finalize comes after the retried post")
}

// The batches a trainer sent during an outage wait in the sending queue
// behind the one being retried; once the retry lands, the consumer takes
// the next at once, and for that moment nothing of the run is in flight
// or in retry. A close-out looking then must not refuse the batches still
// to come (an end-to-end outage lost 7 metric records this way).
func TestACloseOutWaitsForTheRunsDataQueuedBehindItsRetry(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	back := endWithStep2InRetry(t, h, "queued")

	require.NoError(t, h.exp.pushMetrics(ctx, back.Data()), "the retry")
	// Ten of the close-out's polls: the next batch's way out of the queue.
	time.Sleep(10 * 50 * time.Millisecond)
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("queued"), map[int64]map[string]float64{3: {"loss": 0.25}})), "the batch queued behind the retry")

	run := h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}, 3: {"loss": 0.25}}, run.Metrics)
	assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "run_closed"}))
}

// endWithStep2InRetry posts run key's step 1, has its step 2 handed back
// by a platform answering 503, ends the run and waits until the close-out
// waits for that retry, which it returns.
func endWithStep2InRetry(t *testing.T, h *harness, key string) consumererror.Metrics {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun(key), map[int64]map[string]float64{1: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	var back consumererror.Metrics
	require.ErrorAs(t, h.exp.pushMetrics(ctx, gauges(trainRun(key), map[int64]map[string]float64{2: {"loss": 0.5}})), &back)
	_, tagged := back.Data().ResourceMetrics().At(0).Resource().Attributes().Get(handBackAttr)
	require.True(t, tagged, "the data handed back carries its token, for the close-out to wait for")
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun(key), runEnd("completed", ""))))
	require.Eventually(t, func() bool {
		return h.logs.FilterMessageSnippet("close-out waits for its data").Len() == 1
	}, 5*time.Second, time.Millisecond)
	return back
}

func TestACloseOutWaitsOnlyForItsOwnRunsRetries(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("done"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 502})
	var back consumererror.Metrics
	require.ErrorAs(t, h.exp.pushMetrics(ctx, gauges(trainRun("other"), map[int64]map[string]float64{1: {"loss": 1}})), &back)

	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("done"), runEnd("completed", ""))))
	h.waitStatus(h.platform.Runs()[0].ID, rfttest.StatusCompleted)
}

func TestARetryThatNeverComesBackHoldsACloseOutNoLongerThanMaxElapsedTime(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	h := newHarnessOpts(t, func(c *Config) { c.RetryConfig.MaxElapsedTime = time.Minute },
		withRegistryClock(func() time.Time { return time.Unix(0, now.Load()) }))
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("drop"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	require.Error(t, h.exp.pushMetrics(ctx, gauges(trainRun("drop"), map[int64]map[string]float64{2: {"loss": 1}})))

	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("drop"), runEnd("completed", ""))))
	require.Eventually(t, func() bool {
		return h.logs.FilterMessageSnippet("close-out waits for its data").Len() == 1
	}, 5*time.Second, time.Millisecond)
	// exporterhelper gives up on the data after max_elapsed_time.
	now.Add(int64(time.Minute + time.Second))
	h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
}

func TestWithoutRetryOnFailureNothingIsHandedBackToWaitFor(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RetryConfig.Enabled = false })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("noretry"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	err := h.exp.pushMetrics(ctx, gauges(trainRun("noretry"), map[int64]map[string]float64{2: {"loss": 1}}))
	var back consumererror.Metrics
	require.True(t, errors.As(err, &back))
	_, tagged := back.Data().ResourceMetrics().At(0).Resource().Attributes().Get(handBackAttr)
	assert.False(t, tagged, "no retry will bring it back")

	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("noretry"), runEnd("completed", ""))))
	h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
}

func TestCollectorShutdownDoesNotWaitForRetriesItStops(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FinalizeGrace = time.Hour })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("stop"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	require.Error(t, h.exp.pushMetrics(ctx, gauges(trainRun("stop"), map[int64]map[string]float64{2: {"loss": 1}})))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("stop"), runEnd("completed", ""))))

	h.shutdown()
	assert.Equal(t, rfttest.StatusCompleted, h.onlyRun().Status, "the close-out the trainer asked for is finished")
}

// A time row has no step to hand back by: its retry must carry exactly the
// points or records of that time, stamped as they came, so that the retry
// posts the same row.
func TestATimeRowWhosePostFailsIsHandedBackAloneAndLandsOnceOnTheRetry(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// push sends a step row (at atNoon) and a time row (at
		// atNoonHalf), checks what the push handed back, and returns a
		// push of it.
		push func(t *testing.T, h *harness) (retry func() error)
	}{
		{"a metric point with no step",
			func(t *testing.T, h *harness) func() error {
				md := timedGauges(t, trainRun("tr"),
					timedPoint{"loss", 0.5, atNoon, 1}, timedPoint{"inference/ttft", 0.25, atNoonHalf, nil})
				var back consumererror.Metrics
				require.ErrorAs(t, h.exp.pushMetrics(ctx, md), &back)
				require.Equal(t, 1, back.Data().DataPointCount(), "only the time row's point comes back")
				dp := back.Data().ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0)
				assert.Equal(t, atNoonHalf, dp.Timestamp(), "stamped as it came")
				return func() error { return h.exp.pushMetrics(ctx, back.Data()) }
			}},
		{"a prime.metrics event with no step",
			func(t *testing.T, h *harness) func() error {
				ld := events(trainRun("tr"),
					func(lr plog.LogRecord) {
						metricsEvent(1, map[string]float64{"loss": 0.5})(lr)
						lr.SetTimestamp(atNoon)
					},
					timedMetricsEvent(atNoonHalf, 0, map[string]float64{"inference/ttft": 0.25}))
				var back consumererror.Logs
				require.ErrorAs(t, h.exp.pushLogs(ctx, ld), &back)
				require.Equal(t, 1, back.Data().LogRecordCount(), "only the time row's record comes back")
				lr := back.Data().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
				assert.Equal(t, atNoonHalf, lr.Timestamp(), "stamped as it came")
				return func() error { return h.exp.pushLogs(ctx, back.Data()) }
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			// The step row goes through; the time row's post fails on
			// both in-place attempts.
			h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{}, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
			retry := tt.push(t, h)
			require.NoError(t, retry())

			run := h.onlyRun()
			timeRow := `{"run_id":"` + run.ID + `","metrics":{"_timestamp":1767225600.5,"inference/ttft":0.25}}`
			assert.Equal(t, []string{
				`{"run_id":"` + run.ID + `","metrics":{"_timestamp":1767225600,"loss":0.5,"step":1}}`,
				timeRow, timeRow, // the two failed attempts
				timeRow, // the retry, the same row
			}, metricsBodies(h.platform))
			assert.Equal(t, 2, run.MetricPosts, "each row landed once")
			assert.Equal(t, map[float64]map[string]float64{1767225600.5: {"inference/ttft": 0.25}}, run.TimeMetrics)
			assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}}, run.Metrics)
		})
	}
}

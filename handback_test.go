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

	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// During an outage a run's data waits in exporterhelper's back-off, where
// the close-out's drain cannot see it, while the run's end needs no request
// and is accepted at once: a close-out then would refuse the data when its
// retry comes, and it would be lost.
func TestACloseOutWaitsForTheRunsDataInTheCollectorsRetry(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("hb"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	var back consumererror.Metrics
	require.ErrorAs(t, h.exp.pushMetrics(ctx, gauges(trainRun("hb"), map[int64]map[string]float64{2: {"loss": 0.5}})), &back)

	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("hb"), runEnd("completed", ""))))
	require.Eventually(t, func() bool {
		return h.logs.FilterMessageSnippet("close-out waits for its data").Len() == 1
	}, 5*time.Second, time.Millisecond)

	require.NoError(t, h.exp.pushMetrics(ctx, back.Data()), "the retry is accepted: the run is still open")
	run := h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}}, run.Metrics)
	assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "run_closed"}))
	reqs := h.platform.Requests()
	assert.Equal(t, "/api/v1/rft/finalize", reqs[len(reqs)-1].Path, "finalize comes after the retried post")
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
		withRunsOptions(runs.WithClock(func() time.Time { return time.Unix(0, now.Load()) })))
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
	_, tagged := back.Data().ResourceMetrics().At(0).Resource().Attributes().Get(runs.AttrHandBack)
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

package primeexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestAnEndedRunIsClosedOutWithItsStatus(t *testing.T) {
	tests := []struct {
		name, status, reason string
		wantStatus           string
		wantFinalized        bool
		wantMessage          string
	}{
		{"completed finalizes", "completed", "", rfttest.StatusCompleted, true, ""},
		{"no status means completed", "", "", rfttest.StatusCompleted, true, ""},
		{"failed sends the reason", "failed", "OOM at step 3", rfttest.StatusFailed, false, "OOM at step 3"},
		{"failed without a reason says failed", "failed", "", rfttest.StatusFailed, false, "failed"},
		{"cancelled leads the message", "cancelled", "user stop", rfttest.StatusFailed, false, "cancelled: user stop"},
		{"crashed leads the message", "crashed", "segfault", rfttest.StatusFailed, false, "crashed: segfault"},
		{"an unknown status closes as failed and names it", "exploded", "boom", rfttest.StatusFailed, false, "unknown status exploded: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := context.Background()
			require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("r"), map[int64]map[string]float64{1: {"loss": 1}})))
			require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("r"), runEnd(tt.status, tt.reason))))
			run := h.waitStatus(h.onlyRun().ID, tt.wantStatus)
			assert.Equal(t, tt.wantFinalized, run.Finalized)
			assert.Equal(t, tt.wantMessage, run.ErrorMessage)
		})
	}
}

func TestTheRunIsDrainedBeforeItIsClosedOut(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FinalizeGrace = 200 * time.Millisecond })
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("drain"), metricsEvent(1, map[string]float64{"loss": 1}), runEnd("completed", ""))))
	// Metrics of the last step arrive in the other pipeline after the end.
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("drain"), map[int64]map[string]float64{2: {"loss": 0.5}})))

	run := h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}}, run.Metrics)
	reqs := h.platform.Requests()
	assert.Equal(t, "/api/v1/rft/finalize", reqs[len(reqs)-1].Path, "finalize comes after every metrics post")
}

func TestDataForAClosedRunIsRefusedAndCounted(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("closed"), metricsEvent(1, map[string]float64{"loss": 1}), runEnd("completed", ""))))
	h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	require.Eventually(t, func() bool { return h.count(metricRuns, map[string]string{"event": "closed"}) == 1 }, 5*time.Second, time.Millisecond)
	before := len(h.platform.Requests())

	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("closed"), map[int64]map[string]float64{2: {"loss": 0.5}})))
	assert.Len(t, h.platform.Requests(), before, "nothing is sent for a closed run")
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "run_closed"}))
	assert.Contains(t, h.logText(), "already closed out")
}

func TestAnAttachedRunIsFinalizedButNeverMarkedFailed(t *testing.T) {
	for _, tt := range []struct{ status, want string }{
		{"completed", rfttest.StatusCompleted},
		{"failed", rfttest.StatusRunning},
		{"crashed", rfttest.StatusRunning},
	} {
		t.Run(tt.status, func(t *testing.T) {
			h := newHarness(t, nil)
			h.platform.AddRun("run-hosted")
			ctx := context.Background()
			res := map[string]string{"prime.run.id": "run-hosted"}
			require.NoError(t, h.exp.pushMetrics(ctx, gauges(res, map[int64]map[string]float64{1: {"loss": 1}})))
			require.NoError(t, h.exp.pushLogs(ctx, events(res, runEnd(tt.status, "x"))))
			require.Eventually(t, func() bool { return h.count(metricRuns, map[string]string{"event": "closed"}) == 1 }, 5*time.Second, time.Millisecond)
			run, _ := h.platform.Run("run-hosted")
			assert.Equal(t, tt.want, run.Status)
			for _, r := range h.platform.Requests() {
				assert.NotEqual(t, "/api/v1/rft/external-runs", r.Path, "attaching makes no create request")
			}
		})
	}
}

func TestTheConfiguredRunIDAttachesWithoutARequest(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Run.ID = "run-sidecar" })
	h.platform.AddRun("run-sidecar")
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(trainRun("ignored-key"), map[int64]map[string]float64{1: {"loss": 1}})))
	run, ok := h.platform.Run("run-sidecar")
	require.True(t, ok)
	assert.Equal(t, 1, run.MetricPosts)
	assert.Len(t, h.platform.Runs(), 1)
}

func TestAConflictOnTheStatusRouteMeansAlreadyClosedAndIsNotAnError(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("c409"), map[int64]map[string]float64{1: {"loss": 1}})))
	id := h.onlyRun().ID
	// The launcher closed the run first.
	h.platform.Inject(rfttest.RouteStatus, rfttest.Fault{Status: 409, Body: `{"detail":"Cannot update status of run in 'COMPLETED' state."}`})
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("c409"), runEnd("failed", "late"))))
	require.Eventually(t, func() bool { return h.count(metricRuns, map[string]string{"event": "closed"}) == 1 }, 5*time.Second, time.Millisecond)
	assert.NotContains(t, h.logText(), "Could not close out run")
	run, _ := h.platform.Run(id)
	assert.Equal(t, rfttest.StatusRunning, run.Status, "the injected 409 answered without processing")
}

func TestAFinalizeRefusedForGoodFallsBackToTheStatusRoute(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("fb"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteFinalize, rfttest.Fault{Status: 400})
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("fb"), runEnd("completed", ""))))
	run := h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	assert.False(t, run.Finalized, "completed through the status route")
}

func TestARunWithoutTelemetryForIdleTimeoutIsMarkedCrashed(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(trainRun("idle"), map[int64]map[string]float64{1: {"loss": 1}})))
	run := h.waitStatus(h.onlyRun().ID, rfttest.StatusFailed)
	assert.Equal(t, "crashed: no telemetry for 100ms", run.ErrorMessage)
}

func TestAnAttachedRunIsNeverMarkedCrashedWhenIdle(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout = 20 * time.Millisecond })
	h.platform.AddRun("run-att")
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(map[string]string{"prime.run.id": "run-att"}, map[int64]map[string]float64{1: {"loss": 1}})))
	time.Sleep(200 * time.Millisecond) // ten idle periods
	run, _ := h.platform.Run("run-att")
	assert.Equal(t, rfttest.StatusRunning, run.Status)
}

func TestCollectorShutdownClosesNoRunThatDidNotEnd(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(trainRun("live"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.shutdown()
	assert.Equal(t, rfttest.StatusRunning, h.onlyRun().Status, "a collector restart is not the end of a training run")
}

func TestShutdownFinishesACloseOutTheTrainerAskedFor(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FinalizeGrace = time.Hour })
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("bye"), metricsEvent(1, map[string]float64{"loss": 1}), runEnd("completed", ""))))
	assert.Equal(t, rfttest.StatusRunning, h.onlyRun().Status, "still in its grace period")
	h.shutdown()
	assert.Equal(t, rfttest.StatusCompleted, h.onlyRun().Status)
}

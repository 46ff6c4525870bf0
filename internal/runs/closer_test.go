package runs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// retryOnFailure is retry_on_failure as the exporter's defaults have it:
// on, giving up after 5 minutes.
func retryOnFailure(c *runs.Config) { c.RetryEnabled, c.RetryMaxElapsed = true, 5*time.Minute }

// newOnline starts a registry on the online backend over a fresh fake
// platform, with a store that remembers nothing across a restart;
// fleettest.Config with retry_on_failure on and then edits.
func newOnline(t *testing.T, opts []runs.Option, edits ...func(*runs.Config)) (*rfttest.Server, *fleettest.Collector) {
	t.Helper()
	srv := fleettest.NewPlatform(t)
	cfg := fleettest.Config(append([]func(*runs.Config){retryOnFailure}, edits...)...)
	return srv, fleettest.NewCollector(t, cfg, fleettest.Online(t, srv), runstore.NewMemStore(), opts...)
}

// attachedResource is the resource of a trainer whose run the platform
// hosts (prime.run.id).
func attachedResource(id string) pcommon.Resource {
	res := pcommon.NewResource()
	res.Attributes().PutStr(runs.AttrRunID, id)
	return res
}

// postStep is one push of a step's values for res's run, as the
// exporter's metrics push makes it: it holds the run, posts the row and
// lets the run go. What could not be sent goes to the collector's retry as
// a copy of res, which the registry marks as the run's data in the retry
// (MarkHandedBack) and which comes back as retry; res is settled once the
// push is done with it. Data the registry refused comes back as
// runs.ErrSkipped, with no retry.
func postStep(reg *runs.Registry, res pcommon.Resource, step int64, values map[string]float64) (retry pcommon.Resource, err error) {
	ctx := context.Background()
	l, err := reg.Acquire(ctx, res, reject.SignalMetrics, len(values))
	if err == nil {
		var entries []stepmetrics.Entry
		for k, v := range values {
			entries = append(entries, stepmetrics.Entry{Step: step, Key: k, Value: v})
		}
		batch := runs.StepBatch{}
		batch.Add(entries)
		_, err = l.PostSteps(ctx, reject.SignalMetrics, batch)
		l.Release()
	}
	var appended []pcommon.Resource
	if err != nil && !errors.Is(err, runs.ErrSkipped) {
		retry = pcommon.NewResource()
		res.CopyTo(retry)
		appended = append(appended, retry)
	}
	reg.MarkHandedBack(res, appended)
	reg.Settle(res)
	return retry, err
}

// endRun is a push of the run's prime.run.end record with status and
// reason ("" leaves the attribute out).
func endRun(t *testing.T, reg *runs.Registry, res pcommon.Resource, status, reason string) {
	t.Helper()
	attrs := pcommon.NewMap()
	if status != "" {
		attrs.PutStr("prime.run.status", status)
	}
	if reason != "" {
		attrs.PutStr("prime.run.error", reason)
	}
	end, _ := runs.ParseEnd(attrs) // a bad status still ends the run, as failed
	l, err := reg.Acquire(context.Background(), res, reject.SignalLogs, 1)
	require.NoError(t, err)
	l.End(end)
	l.Release()
	reg.Settle(res)
}

// onlyRun is the platform's single run.
func onlyRun(t *testing.T, srv *rfttest.Server) rfttest.Run {
	t.Helper()
	all := srv.Runs()
	require.Len(t, all, 1, "runs on the platform")
	return all[0]
}

// waitStatus waits for the run's close-out to reach the platform.
func waitStatus(t *testing.T, srv *rfttest.Server, id, status string) rfttest.Run {
	t.Helper()
	var r rfttest.Run
	require.Eventually(t, func() bool {
		r, _ = srv.Run(id)
		return r.Status == status
	}, 10*time.Second, 5*time.Millisecond, "run %s never reached %s", id, status)
	return r
}

// waitClosed waits until n close-outs have gone through.
func waitClosed(t *testing.T, c *fleettest.Collector, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return c.Tel.Events("closed") == n }, 5*time.Second, time.Millisecond)
}

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
			srv, c := newOnline(t, nil)
			_, err := postStep(c.Reg, fleettest.KeyedResource("r"), 1, map[string]float64{"loss": 1})
			require.NoError(t, err)
			endRun(t, c.Reg, fleettest.KeyedResource("r"), tt.status, tt.reason)
			run := waitStatus(t, srv, onlyRun(t, srv).ID, tt.wantStatus)
			assert.Equal(t, tt.wantFinalized, run.Finalized)
			assert.Equal(t, tt.wantMessage, run.ErrorMessage)
		})
	}
}

func TestTheRunIsDrainedBeforeItIsClosedOut(t *testing.T) {
	srv, c := newOnline(t, nil, func(c *runs.Config) { c.FinalizeGrace = 200 * time.Millisecond })
	_, err := postStep(c.Reg, fleettest.KeyedResource("drain"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	endRun(t, c.Reg, fleettest.KeyedResource("drain"), "completed", "")
	// Metrics of the last step arrive in the other pipeline after the end.
	_, err = postStep(c.Reg, fleettest.KeyedResource("drain"), 2, map[string]float64{"loss": 0.5})
	require.NoError(t, err)

	run := waitStatus(t, srv, onlyRun(t, srv).ID, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}}, run.Metrics)
	reqs := srv.Requests()
	assert.True(t, strings.HasSuffix(reqs[len(reqs)-1].Path, "/rft/finalize"), "finalize comes after every metrics post")
}

func TestAnAttachedRunIsFinalizedButNeverMarkedFailed(t *testing.T) {
	for _, tt := range []struct{ status, want string }{
		{"completed", rfttest.StatusCompleted},
		{"failed", rfttest.StatusRunning},
		{"crashed", rfttest.StatusRunning},
	} {
		t.Run(tt.status, func(t *testing.T) {
			srv, c := newOnline(t, nil)
			srv.AddRun("run-hosted")
			_, err := postStep(c.Reg, attachedResource("run-hosted"), 1, map[string]float64{"loss": 1})
			require.NoError(t, err)
			endRun(t, c.Reg, attachedResource("run-hosted"), tt.status, "x")
			waitClosed(t, c, 1)
			run, _ := srv.Run("run-hosted")
			assert.Equal(t, tt.want, run.Status)
			assert.Zero(t, srv.RequestsByRoute()[rfttest.RouteCreate], "attaching makes no create request")
		})
	}
}

func TestAConflictOnTheStatusRouteMeansAlreadyClosedAndIsNotAnError(t *testing.T) {
	srv, c := newOnline(t, nil)
	_, err := postStep(c.Reg, fleettest.KeyedResource("c409"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	id := onlyRun(t, srv).ID
	// The launcher closed the run first.
	srv.Inject(rfttest.RouteStatus, rfttest.Fault{Status: 409, Body: `{"detail":"Cannot update status of run in 'COMPLETED' state."}`})
	endRun(t, c.Reg, fleettest.KeyedResource("c409"), "failed", "late")
	waitClosed(t, c, 1)
	assert.Zero(t, c.Logged("Could not close out run"))
	run, _ := srv.Run(id)
	assert.Equal(t, rfttest.StatusRunning, run.Status, "the injected 409 answered without processing")
}

func TestAFinalizeRefusedForGoodFallsBackToTheStatusRoute(t *testing.T) {
	srv, c := newOnline(t, nil)
	_, err := postStep(c.Reg, fleettest.KeyedResource("fb"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	srv.Inject(rfttest.RouteFinalize, rfttest.Fault{Status: 400})
	endRun(t, c.Reg, fleettest.KeyedResource("fb"), "completed", "")
	run := waitStatus(t, srv, onlyRun(t, srv).ID, rfttest.StatusCompleted)
	assert.False(t, run.Finalized, "completed through the status route")
}

func TestARunWithoutTelemetryForIdleTimeoutIsMarkedCrashed(t *testing.T) {
	srv, c := newOnline(t, nil, func(c *runs.Config) { c.IdleTimeout = 100 * time.Millisecond })
	_, err := postStep(c.Reg, fleettest.KeyedResource("idle"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	run := waitStatus(t, srv, onlyRun(t, srv).ID, rfttest.StatusFailed)
	assert.Equal(t, "crashed: no telemetry for 100ms", run.ErrorMessage)
}

func TestAnAttachedRunIsNeverMarkedCrashedWhenIdle(t *testing.T) {
	srv, c := newOnline(t, nil, func(c *runs.Config) { c.IdleTimeout = 20 * time.Millisecond })
	srv.AddRun("run-att")
	_, err := postStep(c.Reg, attachedResource("run-att"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // ten idle periods
	run, _ := srv.Run("run-att")
	assert.Equal(t, rfttest.StatusRunning, run.Status)
}

func TestCollectorShutdownClosesNoRunThatDidNotEnd(t *testing.T) {
	srv, c := newOnline(t, nil)
	_, err := postStep(c.Reg, fleettest.KeyedResource("live"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	c.Shutdown()
	assert.Equal(t, rfttest.StatusRunning, onlyRun(t, srv).Status, "a collector restart is not the end of a training run")
}

func TestShutdownFinishesACloseOutTheTrainerAskedFor(t *testing.T) {
	srv, c := newOnline(t, nil, func(c *runs.Config) { c.FinalizeGrace = time.Hour })
	_, err := postStep(c.Reg, fleettest.KeyedResource("bye"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	endRun(t, c.Reg, fleettest.KeyedResource("bye"), "completed", "")
	assert.Equal(t, rfttest.StatusRunning, onlyRun(t, srv).Status, "still in its grace period")
	c.Shutdown()
	assert.Equal(t, rfttest.StatusCompleted, onlyRun(t, srv).Status)
}

package runs_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// These are handback.go's ledger seen from a close-out (closer.go's
// awaitRetries): the hand-backs a push marks hold the run's close-out
// until the data comes back or exporterhelper gives up on it.

// handBackStep2 posts run key's step 1 (loss 1) and has its step 2 (loss
// 0.5) handed back by a platform answering 503 to both in-place attempts;
// it returns the resource of the data in the collector's retry.
func handBackStep2(t *testing.T, srv *rfttest.Server, c *fleettest.Collector, key string) pcommon.Resource {
	t.Helper()
	_, err := postStep(c.Reg, fleettest.KeyedResource(key), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	srv.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	back, err := postStep(c.Reg, fleettest.KeyedResource(key), 2, map[string]float64{"loss": 0.5})
	require.Error(t, err)
	return back
}

// endWithStep2InRetry hands back run key's step 2 (handBackStep2), ends
// the run and waits until the close-out waits for that retry, whose
// resource it returns.
func endWithStep2InRetry(t *testing.T, srv *rfttest.Server, c *fleettest.Collector, key string) pcommon.Resource {
	t.Helper()
	back := handBackStep2(t, srv, c, key)
	_, tagged := back.Attributes().Get(runs.AttrHandBack)
	require.True(t, tagged, "the data handed back carries its token, for the close-out to wait for")
	endRun(t, c.Reg, fleettest.KeyedResource(key), "completed", "")
	require.Eventually(t, func() bool { return c.Logged("close-out waits for its data") == 1 }, 5*time.Second, time.Millisecond)
	return back
}

// During an outage a run's data waits in exporterhelper's back-off, where
// the close-out's drain cannot see it, while the run's end needs no request
// and is accepted at once: a close-out then would refuse the data when its
// retry comes, and it would be lost.
func TestACloseOutWaitsForTheRunsDataInTheCollectorsRetry(t *testing.T) {
	srv, c := newOnline(t, nil)
	back := endWithStep2InRetry(t, srv, c, "hb")

	_, err := postStep(c.Reg, back, 2, map[string]float64{"loss": 0.5})
	require.NoError(t, err, "the retry is accepted: the run is still open")
	run := waitStatus(t, srv, onlyRun(t, srv).ID, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}}, run.Metrics)
	assert.Zero(t, c.Tel.Rejected(reject.RunClosed))
	reqs := srv.Requests()
	assert.True(t, strings.HasSuffix(reqs[len(reqs)-1].Path, "/rft/finalize"), "finalize comes after the retried post")
}

// The batches a trainer sent during an outage wait in the sending queue
// behind the one being retried; once the retry lands, the consumer takes
// the next at once, and for that moment nothing of the run is in flight
// or in retry. A close-out looking then must not refuse the batches still
// to come (an end-to-end outage lost 7 metric records this way).
func TestACloseOutWaitsForTheRunsDataQueuedBehindItsRetry(t *testing.T) {
	srv, c := newOnline(t, nil)
	back := endWithStep2InRetry(t, srv, c, "queued")

	_, err := postStep(c.Reg, back, 2, map[string]float64{"loss": 0.5})
	require.NoError(t, err, "the retry")
	// Ten of the close-out's polls: the next batch's way out of the queue.
	time.Sleep(10 * 50 * time.Millisecond)
	_, err = postStep(c.Reg, fleettest.KeyedResource("queued"), 3, map[string]float64{"loss": 0.25})
	require.NoError(t, err, "the batch queued behind the retry")

	run := waitStatus(t, srv, onlyRun(t, srv).ID, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}, 3: {"loss": 0.25}}, run.Metrics)
	assert.Zero(t, c.Tel.Rejected(reject.RunClosed))
}

func TestACloseOutWaitsOnlyForItsOwnRunsRetries(t *testing.T) {
	srv, c := newOnline(t, nil)
	_, err := postStep(c.Reg, fleettest.KeyedResource("done"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	srv.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 502})
	back, err := postStep(c.Reg, fleettest.KeyedResource("other"), 1, map[string]float64{"loss": 1})
	require.Error(t, err)
	_, tagged := back.Attributes().Get(runs.AttrHandBack)
	require.True(t, tagged, "the other run's data waits in the retry")

	endRun(t, c.Reg, fleettest.KeyedResource("done"), "completed", "")
	waitStatus(t, srv, srv.Runs()[0].ID, rfttest.StatusCompleted)
}

func TestARetryThatNeverComesBackHoldsACloseOutNoLongerThanMaxElapsedTime(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano())
	srv, c := newOnline(t, []runs.Option{runs.WithClock(func() time.Time { return time.Unix(0, now.Load()) })},
		func(c *runs.Config) { c.RetryMaxElapsed = time.Minute })
	handBackStep2(t, srv, c, "drop")

	endRun(t, c.Reg, fleettest.KeyedResource("drop"), "completed", "")
	require.Eventually(t, func() bool { return c.Logged("close-out waits for its data") == 1 }, 5*time.Second, time.Millisecond)
	// exporterhelper gives up on the data after max_elapsed_time.
	now.Add(int64(time.Minute + time.Second))
	waitStatus(t, srv, onlyRun(t, srv).ID, rfttest.StatusCompleted)
}

func TestWithoutRetryOnFailureNothingIsHandedBackToWaitFor(t *testing.T) {
	srv, c := newOnline(t, nil, func(c *runs.Config) { c.RetryEnabled = false })
	back := handBackStep2(t, srv, c, "noretry")
	_, tagged := back.Attributes().Get(runs.AttrHandBack)
	assert.False(t, tagged, "no retry will bring it back")

	endRun(t, c.Reg, fleettest.KeyedResource("noretry"), "completed", "")
	waitStatus(t, srv, onlyRun(t, srv).ID, rfttest.StatusCompleted)
}

func TestCollectorShutdownDoesNotWaitForRetriesItStops(t *testing.T) {
	srv, c := newOnline(t, nil, func(c *runs.Config) { c.FinalizeGrace = time.Hour })
	handBackStep2(t, srv, c, "stop")
	endRun(t, c.Reg, fleettest.KeyedResource("stop"), "completed", "")

	c.Shutdown()
	assert.Equal(t, rfttest.StatusCompleted, onlyRun(t, srv).Status, "the close-out the trainer asked for is finished")
}

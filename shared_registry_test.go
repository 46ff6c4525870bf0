package primeexporter

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/consumer/consumererror"

	"github.com/primeintellect/primeexporter/internal/redistest"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// fleet is several collectors in front of one fake platform, sharing their
// run registry through one real Redis: the node collectors of a multi-node
// run, or a load-balanced gateway fleet.
type fleet struct {
	t        *testing.T
	platform *rfttest.Server
	redis    *redistest.Server
}

func newFleet(t *testing.T) *fleet {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	return &fleet{t: t, platform: srv, redis: redistest.New(t)}
}

// collector starts one more collector of the fleet; edit, when given,
// changes its config first.
func (f *fleet) collector(edit ...func(*Config)) *harness {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = f.platform.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.FinalizeTimeout = 5 * time.Second
	cfg.SharedRegistry.GetOrInsertDefault().Redis.Endpoint = f.redis.Addr()
	for _, e := range edit {
		e(cfg)
	}
	return newHarnessWithHost(f.t, f.platform, cfg, &statusHost{Host: componenttest.NewNopHost()})
}

// requests counts the platform's requests of one route.
func (f *fleet) requests(route string) int {
	n := 0
	for _, r := range routes(f.platform) {
		if r == route {
			n++
		}
	}
	return n
}

// paths counts the platform's requests whose path ends with suffix.
func (f *fleet) paths(suffix string) int {
	n := 0
	for _, r := range f.platform.Requests() {
		if strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

func (f *fleet) creates() int { return f.paths("/external-runs") }

func (h *harness) statuses() []componentstatus.Status {
	host := h.host.(*statusHost)
	host.mu.Lock()
	defer host.mu.Unlock()
	var out []componentstatus.Status
	for _, e := range host.events {
		out = append(out, e.Status())
	}
	return out
}

func TestTwoCollectorsOnOneRedisCreateOneRunForConcurrentFirstData(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	ctx := context.Background()
	// The create is slow, so that the other collector's first data comes
	// while it is on its way.
	f.platform.Inject(rfttest.RouteCreate, rfttest.Fault{Delay: 200 * time.Millisecond})
	concurrently(
		func() {
			assert.NoError(t, a.exp.pushMetrics(ctx, gauges(trainRun("multi-node"), map[int64]map[string]float64{1: {"loss": 1}})))
		},
		func() {
			assert.NoError(t, b.exp.pushMetrics(ctx, gauges(trainRun("multi-node"), map[int64]map[string]float64{2: {"loss": 2}})))
		},
	)
	assert.Equal(t, 1, f.creates(), "one create request for the fleet")
	run := a.onlyRun()
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 2}}, run.Metrics, "both collectors' data is in the one run")
	assert.Contains(t, a.logText()+b.logText(), "Joined run created by another collector")
}

func TestEpisodesOfOneStepThroughTwoCollectorsGetRangesThatNeverCollide(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	ctx := context.Background()
	require.NoError(t, a.exp.pushLogs(ctx, events(trainRun("ranges"), episode(10, "a"))))
	require.NoError(t, b.exp.pushLogs(ctx, events(trainRun("ranges"), episode(10, "b"))))
	require.NoError(t, a.exp.pushLogs(ctx, events(trainRun("ranges"), episode(10, "c"))))
	assert.Equal(t, []string{"step 10: q-a#0:0", "step 10: q-b#1:0", "step 10: q-c#2:0"}, objects(t, a.onlyRun()),
		"one counter for the fleet, from 0 for the run that it created")
}

func TestARunEndedThroughOneCollectorIsClosedOutOnceAndTheOtherRefusesItsLaterData(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	ctx := context.Background()
	require.NoError(t, a.exp.pushMetrics(ctx, gauges(trainRun("ends"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.NoError(t, b.exp.pushMetrics(ctx, gauges(trainRun("ends"), map[int64]map[string]float64{2: {"loss": 2}})))
	require.NoError(t, a.exp.pushLogs(ctx, events(trainRun("ends"), runEnd("completed", ""))))
	run := a.waitStatus(a.onlyRun().ID, rfttest.StatusCompleted)

	require.NoError(t, b.exp.pushMetrics(ctx, gauges(trainRun("ends"), map[int64]map[string]float64{3: {"loss": 3}})), "refused, not retried")
	assert.Equal(t, int64(1), b.count(metricRejected, map[string]string{"reason": "run_closed"}))
	assert.Contains(t, b.logText(), "Refused data for a run that is already closed out")
	a.shutdown()
	b.shutdown()
	assert.Equal(t, 1, f.requests("finalize"), "closed out once")
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 2}}, f.platform.Runs()[0].Metrics)
	assert.True(t, run.Finalized)
}

func TestARunEndedThroughBothCollectorsIsClosedOutOnce(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	ctx := context.Background()
	require.NoError(t, a.exp.pushMetrics(ctx, gauges(trainRun("both-end"), map[int64]map[string]float64{1: {"loss": 1}})))
	concurrently(
		func() { assert.NoError(t, a.exp.pushLogs(ctx, events(trainRun("both-end"), runEnd("completed", "")))) },
		func() {
			assert.NoError(t, b.exp.pushLogs(ctx, events(trainRun("both-end"), runEnd("failed", "rank 1 died"))))
		},
	)
	run := f.platform.Runs()[0]
	require.Eventually(t, func() bool { r, _ := f.platform.Run(run.ID); return r.Status != rfttest.StatusRunning }, 5*time.Second, 5*time.Millisecond)
	a.shutdown()
	b.shutdown()
	assert.Equal(t, 1, f.requests("finalize")+f.paths("/status"), "one close-out, with the fleet's first end")
}

func TestDataAnotherCollectorIsSendingWhenTheRunEndsLandsBeforeTheCloseOut(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	ctx := context.Background()
	require.NoError(t, a.exp.pushMetrics(ctx, gauges(trainRun("in-flight"), map[int64]map[string]float64{1: {"loss": 1}})))
	id := a.onlyRun().ID

	// b's last step is slow to land; the run's end reaches a meanwhile.
	f.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Delay: 500 * time.Millisecond})
	var wg sync.WaitGroup
	wg.Go(func() {
		assert.NoError(t, b.exp.pushMetrics(ctx, gauges(trainRun("in-flight"), map[int64]map[string]float64{2: {"loss": 2}})))
	})
	require.Eventually(t, func() bool { return f.platform.PendingFaults(rfttest.RouteMetrics) == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, a.exp.pushLogs(ctx, events(trainRun("in-flight"), runEnd("completed", ""))))
	wg.Wait()

	run := a.waitStatus(id, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 2}}, run.Metrics, "b's step landed before the close-out (the platform refuses metrics for a closed run)")
	assert.Zero(t, b.count(metricRejected, nil))
}

func TestAnEpisodeDeliveredThroughOneCollectorIsLeftOutWhenReplayedThroughTheOther(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	ctx := context.Background()
	batch := events(trainRun("moved"), episode(10, "a"), episode(10, "b"))
	require.NoError(t, a.exp.pushLogs(ctx, batch))
	// The gateway set changed: the same batch, replayed by a's queue or
	// re-sent by the trainer, now reaches b.
	require.NoError(t, b.exp.pushLogs(ctx, batch))
	assert.Equal(t, []string{"step 10: q-a#0:0 q-b#0:1"}, objects(t, a.onlyRun()))
	assert.Equal(t, int64(2), b.count(metricSkipped, map[string]string{"reason": "already_delivered"}))
}

func TestAnUploadPutThroughOneCollectorIsOnlyConfirmedThroughTheOther(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	ctx := context.Background()
	f.platform.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	err := a.exp.pushLogs(ctx, events(trainRun("resume"), episode(10, "a")))
	var partial consumererror.Logs
	require.True(t, errors.As(err, &partial))

	require.NoError(t, b.exp.pushLogs(ctx, partial.Data()))
	assert.Equal(t, []string{"step 10: q-a#0:0"}, objects(t, a.onlyRun()))
	assert.Equal(t, []string{"presign", "put", "confirm", "confirm", "confirm"}, routes(f.platform), "b sent the confirm alone")
}

// A Redis that speaks TLS only (a real redis-server on its tls-port, with a
// CA of the test's own): collectors with shared_registry.redis.tls share
// the run through it; one without tls is not let in, and loses nothing.
func TestAFleetSharesItsRegistryThroughARedisOverTLS(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	f := &fleet{t: t, platform: srv, redis: redistest.NewTLS(t)}
	withTLS := func(cfg *Config) {
		tc := configtls.NewDefaultClientConfig()
		tc.CAFile = f.redis.CAFile()
		cfg.SharedRegistry.Get().Redis.TLS = configoptional.Some(tc)
	}
	a, b := f.collector(withTLS), f.collector(withTLS)
	ctx := context.Background()
	require.NoError(t, a.exp.pushMetrics(ctx, gauges(trainRun("over-tls"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.NoError(t, b.exp.pushMetrics(ctx, gauges(trainRun("over-tls"), map[int64]map[string]float64{2: {"loss": 2}})))
	assert.Equal(t, 1, f.creates(), "the second collector found the run in the registry")
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 2}}, a.onlyRun().Metrics)

	plain := f.collector()
	err := plain.exp.pushMetrics(ctx, gauges(trainRun("over-tls"), map[int64]map[string]float64{3: {"loss": 3}}))
	require.Error(t, err, "a collector without tls cannot use the registry")
	assert.False(t, consumererror.IsPermanent(err), "its data waits in the retry")
	assert.Equal(t, 1, f.creates())
}

func TestWhileRedisIsDownAPushIsRetryableCreatesNothingAndTheStatusSaysSoThenItLandsOnce(t *testing.T) {
	f := newFleet(t)
	a := f.collector()
	ctx := context.Background()
	f.redis.Stop()

	err := a.exp.pushLogs(ctx, events(trainRun("outage"), episode(10, "a"), metricsEvent(10, map[string]float64{"loss": 1})))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "retryable, never permanent")
	var retry consumererror.Logs
	require.True(t, errors.As(err, &retry))
	assert.Equal(t, 2, retry.Data().LogRecordCount(), "nothing is dropped")
	assert.Empty(t, f.platform.Requests(), "nothing is created without the claim")
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, a.statuses())
	assert.Contains(t, a.logText(), "The shared run registry (Redis) does not answer")

	f.redis.Start()
	require.NoError(t, a.exp.pushLogs(ctx, retry.Data()))
	run := a.onlyRun()
	assert.Equal(t, 1, f.creates())
	assert.Equal(t, []string{"step 10: q-a#0:0"}, objects(t, run))
	assert.Equal(t, map[int64]map[string]float64{10: {"loss": 1}}, run.Metrics)
	assert.Equal(t, 1, run.MetricPosts, "the data landed once")
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusOK}, a.statuses())
}

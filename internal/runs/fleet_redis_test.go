package runs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform/platformtest"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
	"github.com/primeintellect/primeexporter/internal/upload"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestTwoRegistriesOnOneRedisCreateARunOnceForConcurrentFirstData(t *testing.T) {
	srv := redistest.New(t)
	api := &fleettest.CountingRuns{Delay: 100 * time.Millisecond}
	a, b := fleettest.NewNode(t, srv, api), fleettest.NewNode(t, srv, api)
	ctx := context.Background()

	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		reg := a.Reg
		if i%2 == 1 {
			reg = b.Reg
		}
		wg.Go(func() {
			l, err := reg.Acquire(ctx, fleettest.KeyedResource("multi-node"), reject.SignalMetrics, 1)
			if assert.NoError(t, err) {
				ids[i] = l.ID()
				l.Release()
			}
		})
	}
	wg.Wait()
	creates, _ := api.Counts()
	assert.Equal(t, 1, creates, "one create for the fleet")
	for _, id := range ids {
		assert.Equal(t, "run-1", id, "every lease, on either collector, carries the one run")
	}
	assert.Positive(t, a.Logs.FilterMessageSnippet("Joined run created by another collector").Len()+
		b.Logs.FilterMessageSnippet("Joined run created by another collector").Len(), "the collector that did not create says whose run it joined")
}

func TestAClaimLeftByACrashedCreatorExpiresAndTheNextCollectorCreates(t *testing.T) {
	srv := redistest.New(t)
	api := &fleettest.CountingRuns{}
	a := fleettest.NewNode(t, srv, api)
	ctx := context.Background()
	// A collector claimed the identity and was killed before its create
	// answered: its claim is all that is left of it.
	require.NoError(t, fleettest.RedisClient(t, srv).Set(ctx, "test:claim:create:key:crashed", "dead-collector", 300*time.Millisecond).Err())

	start := time.Now()
	l, err := a.Reg.Acquire(ctx, fleettest.KeyedResource("crashed"), reject.SignalMetrics, 1)
	require.NoError(t, err)
	l.Release()
	assert.Equal(t, "run-1", l.ID())
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "it waited for the claim rather than creating beside it")
	creates, _ := api.Counts()
	assert.Equal(t, 1, creates)
}

func TestRangesFromTwoRegistriesForOneRunAndStepNeverCollide(t *testing.T) {
	srv := redistest.New(t)
	api := &fleettest.CountingRuns{}
	a, b := fleettest.NewNode(t, srv, api), fleettest.NewNode(t, srv, api)
	ctx := context.Background()

	for _, tc := range []struct {
		name  string
		res   func() (string, bool)
		first int64
	}{
		{"created", func() (string, bool) { return "ranges", false }, 0},
		{"attached", func() (string, bool) { return "run-attached", true }, 1 << 20}, // above what writers outside the fleet count
	} {
		t.Run(tc.name, func(t *testing.T) {
			value, attach := tc.res()
			res := fleettest.KeyedResource(value)
			if attach {
				res.Attributes().PutStr(runs.AttrRunID, value)
			}
			la, err := a.Reg.Acquire(ctx, res, reject.SignalLogs, 1)
			require.NoError(t, err)
			defer la.Release()
			lb, err := b.Reg.Acquire(ctx, res, reject.SignalLogs, 1)
			require.NoError(t, err)
			defer lb.Release()

			const perCollector = 50
			var mu sync.Mutex
			ranges := map[int64]int{}
			var wg sync.WaitGroup
			for i := range 2 * perCollector {
				l := la
				if i%2 == 1 {
					l = lb
				}
				wg.Go(func() {
					obj := uploader(a.Objects, a.Store).Take(ctx, l, uint64(i+1), 10)
					mu.Lock()
					ranges[obj.Range]++
					mu.Unlock()
				})
			}
			wg.Wait()
			require.Len(t, ranges, 2*perCollector, "no range was handed out twice")
			for r := tc.first; r < tc.first+2*perCollector; r++ {
				assert.Equal(t, 1, ranges[r], "the ranges are the counter's, from %d without a gap", tc.first)
			}
			// An object a PUT (its confirm failed) keeps its range through b.
			down := &platformtest.Sink{Fail: map[string][]error{"confirm": {errors.New("platform down")}}}
			oa := upload.NewObjects(down, a.Store, logonce.New(zap.NewNop(), 0))
			started := oa.Take(ctx, la, 0xfeed, 10)
			require.Error(t, oa.Send(ctx, la, 0xfeed, started, []byte("body"), nil))
			assert.Equal(t, started.Range, uploader(b.Objects, b.Store).Take(ctx, lb, 0xfeed, 10).Range, "an object another collector started keeps its range")
		})
	}
}

func TestARunEndedThroughOneRegistryIsClosedOutOnceAndTheOtherRefusesItsLaterData(t *testing.T) {
	srv := redistest.New(t)
	api := &fleettest.CountingRuns{}
	a, b := fleettest.NewNode(t, srv, api), fleettest.NewNode(t, srv, api)
	ctx := context.Background()
	for _, c := range []*fleettest.Node{a, b} {
		l, err := c.Reg.Acquire(ctx, fleettest.KeyedResource("ends"), reject.SignalMetrics, 1)
		require.NoError(t, err)
		l.Release()
	}
	l, err := a.Reg.Acquire(ctx, fleettest.KeyedResource("ends"), reject.SignalLogs, 1)
	require.NoError(t, err)
	l.End(runs.End{Status: runs.StatusCompleted})
	l.Release()
	require.Eventually(t, func() bool { _, f := api.Counts(); return len(f) == 1 }, 5*time.Second, 5*time.Millisecond)

	_, err = b.Reg.Acquire(ctx, fleettest.KeyedResource("ends"), reject.SignalMetrics, 3)
	require.ErrorIs(t, err, runs.ErrSkipped)
	assert.Equal(t, 3, b.Tel.Rejected(reject.RunClosed))
	assert.Equal(t, 1, b.Logs.FilterMessageSnippet("Refused data for a run that is already closed out").Len())
	creates, finalized := api.Counts()
	assert.Equal(t, 1, creates)
	assert.Equal(t, []string{"run-1"}, finalized, "closed out once")
}

func TestARunEndedThroughBothRegistriesIsClosedOutOnce(t *testing.T) {
	srv := redistest.New(t)
	api := &fleettest.CountingRuns{}
	a, b := fleettest.NewNode(t, srv, api), fleettest.NewNode(t, srv, api)
	ctx := context.Background()
	l, err := a.Reg.Acquire(ctx, fleettest.KeyedResource("both-end"), reject.SignalMetrics, 1)
	require.NoError(t, err)
	l.Release()
	var wg sync.WaitGroup
	for _, end := range []struct {
		n   *fleettest.Node
		end runs.End
	}{{a, runs.End{Status: runs.StatusCompleted}}, {b, runs.End{Status: runs.StatusFailed, Reason: "rank 1 died"}}} {
		wg.Go(func() {
			l, err := end.n.Reg.Acquire(ctx, fleettest.KeyedResource("both-end"), reject.SignalLogs, 1)
			if assert.NoError(t, err) {
				l.End(end.end)
				l.Release()
			}
		})
	}
	wg.Wait()
	require.Eventually(t, func() bool { return api.CloseOuts() > 0 }, 5*time.Second, 5*time.Millisecond)
	a.Shutdown()
	b.Shutdown()
	assert.Equal(t, 1, api.CloseOuts(), "one close-out, with the fleet's first end")
}

func TestDataAnotherRegistryIsSendingWhenTheRunEndsLandsBeforeTheCloseOut(t *testing.T) {
	fake := fleettest.NewPlatform(t)
	srv := redistest.New(t)
	api := fleettest.Online(t, fake)
	a, b := fleettest.NewNode(t, srv, api), fleettest.NewNode(t, srv, api)
	_, err := postStep(a.Reg, fleettest.KeyedResource("in-flight"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	id := onlyRun(t, fake).ID

	// b's last step is slow to land, slower than the quiet a close-out
	// keeps after its own pushes (afterWaitQuiet); the run's end reaches a
	// meanwhile.
	fake.Inject(rfttest.RouteMetrics, rfttest.Fault{Delay: 1500 * time.Millisecond})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, err := postStep(b.Reg, fleettest.KeyedResource("in-flight"), 2, map[string]float64{"loss": 2})
		assert.NoError(t, err)
	})
	require.Eventually(t, func() bool { return fake.PendingFaults(rfttest.RouteMetrics) == 0 }, 5*time.Second, time.Millisecond)
	endRun(t, a.Reg, fleettest.KeyedResource("in-flight"), "completed", "")
	wg.Wait()

	run := waitStatus(t, fake, id, rfttest.StatusCompleted)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 2}}, run.Metrics, "b's step landed before the close-out (the platform refuses metrics for a closed run)")
	assert.Zero(t, b.Tel.Rejections())
}

// The gateway set changed: a batch a collector took, replayed by its
// queue or re-sent by the trainer, now reaches another.
func TestAnUploadThroughOneRegistryIsNotDoneAgainThroughTheOther(t *testing.T) {
	tests := []struct {
		name        string
		confirmDown bool // a's confirm fails on both in-place attempts
		wantLeftOut []uint64
		wantB       []string // b's requests
		wantConfirm int      // confirms in all
	}{
		{"episodes delivered through a are left out when replayed through b", false, []uint64{1, 2}, nil, 1},
		{"an upload put through a is only confirmed through b", true, nil, []string{"/rft/samples/confirm"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := fleettest.NewPlatform(t)
			srv := redistest.New(t)
			api := fleettest.Online(t, fake)
			a, b := fleettest.NewNode(t, srv, api), fleettest.NewNode(t, srv, api)
			if tt.confirmDown {
				fake.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
			}
			_, err := uploadEpisodes(a.Reg, uploader(a.Objects, a.Store), fleettest.KeyedResource("moved"), 10, 1, 2)
			require.Equal(t, tt.confirmDown, err != nil, "a's upload: %v", err)

			before := len(fake.Requests())
			leftOut, err := uploadEpisodes(b.Reg, uploader(b.Objects, b.Store), fleettest.KeyedResource("moved"), 10, 1, 2)
			require.NoError(t, err)
			assert.Equal(t, tt.wantLeftOut, leftOut)
			assert.Equal(t, tt.wantB, pathsSince(fake, before))
			assert.Equal(t, []string{"step 10: range 0: [1 2]"}, objectsOf(t, onlyRun(t, fake)), "one object, in the range a took")
			assert.Equal(t, map[rfttest.Route]int{rfttest.RouteCreate: 1, rfttest.RoutePresign: 1, rfttest.RoutePut: 1, rfttest.RouteConfirm: tt.wantConfirm},
				fake.RequestsByRoute())
		})
	}
}

func TestWhileRedisIsDownAcquireIsRetryableAndCreatesNothingThenTheRunIsCreatedOnce(t *testing.T) {
	srv := redistest.New(t)
	api := &fleettest.CountingRuns{}
	a := fleettest.NewNode(t, srv, api)
	ctx := context.Background()

	srv.Stop()
	_, err := a.Reg.Acquire(ctx, fleettest.KeyedResource("outage"), reject.SignalMetrics, 1)
	require.Error(t, err)
	assert.NotErrorIs(t, err, runs.ErrSkipped, "the data is not dropped")
	assert.False(t, consumererror.IsPermanent(err), "the data goes back to the retry")
	creates, _ := api.Counts()
	assert.Zero(t, creates, "nothing is created without the claim")
	require.Error(t, <-a.Health, "the outage is reported")
	assert.Equal(t, 1, a.Logs.FilterMessageSnippet("does not answer").Len())

	srv.Start()
	l, err := a.Reg.Acquire(ctx, fleettest.KeyedResource("outage"), reject.SignalMetrics, 1)
	require.NoError(t, err)
	l.Release()
	assert.NoError(t, <-a.Health, "and so is the recovery")
	creates, _ = api.Counts()
	assert.Equal(t, 1, creates)
}

func TestEverySharedKeyExpiresAsTheDocSays(t *testing.T) {
	srv := redistest.New(t)
	api := &fleettest.CountingRuns{}
	a := fleettest.NewNode(t, srv, api)
	rc := fleettest.RedisClient(t, srv)
	ctx := context.Background()
	l, err := a.Reg.Acquire(ctx, fleettest.KeyedResource("ttl"), reject.SignalLogs, 1)
	require.NoError(t, err)
	l.NextRange(ctx, 10)
	require.NoError(t, a.Store.SaveObject(ctx, l.Key(), 7, runstore.SavedObject{Step: 10}), "an upload's progress")
	require.NoError(t, a.Store.MarkDelivered(ctx, l.Key(), 7, []uint64{1, 2}))

	ttl := func(key string) time.Duration {
		d, err := rc.PTTL(ctx, key).Result()
		require.NoError(t, err)
		return d
	}
	assert.InDelta(t, (30 * 24 * time.Hour).Seconds(), ttl("test:run:key:ttl").Seconds(), 60, "the run's record and ranges")
	for _, key := range []string{"test:deliveredstep:7:key:ttl", "test:deliveredsteps:key:ttl", "test:deliveredheld:key:ttl"} {
		assert.InDelta(t, (7 * 24 * time.Hour).Seconds(), ttl(key).Seconds(), 60, key)
	}
	assert.InDelta(t, (7 * 24 * time.Hour).Seconds(), ttl("test:pending:key:ttl").Seconds(), 60)
	assert.InDelta(t, (10 * time.Minute).Seconds(), ttl("test:holds:key:ttl").Seconds(), 60, "a push's hold")
	l.Release()
	leases, retries, err := a.Store.Holds(ctx, "key\x00ttl")
	require.NoError(t, err)
	assert.Zero(t, leases+retries, "a released lease lets its hold go")
	assert.Equal(t, time.Duration(-2), ttl("test:claim:create:key:ttl"), "the create claim is let go after the create")
}

func TestARunIsIdleOnlyWhenNoCollectorOfTheFleetTookItsData(t *testing.T) {
	srv := redistest.New(t)
	api := &fleettest.CountingRuns{}
	idle := func(c *runs.Config) { c.IdleTimeout = 400 * time.Millisecond }
	a, b := fleettest.NewNode(t, srv, api, idle), fleettest.NewNode(t, srv, api, idle)
	ctx := context.Background()
	push := func(n *fleettest.Node) {
		l, err := n.Reg.Acquire(ctx, fleettest.KeyedResource("busy-elsewhere"), reject.SignalMetrics, 1)
		require.NoError(t, err)
		l.Release()
	}
	push(a)
	// The trainer's data now reaches b only: a's janitor must not call the
	// run crashed while b takes its data.
	for range 12 {
		push(b)
		time.Sleep(50 * time.Millisecond)
	}
	_, finalized := api.Counts()
	assert.Zero(t, a.Logs.FilterMessageSnippet("closing it out as crashed").Len()+b.Logs.FilterMessageSnippet("closing it out as crashed").Len(), "not idle while b takes data")
	assert.Empty(t, finalized)

	require.Eventually(t, func() bool {
		return a.Logs.FilterMessageSnippet("closing it out as crashed").Len()+b.Logs.FilterMessageSnippet("closing it out as crashed").Len() > 0
	}, 5*time.Second, 10*time.Millisecond, "idle once no collector takes data")
	require.Eventually(t, func() bool {
		l, err := b.Reg.Acquire(ctx, fleettest.KeyedResource("busy-elsewhere"), reject.SignalMetrics, 1)
		if err == nil {
			l.Release()
		}
		return errors.Is(err, runs.ErrSkipped)
	}, 5*time.Second, 10*time.Millisecond, "the fleet closed it out")
}

func TestAnIdleCollectorsHeartbeatReportsRedisDownAndBack(t *testing.T) {
	srv := redistest.New(t)
	a := fleettest.NewNode(t, srv, &fleettest.CountingRuns{})

	srv.Stop()
	select {
	case err := <-a.Health:
		require.Error(t, err, "with no data flowing, the heartbeat finds Redis down")
	case <-time.After(3 * heartbeatEveryForTests):
		t.Fatal("an idle collector never reported Redis down")
	}
	assert.Equal(t, 1, a.Logs.FilterMessageSnippet("does not answer").Len())

	srv.Start()
	select {
	case err := <-a.Health:
		assert.NoError(t, err, "and back")
	case <-time.After(3 * heartbeatEveryForTests):
		t.Fatal("an idle collector never reported Redis back")
	}
}

// heartbeatEveryForTests is fleet_redis.go's heartbeatEvery.
const heartbeatEveryForTests = 5 * time.Second

package runs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/redistest"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/rft"
)

// keyedResource is the resource of a trainer that creates a run by key.
func keyedResource(key string) pcommon.Resource {
	res := pcommon.NewResource()
	res.Attributes().PutStr(runs.AttrRunKey, key)
	return res
}

// countingRuns is a platform that counts its creates and finalizes; a
// create takes delay, so that concurrent first data overlaps it.
type countingRuns struct {
	delay time.Duration

	mu        sync.Mutex
	creates   int
	finalized []string
}

func (c *countingRuns) CreateRun(context.Context, rft.CreateRunRequest, platform.Origin) (rft.Run, error) {
	time.Sleep(c.delay)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.creates++
	return rft.Run{ID: fmt.Sprintf("run-%d", c.creates)}, nil
}

func (c *countingRuns) AttachRun(context.Context, string, platform.Origin) error { return nil }

func (c *countingRuns) PostMetrics(context.Context, string, map[string]float64) error { return nil }

func (c *countingRuns) Finalize(_ context.Context, id string, _ int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finalized = append(c.finalized, id)
	return nil
}

func (c *countingRuns) SetStatus(context.Context, string, rft.Status, string) error { return nil }

func (c *countingRuns) counts() (creates int, finalized []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creates, append([]string(nil), c.finalized...)
}

// tally is the registry's self-telemetry, counted.
type tally struct {
	mu      sync.Mutex
	rejects map[reject.Reason]int
}

func (t *tally) Reject(_ string, reason reject.Reason, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rejects == nil {
		t.rejects = map[reject.Reason]int{}
	}
	t.rejects[reason] += n
}
func (*tally) Skip(string, reject.Reason, int) {}
func (*tally) RunEvent(string)                 {}
func (*tally) Post(string)                     {}

func (t *tally) rejected(reason reject.Reason) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rejects[reason]
}

// node is one run registry on the shared Redis, without the rest of the
// exporter: one collector process of a fleet, seen at the lifecycle's API.
type node struct {
	reg    *runs.Registry
	store  *runstore.RedisStore
	logs   *observer.ObservedLogs
	tel    *tally
	health chan error
}

func newNode(t *testing.T, srv *redistest.Server, api *countingRuns, edits ...func(*runs.Config)) *node {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(core)
	c := &node{logs: logs, tel: &tally{}, health: make(chan error, 16)}
	health := func(err error) {
		select {
		case c.health <- err:
		default:
		}
	}
	c.store = runstore.NewRedisStore(runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "test", Logger: logger, Health: health})
	cfg := runs.Config{
		RequireTeam: true, TeamID: "team-1", FinalizeTimeout: 5 * time.Second,
		Defaults: runs.Defaults{Model: "Qwen/Qwen3-8B"},
		Where:    func(string) zap.Field { return zap.Skip() },
	}
	for _, edit := range edits {
		edit(&cfg)
	}
	c.reg = runs.New(cfg, runs.Deps{API: api, Store: c.store, Logger: logger, Warn: logonce.New(logger, 0), Tel: c.tel})
	c.reg.Restore(context.Background())
	c.reg.Start()
	t.Cleanup(func() { require.NoError(t, c.reg.Shutdown(context.Background())) })
	return c
}

// redisClient is a test's own view of the shared Redis.
func redisClient(t *testing.T, srv *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestTwoRegistriesOnOneRedisCreateARunOnceForConcurrentFirstData(t *testing.T) {
	srv := redistest.New(t)
	api := &countingRuns{delay: 100 * time.Millisecond}
	a, b := newNode(t, srv, api), newNode(t, srv, api)
	ctx := context.Background()

	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		reg := a.reg
		if i%2 == 1 {
			reg = b.reg
		}
		wg.Go(func() {
			l, err := reg.Acquire(ctx, keyedResource("multi-node"), reject.SignalMetrics, 1)
			if assert.NoError(t, err) {
				ids[i] = l.ID()
				l.Release()
			}
		})
	}
	wg.Wait()
	creates, _ := api.counts()
	assert.Equal(t, 1, creates, "one create for the fleet")
	for _, id := range ids {
		assert.Equal(t, "run-1", id, "every lease, on either collector, carries the one run")
	}
}

func TestAClaimLeftByACrashedCreatorExpiresAndTheNextCollectorCreates(t *testing.T) {
	srv := redistest.New(t)
	api := &countingRuns{}
	a := newNode(t, srv, api)
	ctx := context.Background()
	// A collector claimed the identity and was killed before its create
	// answered: its claim is all that is left of it.
	require.NoError(t, redisClient(t, srv).Set(ctx, "test:claim:create:key:crashed", "dead-collector", 300*time.Millisecond).Err())

	start := time.Now()
	l, err := a.reg.Acquire(ctx, keyedResource("crashed"), reject.SignalMetrics, 1)
	require.NoError(t, err)
	l.Release()
	assert.Equal(t, "run-1", l.ID())
	assert.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "it waited for the claim rather than creating beside it")
	creates, _ := api.counts()
	assert.Equal(t, 1, creates)
}

func TestRangesFromTwoRegistriesForOneRunAndStepNeverCollide(t *testing.T) {
	srv := redistest.New(t)
	api := &countingRuns{}
	a, b := newNode(t, srv, api), newNode(t, srv, api)
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
			res := keyedResource(value)
			if attach {
				res.Attributes().PutStr(runs.AttrRunID, value)
			}
			la, err := a.reg.Acquire(ctx, res, reject.SignalLogs, 1)
			require.NoError(t, err)
			defer la.Release()
			lb, err := b.reg.Acquire(ctx, res, reject.SignalLogs, 1)
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
					obj := l.Object(ctx, uint64(i+1), 10)
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
			obj := lb.Object(ctx, 1, 10)
			assert.Contains(t, ranges, obj.Range, "an object another collector started keeps its range")
		})
	}
}

func TestARunEndedThroughOneRegistryIsClosedOutOnceAndTheOtherRefusesItsLaterData(t *testing.T) {
	srv := redistest.New(t)
	api := &countingRuns{}
	a, b := newNode(t, srv, api), newNode(t, srv, api)
	ctx := context.Background()
	for _, c := range []*node{a, b} {
		l, err := c.reg.Acquire(ctx, keyedResource("ends"), reject.SignalMetrics, 1)
		require.NoError(t, err)
		l.Release()
	}
	l, err := a.reg.Acquire(ctx, keyedResource("ends"), reject.SignalLogs, 1)
	require.NoError(t, err)
	l.End(runs.End{Status: runs.StatusCompleted})
	l.Release()
	require.Eventually(t, func() bool { _, f := api.counts(); return len(f) == 1 }, 5*time.Second, 5*time.Millisecond)

	_, err = b.reg.Acquire(ctx, keyedResource("ends"), reject.SignalMetrics, 3)
	require.ErrorIs(t, err, runs.ErrSkipped)
	assert.Equal(t, 3, b.tel.rejected(reject.RunClosed))
	assert.Equal(t, 1, b.logs.FilterMessageSnippet("Refused data for a run that is already closed out").Len())
	creates, finalized := api.counts()
	assert.Equal(t, 1, creates)
	assert.Equal(t, []string{"run-1"}, finalized, "closed out once")
}

func TestWhileRedisIsDownAcquireIsRetryableAndCreatesNothingThenTheRunIsCreatedOnce(t *testing.T) {
	srv := redistest.New(t)
	api := &countingRuns{}
	a := newNode(t, srv, api)
	ctx := context.Background()

	srv.Stop()
	_, err := a.reg.Acquire(ctx, keyedResource("outage"), reject.SignalMetrics, 1)
	require.Error(t, err)
	assert.NotErrorIs(t, err, runs.ErrSkipped, "the data is not dropped")
	assert.False(t, consumererror.IsPermanent(err), "the data goes back to the retry")
	creates, _ := api.counts()
	assert.Zero(t, creates, "nothing is created without the claim")
	require.Error(t, <-a.health, "the outage is reported")
	assert.Equal(t, 1, a.logs.FilterMessageSnippet("does not answer").Len())

	srv.Start()
	l, err := a.reg.Acquire(ctx, keyedResource("outage"), reject.SignalMetrics, 1)
	require.NoError(t, err)
	l.Release()
	assert.NoError(t, <-a.health, "and so is the recovery")
	creates, _ = api.counts()
	assert.Equal(t, 1, creates)
}

func TestEverySharedKeyExpiresAsTheDocSays(t *testing.T) {
	srv := redistest.New(t)
	api := &countingRuns{}
	a := newNode(t, srv, api)
	rc := redisClient(t, srv)
	ctx := context.Background()
	l, err := a.reg.Acquire(ctx, keyedResource("ttl"), reject.SignalLogs, 1)
	require.NoError(t, err)
	l.Object(ctx, 7, 10)
	l.MarkDelivered(ctx, 7, []uint64{1, 2})

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
	leases, retries, err := a.store.Holds(ctx, "key\x00ttl")
	require.NoError(t, err)
	assert.Zero(t, leases+retries, "a released lease lets its hold go")
	assert.Equal(t, time.Duration(-2), ttl("test:claim:create:key:ttl"), "the create claim is let go after the create")
}

func TestARunIsIdleOnlyWhenNoCollectorOfTheFleetTookItsData(t *testing.T) {
	srv := redistest.New(t)
	api := &countingRuns{}
	idle := func(c *runs.Config) { c.IdleTimeout = 400 * time.Millisecond }
	a, b := newNode(t, srv, api, idle), newNode(t, srv, api, idle)
	ctx := context.Background()
	push := func(n *node) {
		l, err := n.reg.Acquire(ctx, keyedResource("busy-elsewhere"), reject.SignalMetrics, 1)
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
	_, finalized := api.counts()
	assert.Zero(t, a.logs.FilterMessageSnippet("closing it out as crashed").Len()+b.logs.FilterMessageSnippet("closing it out as crashed").Len(), "not idle while b takes data")
	assert.Empty(t, finalized)

	require.Eventually(t, func() bool {
		return a.logs.FilterMessageSnippet("closing it out as crashed").Len()+b.logs.FilterMessageSnippet("closing it out as crashed").Len() > 0
	}, 5*time.Second, 10*time.Millisecond, "idle once no collector takes data")
	require.Eventually(t, func() bool {
		l, err := b.reg.Acquire(ctx, keyedResource("busy-elsewhere"), reject.SignalMetrics, 1)
		if err == nil {
			l.Release()
		}
		return errors.Is(err, runs.ErrSkipped)
	}, 5*time.Second, 10*time.Millisecond, "the fleet closed it out")
}

func TestAnIdleCollectorsHeartbeatReportsRedisDownAndBack(t *testing.T) {
	srv := redistest.New(t)
	a := newNode(t, srv, &countingRuns{})

	srv.Stop()
	select {
	case err := <-a.health:
		require.Error(t, err, "with no data flowing, the heartbeat finds Redis down")
	case <-time.After(3 * heartbeatEveryForTests):
		t.Fatal("an idle collector never reported Redis down")
	}
	assert.Equal(t, 1, a.logs.FilterMessageSnippet("does not answer").Len())

	srv.Start()
	select {
	case err := <-a.health:
		assert.NoError(t, err, "and back")
	case <-time.After(3 * heartbeatEveryForTests):
		t.Fatal("an idle collector never reported Redis back")
	}
}

// heartbeatEveryForTests is fleet_redis.go's heartbeatEvery.
const heartbeatEveryForTests = 5 * time.Second

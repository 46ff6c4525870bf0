package tenants

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
)

// bucketsOn is a gateway's buckets on srv, its fallback timed by now (nil:
// the wall clock), with its log lines.
func bucketsOn(t *testing.T, srv *redistest.Server, now func() time.Time) (*redisBuckets, *observer.ObservedLogs) {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	core, logs := observer.New(zapcore.InfoLevel)
	rb := newRedisBuckets(runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "test"}, zap.New(core), now)
	t.Cleanup(func() { _ = rb.close() })
	return rb, logs
}

func TestGatewaysOnOneRedisShareEachTenantsBucketUnderADigestOfItsUserID(t *testing.T) {
	srv := redistest.New(t)
	a, _ := bucketsOn(t, srv, nil)
	b, _ := bucketsOn(t, srv, nil)
	ctx := context.Background()
	slow := Limit{RecordsPerSecond: 1, BurstSeconds: 10} // 10 records, then one a second
	require.False(t, a.take(ctx, "alice", slow, records(10)).refused, "gateway a empties alice's bucket")
	require.False(t, b.take(ctx, "alice", slow, records(1)).refused, "0 is not debt, at gateway b too")
	v := a.take(ctx, "alice", slow, records(1))
	require.True(t, v.refused, "gateway b's request put alice in debt for gateway a as well")
	assert.Equal(t, unitRecords, v.unit)
	assert.True(t, v.wait > 800*time.Millisecond && v.wait <= time.Second, "one record of debt at one a second: %s", v.wait)
	assert.False(t, b.take(ctx, "bob", slow, records(10)).refused, "bob's bucket is his own")

	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer raw.Close()
	keys, err := raw.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"test:limit:records:" + digest("alice"), "test:limit:records:" + digest("bob")}, keys,
		"a bucket per tenant and limited unit, named by a digest")
	ttl, err := raw.PTTL(ctx, "test:limit:records:"+digest("alice")).Result()
	require.NoError(t, err)
	assert.True(t, ttl > 10*time.Second && ttl <= 12*time.Second, "it expires when it would be full again (11 s) and a second more: %s", ttl)
}

func TestTheRedisBucketKeepsTheBucketRule(t *testing.T) {
	srv := redistest.New(t)
	rb, _ := bucketsOn(t, srv, nil)
	ctx := context.Background()
	both := Limit{BytesPerSecond: 1000, RecordsPerSecond: 1000, BurstSeconds: 1}
	require.False(t, rb.take(ctx, "alice", both, cost{unitBytes: 5000, unitRecords: 1}).refused, "a request over the burst passes on a full bucket")
	v := rb.take(ctx, "alice", both, cost{unitBytes: 1, unitRecords: 1})
	require.True(t, v.refused)
	assert.Equal(t, unitBytes, v.unit, "the bytes are in debt, the records are not")
	assert.True(t, v.wait > 3800*time.Millisecond && v.wait <= 4*time.Second, "4,000 bytes of debt at 1,000 a second: %s", v.wait)
}

func TestWhileRedisDoesNotAnswerEachGatewayKeepsItsTenantsLimitAloneAndSaysSoOnce(t *testing.T) {
	srv := redistest.New(t)
	c := newClock()
	rb, logs := bucketsOn(t, srv, c.Now)
	ctx := context.Background()
	srv.Stop()
	require.False(t, rb.take(ctx, "alice", tenRecords, records(20)).refused, "admitted: availability before precision")
	require.False(t, rb.take(ctx, "alice", tenRecords, records(1)).refused)
	assert.True(t, rb.take(ctx, "alice", tenRecords, records(1)).refused, "the limit holds at the full rate, in this gateway")
	assert.Equal(t, 1, logs.FilterMessageSnippet("Redis does not answer").Len(), "said once")

	srv.Start() // empty: every bucket full
	assert.True(t, rb.take(ctx, "alice", tenRecords, records(1)).refused, "Redis is asked again only after a while")
	c.advance(redisRetry)
	assert.False(t, rb.take(ctx, "alice", tenRecords, records(1)).refused, "Redis's bucket again")
	assert.Equal(t, 1, logs.FilterMessageSnippet("Redis answers again").Len())
	assert.Equal(t, 1, logs.FilterMessageSnippet("Redis does not answer").Len())
}

func TestTwoGatewaysOnOneRedisAdmitATenantsLimitBetweenThem(t *testing.T) {
	srv := redistest.New(t)
	platform := newPlatform(t)
	shared := func(c *Config) { oneRecordASecond(c); c.Limits.BurstSeconds = 3 }
	var gws []gateway
	for range 2 {
		gws = append(gws, startOn(t, platform, &runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "test"}, shared))
	}
	admitted := 0
	for i := range 6 {
		if gws[i%2].Admit(sentWith(aliceKey), "logs", 10, 1) == nil {
			admitted++
		}
	}
	assert.Equal(t, 4, admitted, "a bucket of 3, and a 4th while it is at 0, between both gateways")
	total := gws[0].throttled.of("logs", "alice") + gws[1].throttled.of("logs", "alice")
	assert.Equal(t, 2, total, "each gateway counts what it refused")
}

// How a tenant's limit holds across three gateways, measured: a tenant
// floods with requests of 10 records, each of its runs sending to one
// gateway (the agents' load_balancing routes a run by its key), as fast as
// the gateway takes them, against the limit split three ways (each gateway
// keeps a third, Mimir's way) or shared on one Redis. The admitted rate is
// read after a warm-up that empties the burst, over
// PRIME_LIMITS_MEASURE_SECONDS (default 2) seconds; docs/multitenant.md,
// Limits, has the figures.
func TestOneRunOfATenantGetsItsWholeLimitOnASharedBucketAndAThirdOfItOnASplitOne(t *testing.T) {
	span := 2 * time.Second
	if s := os.Getenv("PRIME_LIMITS_MEASURE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		span = time.Duration(n) * time.Second
	}
	const gateways = 3
	limit := Limit{RecordsPerSecond: 1000, BurstSeconds: 0.5}
	split := limit
	split.RecordsPerSecond /= gateways
	srv := redistest.New(t)
	rates := map[string]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, kind := range []string{"split", "shared"} {
		for _, runs := range []int{1, gateways} {
			gws := make([]buckets, gateways)
			l := limit
			for i := range gws {
				if kind == "split" {
					gws[i], l = newLocalBuckets(time.Now), split
				} else {
					gws[i], _ = bucketsOn(t, srv, nil)
				}
			}
			name := fmt.Sprintf("%s, %d run(s)", kind, runs)
			wg.Go(func() { // the four at once, each its own tenant
				rate := admittedRate(gws, name, l, runs, 500*time.Millisecond, span)
				mu.Lock()
				rates[name] = rate
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for _, name := range slices.Sorted(maps.Keys(rates)) {
		t.Logf("%-16s admitted %6.0f records/s of a limit of %.0f: %.2f×", name, rates[name], limit.RecordsPerSecond, rates[name]/limit.RecordsPerSecond)
	}
	assert.Less(t, rates["split, 1 run(s)"], 0.4*limit.RecordsPerSecond, "split: a run on one gateway gets that gateway's third")
	assert.Greater(t, rates["shared, 1 run(s)"], 0.7*limit.RecordsPerSecond, "shared: a run on one gateway gets the tenant's whole limit")
	for _, name := range []string{"split, 3 run(s)", "shared, 3 run(s)"} {
		assert.Less(t, rates[name], 1.1*limit.RecordsPerSecond, "%s: never more than the limit", name)
	}
}

// admittedRate floods gateways with user's requests of 10 records, run r
// sending to gateway r, for warm and then span, and returns the records
// per second admitted during span.
func admittedRate(gws []buckets, user string, l Limit, runs int, warm, span time.Duration) float64 {
	start := time.Now()
	from, until := start.Add(warm), start.Add(warm+span)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for r := range runs {
		wg.Go(func() {
			for {
				now := time.Now()
				if now.After(until) {
					return
				}
				v := gws[r].take(context.Background(), user, l, records(10))
				if !v.refused && now.After(from) {
					admitted.Add(10)
				}
				if v.refused {
					time.Sleep(min(v.wait, 2*time.Millisecond))
				}
			}
		})
	}
	wg.Wait()
	return float64(admitted.Load()) / span.Seconds()
}

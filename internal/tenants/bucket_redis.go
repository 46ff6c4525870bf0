package tenants

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/runstore"
)

// takeScript is the bucket rule of bucket.go on Redis, for both of a
// tenant's buckets at once, so that gateways sharing the Redis share one
// bucket per tenant and unit. KEYS are the bytes and records buckets,
// ARGV per unit its rate per second, full bucket and the request's cost;
// a rate of 0 is no limit (that bucket is left alone). Redis's clock
// (TIME, in ms) times the refill, so that the gateways' clocks need not
// agree. A bucket's hash (tokens, at) expires when it would be full again:
// a missing bucket is a full one. It returns {1} when admitted, else {0,
// the unit in debt longest (0 bytes, 1 records), its wait in ms}.
const takeScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local tokens, which, wait = {}, -1, 0
for i = 1, 2 do
  local rate, full = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i-1])
  if rate > 0 then
    local b = redis.call('HMGET', KEYS[i], 'tokens', 'at')
    local tk = full
    if b[1] then
      tk = math.min(full, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate / 1000)
    end
    tokens[i] = tk
    if tk < 0 then
      local w = math.ceil(-tk * 1000 / rate)
      if w > wait then which, wait = i - 1, w end
    end
  end
end
if which >= 0 then return {0, which, wait} end
for i = 1, 2 do
  if tokens[i] then
    local rate, full = tonumber(ARGV[3*i-2]), tonumber(ARGV[3*i-1])
    local tk = tokens[i] - tonumber(ARGV[3*i])
    redis.call('HSET', KEYS[i], 'tokens', string.format('%.6f', tk), 'at', string.format('%.3f', now))
    redis.call('PEXPIRE', KEYS[i], math.ceil((full - tk) * 1000 / rate) + 1000)
  end
end
return {1}
`

// redisTimeout bounds a take on Redis: the request waits on it at the
// receiver.
const redisTimeout = 250 * time.Millisecond

// redisRetry is how long, once Redis did not answer, the gateway keeps
// its tenants' buckets alone before it asks Redis again: a Redis that
// hangs costs one request in this long a timeout, not every request.
const redisRetry = 5 * time.Second

// redisBuckets keep each tenant's buckets on the Redis the gateways share,
// under <prefix>:limit:<unit>:<digest of the user id>. While Redis does not
// answer, each gateway keeps its tenants' buckets itself at the full rate
// (local): availability before precision, so a fleet of N admits up to N
// times a tenant's limit meanwhile. Both changes are logged once.
type redisBuckets struct {
	c      *redis.Client
	prefix string
	take1  *redis.Script
	local  *localBuckets
	logger *zap.Logger
	now    func() time.Time
	// down is set while Redis does not answer; retryAt (unix ns) is when
	// it is asked again.
	down    atomic.Bool
	retryAt atomic.Int64
}

func newRedisBuckets(opts runstore.RedisOptions, logger *zap.Logger, now func() time.Time) *redisBuckets {
	return &redisBuckets{
		c: runstore.NewRedisClient(opts, redisTimeout), prefix: opts.Prefix, take1: redis.NewScript(takeScript),
		local: newLocalBuckets(now), logger: logger, now: now,
	}
}

func (rb *redisBuckets) key(u unit, user string) string {
	k := "limit:" + u.String() + ":" + digest(user)
	if rb.prefix == "" {
		return k
	}
	return rb.prefix + ":" + k
}

func (rb *redisBuckets) take(ctx context.Context, user string, l Limit, c cost) verdict {
	if rb.down.Load() && rb.now().UnixNano() < rb.retryAt.Load() {
		return rb.local.take(ctx, user, l, c)
	}
	perSecond, full := l.rates()
	args := make([]any, 0, 3*units)
	for u := range units {
		args = append(args, perSecond[u], full[u], c[u])
	}
	res, err := rb.take1.Run(ctx, rb.c, []string{rb.key(unitBytes, user), rb.key(unitRecords, user)}, args...).Int64Slice()
	if err == nil && len(res) != 1 && len(res) != 3 {
		err = redis.Nil
	}
	if err != nil {
		if ctx.Err() == nil {
			rb.failed(err)
		}
		return rb.local.take(ctx, user, l, c)
	}
	if rb.down.CompareAndSwap(true, false) {
		rb.logger.Info("Redis answers again: the tenants' ingest limits are shared by the gateways again")
	}
	if res[0] == 1 {
		return verdict{}
	}
	return verdict{refused: true, unit: unit(res[1]), wait: time.Duration(res[2]) * time.Millisecond}
}

// failed turns to the local buckets until redisRetry has passed.
func (rb *redisBuckets) failed(err error) {
	rb.retryAt.Store(rb.now().Add(redisRetry).UnixNano())
	if rb.down.CompareAndSwap(false, true) {
		rb.logger.Error("Redis does not answer: each gateway keeps its tenants' ingest limits alone, at the full rate, until it does",
			zap.Error(err))
	}
}

func (rb *redisBuckets) close() error { return rb.c.Close() }

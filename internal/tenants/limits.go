package tenants

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/collector/client"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/telemetry"
	"github.com/primeintellect/primeexporter/internal/tenant"
)

// limits are a gateway's ingest limits (tenants::limits): each tenant's
// limit (the defaults or its override), the buckets that keep them, and
// the loop that reloads the overrides file, which limits starts and stops
// (none without a file).
type limits struct {
	overrides *overrides
	buckets   buckets
	// labels name the throttled tenants in the counter, bounded as the
	// rejections' are; count is the counter (nil: none).
	labels *telemetry.Labels
	count  func(signal, tenant string, records int)
	warn   *logonce.Logger
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

// startLimits reads c's overrides and starts the reload loop; count is
// Settings.Throttled. With shared, the buckets are on that Redis, shared
// by the gateways that use it; without, in this process.
func startLimits(c Config, shared *runstore.RedisOptions, count func(signal, tenant string, records int), logger *zap.Logger) (*limits, error) {
	cfg := c.Limits
	o := newOverrides(cfg.OverridesFile, cfg.Limit, logger)
	if err := o.load(); err != nil {
		return nil, err
	}
	var b buckets = newLocalBuckets(time.Now)
	if shared != nil {
		b = newRedisBuckets(*shared, logger, time.Now)
	}
	lm := &limits{
		overrides: o, buckets: b, labels: telemetry.NewLabels(max(1, c.NamedInMetrics)), count: count,
		warn: logonce.New(logger, 0), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if cfg.OverridesFile == "" {
		close(lm.done)
	} else {
		go lm.run(cfg.ReloadInterval)
	}
	logger.Info("Each tenant's ingest rate is limited: over it, its senders are told to retry later (OTLP/HTTP 429, gRPC RESOURCE_EXHAUSTED)",
		zap.Float64("bytes_per_second", cfg.BytesPerSecond), zap.Float64("records_per_second", cfg.RecordsPerSecond),
		zap.Float64("burst_seconds", cfg.BurstSeconds), zap.String("overrides_file", cfg.OverridesFile), zap.Bool("shared_through_redis", shared != nil))
	return lm, nil
}

// run reloads the overrides every interval, until shutdown.
func (lm *limits) run(every time.Duration) {
	defer close(lm.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-lm.stop:
			return
		case <-t.C:
			lm.overrides.reload()
		}
	}
}

// shutdown stops the loop and lets go of the buckets; a second call does
// nothing more.
func (lm *limits) shutdown() error {
	var err error
	lm.closed.Do(func() {
		close(lm.stop)
		<-lm.done
		err = lm.buckets.close()
	})
	return err
}

// Admit asks whether the tenant whose key ctx's request carries may send
// a request of bytes (its OTLP protobuf size) and records (log records or
// metric data points) of signal now. It is asked at the receiver, before
// the sending queue, so that a request it refuses was never accepted: the
// sender hears OTLP/HTTP 429 with Retry-After, or gRPC RESOURCE_EXHAUSTED
// with RetryInfo, and sends it again then. The tenant is the key's user
// from the verifier For uses, so a key it has not cached within key_ttl is
// asked of whoami here, as prime_auth just did. A request of no tenant it
// knows (no key, a refused key, whoami not answering) is admitted here and
// left to For, which refuses it or makes it wait.
func (g *Gateway[B]) Admit(ctx context.Context, signal string, bytes, records int) error {
	key, err := tenant.ParseBearer(client.FromContext(ctx).Metadata.Get(tenant.Header))
	if err != nil {
		return nil
	}
	user, err := g.verifier.Verify(ctx, key)
	if err != nil {
		return nil
	}
	lm := g.limits
	l := lm.overrides.of(user)
	v := lm.buckets.take(ctx, user, l, cost{unitBytes: float64(bytes), unitRecords: float64(records)})
	if !v.refused {
		return nil
	}
	if lm.count != nil {
		lm.count(signal, lm.labels.Of(user, records), records)
	}
	err = throttled(l, v)
	lm.warn.Info("throttled\x00"+user, "A tenant is over its ingest limit: its senders are told to retry later", zap.String("tenant", user), zap.String("signal", signal), zap.Error(err))
	return err
}

// throttled is the refusal of a request over l: a gRPC status the OTLP
// receiver turns into 429 with Retry-After over HTTP, RESOURCE_EXHAUSTED
// with RetryInfo over gRPC. The delay is the wait rounded up to whole
// seconds, as Retry-After has them (the receiver truncates), at least one.
func throttled(l Limit, v verdict) error {
	delay := max(time.Second, (v.wait + time.Second - 1).Truncate(time.Second))
	perSecond, full := l.rates()
	msg := fmt.Sprintf("over this tenant's ingest limit of %s %s/s (a burst of %s; tenants::limits): retry in %s",
		decimal(perSecond[v.unit]), v.unit, decimal(full[v.unit]), delay)
	st, err := status.New(codes.ResourceExhausted, msg).WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		return status.Error(codes.ResourceExhausted, msg)
	}
	return st.Err()
}

func decimal(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

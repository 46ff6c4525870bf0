package tenants

import (
	"context"
	"math"
	"sync"
	"time"
)

// unit is what a bucket counts.
type unit int

const (
	unitBytes unit = iota
	unitRecords
	units
)

// String is the unit as the limit's key names it.
func (u unit) String() string {
	if u == unitBytes {
		return "bytes"
	}
	return "records"
}

// cost is what a request takes from its tenant's buckets, by unit.
type cost [units]float64

// verdict is a bucket store's answer: a refusal names the unit whose
// bucket is in debt longest and how long until it is not.
type verdict struct {
	refused bool
	unit    unit
	wait    time.Duration
}

// buckets keep each tenant's token buckets, one per unit. take admits a
// request while none of the tenant's buckets is in debt and then takes
// its cost; close lets go of what they live on. Where they live is the
// implementation's: in this process (localBuckets) or on Redis, shared by
// the gateways (redisBuckets).
type buckets interface {
	take(ctx context.Context, user string, l Limit, c cost) verdict
	close() error
}

// The bucket rule, in one place for both implementations (the Redis
// script does the same arithmetic):
//
//   - a bucket holds rate × burst_seconds tokens when full, and a new one
//     starts full;
//   - it refills at rate tokens a second, up to full;
//   - a request is admitted while the bucket is not in debt (tokens ≥ 0),
//     and then takes its whole cost, which may put it in debt: so a
//     request bigger than the burst still passes on a full bucket, and
//     the debt holds the tenant back until it is repaid at the rate;
//   - in debt, the wait is the time until tokens are ≥ 0 again.
//
// Over any span the admitted cost is at most rate × span + burst plus one
// request, and the retry delay says exactly when the next one passes.

// bucket is one unit's bucket of one tenant.
type bucket struct {
	tokens float64
	at     time.Time
}

// refill brings b to now at rate, up to full, and returns its tokens.
func (b *bucket) refill(now time.Time, rate, full float64) float64 {
	if b.at.IsZero() {
		b.tokens = full
	} else if d := now.Sub(b.at); d > 0 {
		b.tokens = math.Min(full, b.tokens+rate*d.Seconds())
	}
	b.at = now
	return b.tokens
}

// debtWait is how long a bucket with tokens < 0 takes to reach 0 at rate.
func debtWait(tokens, rate float64) time.Duration {
	return time.Duration(math.Ceil(-tokens / rate * float64(time.Second)))
}

// rates are l's per unit: per second, and a full bucket's tokens.
func (l Limit) rates() (perSecond, full [units]float64) {
	perSecond = [units]float64{unitBytes: l.BytesPerSecond, unitRecords: l.RecordsPerSecond}
	for u := range units {
		full[u] = perSecond[u] * l.BurstSeconds
	}
	return perSecond, full
}

// pruneEvery is how often localBuckets forget the tenants whose buckets
// are full again, which are as good as none: what they hold is bounded by
// the tenants that sent within about that long, with no goroutine of
// their own.
const pruneEvery = time.Minute

// localBuckets keep the buckets in this process: exact for the traffic
// this gateway sees, blind to the others'.
type localBuckets struct {
	now func() time.Time

	mu     sync.Mutex
	byUser map[string]*[units]bucket
	// limits are the limits each user's buckets were last taken under,
	// so that pruneLocked knows when they are full.
	limits map[string]Limit
	pruned time.Time
}

func newLocalBuckets(now func() time.Time) *localBuckets {
	return &localBuckets{now: now, byUser: map[string]*[units]bucket{}, limits: map[string]Limit{}, pruned: now()}
}

func (lb *localBuckets) take(_ context.Context, user string, l Limit, c cost) verdict {
	perSecond, full := l.rates()
	lb.mu.Lock()
	defer lb.mu.Unlock()
	now := lb.now()
	if now.Sub(lb.pruned) >= pruneEvery {
		lb.pruneLocked(now)
	}
	bs, ok := lb.byUser[user]
	if !ok {
		bs = &[units]bucket{}
		lb.byUser[user] = bs
	}
	lb.limits[user] = l
	var v verdict
	for u := range units {
		if perSecond[u] <= 0 {
			continue // no limit in this unit
		}
		if tokens := bs[u].refill(now, perSecond[u], full[u]); tokens < 0 {
			if w := debtWait(tokens, perSecond[u]); w > v.wait {
				v = verdict{refused: true, unit: u, wait: w}
			}
		}
	}
	if v.refused {
		return v
	}
	for u := range units {
		if perSecond[u] > 0 {
			bs[u].tokens -= c[u]
		}
	}
	return v
}

func (lb *localBuckets) close() error { return nil }

// pruneLocked forgets the tenants whose buckets are all full at now.
func (lb *localBuckets) pruneLocked(now time.Time) {
	lb.pruned = now
	for user, bs := range lb.byUser {
		perSecond, full := lb.limits[user].rates()
		refilled := true
		for u := range units {
			if perSecond[u] > 0 && bs[u].refill(now, perSecond[u], full[u]) < full[u] {
				refilled = false
			}
		}
		if refilled {
			delete(lb.byUser, user)
			delete(lb.limits, user)
		}
	}
}

package tenants

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// unlimited is a gateway's limits with no rate: every request passes.
var unlimited = LimitsConfig{Limit: Limit{BurstSeconds: 1}, ReloadInterval: time.Minute}

// clock is a test's time, moved by hand; the tests read and move it from
// one goroutine.
type clock struct{ t time.Time }

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { return c.t }

func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// tenRecords is 10 records a second with a burst of 2 s (20 records), and
// no bytes limit.
var tenRecords = Limit{RecordsPerSecond: 10, BurstSeconds: 2}

func records(n float64) cost { return cost{unitRecords: n} }

func TestRequestsPassWhileTheBucketHoldsTokensAndTheFirstInDebtWaitsForItsRepayment(t *testing.T) {
	lb := newLocalBuckets(newClock().Now)
	ctx := context.Background()
	assert.False(t, lb.take(ctx, "alice", tenRecords, records(5)).refused, "15 left")
	assert.False(t, lb.take(ctx, "alice", tenRecords, records(15)).refused, "0 left: not in debt")
	assert.False(t, lb.take(ctx, "alice", tenRecords, records(1)).refused, "0 is not debt: it passes, and leaves -1")
	v := lb.take(ctx, "alice", tenRecords, records(1))
	assert.Equal(t, verdict{refused: true, unit: unitRecords, wait: 100 * time.Millisecond}, v, "one record of debt at 10 a second")
	assert.False(t, lb.take(ctx, "bob", tenRecords, records(20)).refused, "another tenant has a bucket of its own")
}

func TestASingleRequestBiggerThanTheBurstPassesOnAFullBucketAndItsDebtHoldsTheTenantBack(t *testing.T) {
	c := newClock()
	lb := newLocalBuckets(c.Now)
	ctx := context.Background()
	assert.False(t, lb.take(ctx, "alice", tenRecords, records(1000)).refused, "a full bucket takes any one request")
	v := lb.take(ctx, "alice", tenRecords, records(1))
	assert.Equal(t, verdict{refused: true, unit: unitRecords, wait: 98 * time.Second}, v, "980 records of debt at 10 a second")
	c.advance(97 * time.Second)
	assert.True(t, lb.take(ctx, "alice", tenRecords, records(1)).refused)
	c.advance(time.Second)
	assert.False(t, lb.take(ctx, "alice", tenRecords, records(1)).refused, "repaid")
}

func TestTheBucketRefillsAtItsRateAndNeverPastFull(t *testing.T) {
	c := newClock()
	lb := newLocalBuckets(c.Now)
	ctx := context.Background()
	require.False(t, lb.take(ctx, "alice", tenRecords, records(25)).refused) // -5
	c.advance(499 * time.Millisecond)
	assert.True(t, lb.take(ctx, "alice", tenRecords, records(1)).refused, "4.99 refilled: still in debt")
	c.advance(time.Millisecond)
	assert.False(t, lb.take(ctx, "alice", tenRecords, records(1)).refused, "5 refilled in 0.5 s: out of debt") // -1
	c.advance(time.Hour)
	assert.False(t, lb.take(ctx, "alice", tenRecords, records(20)).refused, "an hour refills it to full")
	assert.False(t, lb.take(ctx, "alice", tenRecords, records(1)).refused, "0 left")
	assert.True(t, lb.take(ctx, "alice", tenRecords, records(1)).refused, "full is 20, however long it waited")
}

func TestTheUnitInDebtLongestNamesTheRefusalAndARateOfZeroIsNoLimit(t *testing.T) {
	lb := newLocalBuckets(newClock().Now)
	ctx := context.Background()
	both := Limit{BytesPerSecond: 100, RecordsPerSecond: 10, BurstSeconds: 1}
	require.False(t, lb.take(ctx, "alice", both, cost{unitBytes: 400, unitRecords: 15}).refused)
	v := lb.take(ctx, "alice", both, cost{unitBytes: 1, unitRecords: 1})
	assert.Equal(t, verdict{refused: true, unit: unitBytes, wait: 3 * time.Second}, v, "bytes 300 in debt at 100/s beats records 5 at 10/s")
	assert.Equal(t, "bytes", v.unit.String())

	recordsOnly := Limit{RecordsPerSecond: 10, BurstSeconds: 1}
	for range 5 {
		require.False(t, lb.take(ctx, "bob", recordsOnly, cost{unitBytes: 1e12}).refused, "no bytes limit")
	}
	assert.False(t, lb.take(ctx, "carol", Limit{BurstSeconds: 1}, records(1e9)).refused)
	assert.False(t, lb.take(ctx, "carol", Limit{BurstSeconds: 1}, records(1e9)).refused, "no limit at all")
}

func TestTheTenantsWhoseBucketsAreFullAgainAreForgottenEveryMinuteAndTheOthersKept(t *testing.T) {
	c := newClock()
	lb := newLocalBuckets(c.Now)
	ctx := context.Background()
	lb.take(ctx, "alice", tenRecords, records(720)) // 70 s of debt
	lb.take(ctx, "bob", tenRecords, records(1))
	c.advance(pruneEvery - time.Millisecond)
	lb.take(ctx, "carol", tenRecords, records(1))
	assert.Len(t, lb.byUser, 3, "not yet")
	c.advance(time.Millisecond) // bob is full again; alice is not
	lb.take(ctx, "carol", tenRecords, records(1))
	assert.Len(t, lb.byUser, 2)
	assert.NotContains(t, lb.byUser, "bob")
	assert.True(t, lb.take(ctx, "alice", tenRecords, records(1)).refused, "a tenant in debt keeps its debt")
}

func TestARefusalIsResourceExhaustedWithTheDelayRoundedUpToWholeSecondsNamingTheLimit(t *testing.T) {
	for _, tt := range []struct {
		wait, want time.Duration
	}{
		{100 * time.Millisecond, time.Second},
		{time.Second, time.Second},
		{2500 * time.Millisecond, 3 * time.Second},
		{98 * time.Second, 98 * time.Second},
	} {
		err := throttled(tenRecords, verdict{refused: true, unit: unitRecords, wait: tt.wait})
		st, ok := status.FromError(err)
		require.True(t, ok)
		assert.Equal(t, codes.ResourceExhausted, st.Code())
		require.Len(t, st.Details(), 1)
		ri, ok := st.Details()[0].(*errdetails.RetryInfo)
		require.True(t, ok, "details: %v", st.Details())
		assert.Equal(t, tt.want, ri.GetRetryDelay().AsDuration(), "a wait of %s", tt.wait)
		assert.Equal(t, "over this tenant's ingest limit of 10 records/s (a burst of 20; tenants::limits): retry in "+tt.want.String(), st.Message())
	}
}

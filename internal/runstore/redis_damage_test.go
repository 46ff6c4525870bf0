package runstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
)

// sharedGoesOn is what a collector that takes the run over after the
// damage finds of it.
type sharedGoesOn struct {
	runID string
	// pendingRange is the pending object's range: 0 when its upload is
	// kept, else the next range counted.
	pendingRange int64
	// nextRange is the range of another object of the same step.
	nextRange int64
	delivered bool // episodes 1-3 are still known as delivered
}

func TestADamagedSharedRegistryRepairsOrSetsAsideEachKeyWithOneLine(t *testing.T) {
	const (
		record  = "test:run:key:a"
		pending = "test:pending:key:a"
	)
	kept := sharedGoesOn{runID: "run-1", pendingRange: 0, nextRange: 1, delivered: true}
	for _, tc := range []struct {
		name   string
		damage func(ctx context.Context, c *redis.Client) error
		want   sharedGoesOn
		line   string
	}{
		{
			name:   "record of another type",
			damage: func(ctx context.Context, c *redis.Client) error { return c.Set(ctx, record, `{"id":"run-1"`, 0).Err() },
			want:   sharedGoesOn{runID: "run-2", pendingRange: 0, nextRange: 1, delivered: true},
			line:   `Run record of prime.run.key="a" in the shared run registry is damaged (a string where a hash belongs): moved aside to test:run:key:a:damaged; the run goes on from what the collectors remember of it, or is created again (a second run on the platform) where none does`,
		},
		{
			name: "record cut short: no identity fields",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.HDel(ctx, record, "key", "source", "value").Err()
			},
			want: kept,
			line: `Run record of prime.run.key="a" in the shared run registry is damaged (its identity fields are missing): the run goes on as run run-1`,
		},
		{
			name: "record holding an unknown state",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.HSet(ctx, record, "state", "clo\xffed").Err()
			},
			want: kept,
			line: `Run record of prime.run.key="a" in the shared run registry is damaged (unknown state "clo\xffed"): taken as open`,
		},
		{
			name:   "range counter garbled",
			damage: func(ctx context.Context, c *redis.Client) error { return c.HSet(ctx, record, "range:4", "1\xff").Err() },
			want:   sharedGoesOn{runID: "run-1", pendingRange: 0, nextRange: 1 << 18, delivered: true},
			line:   `Sample_id range counter range:4 of prime.run.key="a" in the shared run registry is damaged (holds "1\xff"): it counts on from 262144, above every range it handed out; nothing is lost`,
		},
		{
			name: "pending upload truncated",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.HSet(ctx, pending, "abc", `{"step":4,"ran`).Err()
			},
			want: sharedGoesOn{runID: "run-1", pendingRange: 1, nextRange: 2, delivered: true},
			line: `Pending upload abc of prime.run.key="a" in the shared run registry is damaged (truncated JSON): dropped; its object is uploaded again under a new sample_id range`,
		},
		{
			name: "pending upload garbled",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.HSet(ctx, pending, "abc", "{\"step\":4,\xff\"range\":0}").Err()
			},
			want: sharedGoesOn{runID: "run-1", pendingRange: 1, nextRange: 2, delivered: true},
			line: `Pending upload abc of prime.run.key="a" in the shared run registry is damaged (garbled JSON at byte 10): dropped`,
		},
		{
			name:   "pending uploads of another type",
			damage: func(ctx context.Context, c *redis.Client) error { return c.Set(ctx, pending, "x", 0).Err() },
			want:   sharedGoesOn{runID: "run-1", pendingRange: 1, nextRange: 2, delivered: true},
			line:   `Pending uploads of prime.run.key="a" in the shared run registry is damaged (a string where a hash belongs): moved aside to test:pending:key:a:damaged; they are uploaded again under new sample_id ranges`,
		},
		{
			name: "a step's delivered episodes of another type",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.Set(ctx, "test:deliveredstep:7:key:a", "x", 0).Err()
			},
			want: sharedGoesOn{runID: "run-1", pendingRange: 0, nextRange: 1, delivered: false},
			line: `Delivered episodes of step 7 of prime.run.key="a" in the shared run registry is damaged (a string where a zset belongs): moved aside to test:deliveredstep:7:key:a:damaged; a replay of that step's episodes delivered before may upload them again`,
		},
		{
			name: "the index of delivered steps of another type",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.Set(ctx, "test:deliveredsteps:key:a", "x", 0).Err()
			},
			want: kept,
			line: `The index of delivered steps of prime.run.key="a" in the shared run registry is damaged (a string where a zset belongs): moved aside to test:deliveredsteps:key:a:damaged; the run's older steps are no longer pruned`,
		},
		{
			name: "the count of delivered episodes not a number",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.Set(ctx, "test:deliveredheld:key:a", "12x", 0).Err()
			},
			want: kept,
			line: `The count of delivered episodes of prime.run.key="a" in the shared run registry is damaged (not a number): counted again from its steps; nothing is lost`,
		},
		{
			name: "an earlier release's delivered episodes of another type",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.Set(ctx, "test:deliveredz:key:a", "x", 0).Err()
			},
			want: kept,
			line: `Delivered episodes (an earlier release's sorted set) of prime.run.key="a" in the shared run registry is damaged (a string where a zset belongs): moved aside to test:deliveredz:key:a:damaged`,
		},
		{
			name:   "holds of another type",
			damage: func(ctx context.Context, c *redis.Client) error { return c.Set(ctx, "test:holds:key:a", "x", 0).Err() },
			want:   kept,
			line:   `Holds of prime.run.key="a" in the shared run registry is damaged (a string where a zset belongs): moved aside`,
		},
		{
			name: "index of ending runs of another type",
			damage: func(ctx context.Context, c *redis.Client) error {
				return c.HSet(ctx, "test:ending", "key:a", "x").Err()
			},
			want: kept,
			line: `The index of ending runs in the shared run registry is damaged (a hash where a set belongs): moved aside to test:ending:damaged; a run that was ending is closed out by a collector that sees its data or its end, not by a collector starting`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.New(t)
			api := &fleettest.CountingRuns{}
			ctx := context.Background()
			first := fleettest.NewNode(t, srv, api)
			l, err := first.Reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
			require.NoError(t, err)
			require.Equal(t, int64(0), startUpload(t, l, first.Store, pendingFP, 4))
			require.NoError(t, first.Store.MarkDelivered(ctx, l.Key(), 7, []uint64{1, 2, 3}))
			l.Release()
			require.NoError(t, tc.damage(ctx, fleettest.RedisClient(t, srv)))

			// Another collector takes the run over (the first was
			// replaced, or the run moved).
			next := fleettest.NewNode(t, srv, api)
			l, err = next.Reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
			require.NoError(t, err, "the damaged run's data is taken")
			got := sharedGoesOn{runID: l.ID(), pendingRange: rangeOf(l, next.Store, pendingFP, 4), nextRange: rangeOf(l, next.Store, 0xdef, 4)}
			got.delivered = deliveredAfterDamage(t, next.Store, l)
			l.Release()

			assert.Equal(t, tc.want, got)
			problems := problems(next.Logs)
			require.Len(t, problems, 1, "one line for the damage: %q", problems)
			assert.Contains(t, problems[0], tc.line)
			select {
			case err := <-next.Health:
				t.Fatalf("damage turned the status to %v: it is not Redis being down", err)
			default:
			}
		})
	}
}

func TestAKeyOfAnotherTypeIsNotRedisBeingDown(t *testing.T) {
	srv := redistest.New(t)
	ctx := context.Background()
	var health []error
	s := runstore.NewRedisStore(runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "test", Health: func(err error) { health = append(health, err) }})
	t.Cleanup(func() { _ = s.Close(ctx) })
	require.NoError(t, fleettest.RedisClient(t, srv).HSet(ctx, "test:claim:create:key:a", "f", "v").Err())

	err := s.Unclaim(ctx, "create:key:a", "me")
	require.ErrorContains(t, err, "WRONGTYPE")
	assert.Empty(t, health, "the status stays OK: Redis answers")
}

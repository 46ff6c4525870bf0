package runstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"

	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
	"github.com/primeintellect/primeexporter/internal/upload"
)

func TestARunsDeliveredStepsInRedisKeepItsNewestWithinTheBound(t *testing.T) {
	srv := redistest.New(t)
	ctx := context.Background()
	store := runstore.NewRedisStore(runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "prime"})
	t.Cleanup(func() { _ = store.Close(ctx) })
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = raw.Close() })

	const bound = 1 << 18 // the bound a storage extension keeps too
	const perStep = 4096
	const run = "key\x00long"
	// Step s holds s*perStep … (s+1)*perStep-1.
	mark := func(from, to int) {
		for step := from; step < to; step++ {
			fps := make([]uint64, perStep)
			for i := range fps {
				fps[i] = uint64(step*perStep + i)
			}
			require.NoError(t, store.MarkDelivered(ctx, run, int64(step), fps))
		}
	}
	// What earlier releases kept: a plain set and a sorted set, still read.
	require.NoError(t, raw.SAdd(ctx, "prime:delivered:key:long", "ffffffff").Err())
	require.NoError(t, raw.ZAdd(ctx, "prime:deliveredz:key:long", redis.Z{Score: 1, Member: "fffffffe"}).Err())
	steps := (bound + bound/2) / perStep
	mark(0, steps)

	held, err := raw.Get(ctx, "prime:deliveredheld:key:long").Int64()
	require.NoError(t, err)
	assert.Equal(t, int64(bound), held, "fingerprints kept for the run")
	n, err := raw.ZCard(ctx, "prime:deliveredsteps:key:long").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(bound/perStep), n, "steps kept")
	newest := int64(steps - 1)
	for _, tc := range []struct {
		name string
		step int64
		fp   uint64
		want bool
	}{
		{"the oldest step is gone", 0, 0, false},
		{"the newest bound's worth is kept", newest - bound/perStep + 1, uint64((newest-bound/perStep+1)*perStep + 3), true},
		{"the newest is kept", newest, uint64(newest*perStep + perStep - 1), true},
		{"a fingerprint is found under its own step only", newest - 1, uint64(newest * perStep), false},
		{"the earlier releases' sets are read at any step", 3, 0xffffffff, true},
		{"and the sorted set too", 99, 0xfffffffe, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.Delivered(ctx, run, tc.step, []uint64{tc.fp})
			require.NoError(t, err)
			assert.Equal(t, tc.want, got[0])
		})
	}
}

func TestAStepOfMoreEpisodesThanTheBoundInRedisKeepsItsNewest(t *testing.T) {
	srv := redistest.New(t)
	ctx := context.Background()
	store := runstore.NewRedisStore(runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "prime"})
	t.Cleanup(func() { _ = store.Close(ctx) })
	const bound = 1 << 18
	const step = upload.NoStep // an evaluation's samples: no step
	for from := 0; from < bound+bound/2; from += 16384 {
		fps := make([]uint64, 16384)
		for i := range fps {
			fps[i] = uint64(from + i)
		}
		require.NoError(t, store.MarkDelivered(ctx, "eval\x00e", step, fps))
	}
	got, err := store.Delivered(ctx, "eval\x00e", step, []uint64{0, bound/2 - 1, bound / 2, bound + bound/2 - 1})
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, true, true}, got, "the oldest members go, the newest bound's worth stays")
}

func TestTheSharedRecordOnlyMovesForward(t *testing.T) {
	srv := redistest.New(t)
	s := runstore.NewRedisStore(runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "test"})
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx := context.Background()
	key := "key\x00fwd"
	base := runstore.SavedRun{Key: key, Source: runs.AttrRunKey, Value: "fwd"}

	first := base
	first.ID, first.State, first.EndState = "run-1", "closed", runs.StatusFailed
	require.NoError(t, s.Save(ctx, first))
	later := base
	later.ID, later.State, later.EndState = "run-2", "ending", runs.StatusCompleted
	later.Traces.OnTable = true
	require.NoError(t, s.Save(ctx, later))

	sr, found, held, err := s.Hold(ctx, key, "l:x:1", time.Minute)
	require.NoError(t, err)
	require.True(t, found)
	assert.False(t, held, "a closed run takes no hold")
	assert.Equal(t, "run-1", sr.ID, "the first id stays")
	assert.Equal(t, "closed", sr.State, "a state never goes back")
	assert.Equal(t, runs.StatusFailed, sr.EndState, "the first end wins")
	assert.True(t, sr.Traces.OnTable, "a Prime Traces flag only turns on")

	saved, err := s.Load(ctx)
	require.NoError(t, err)
	assert.Empty(t, saved, "a closed run has nothing left to close out")
}

func TestAnErrorFromRedisIsNamedAndNeverPermanent(t *testing.T) {
	srv := redistest.New(t)
	s := runstore.NewRedisStore(runstore.RedisOptions{Endpoint: srv.Addr()})
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	srv.Stop()
	_, err := s.Delivered(context.Background(), "key\x00x", 1, []uint64{1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shared run registry (redis "+srv.Addr()+")")
	assert.False(t, consumererror.IsPermanent(err))
	assert.NotErrorIs(t, err, runs.ErrSkipped)
}

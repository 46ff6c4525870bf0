package runs_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"

	"github.com/primeintellect/primeexporter/internal/redistest"
	"github.com/primeintellect/primeexporter/internal/runs"
)

func TestARunsDeliveredSetInRedisKeepsItsNewestWithinTheBound(t *testing.T) {
	srv := redistest.New(t)
	ctx := context.Background()
	store := runs.NewRedisStore(runs.RedisOptions{Endpoint: srv.Addr(), Prefix: "prime"})
	t.Cleanup(func() { _ = store.Close(ctx) })
	raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = raw.Close() })

	const bound = 1 << 18 // the bound a storage extension keeps too
	const run = "key\x00long"
	mark := func(from, to int) {
		for start := from; start < to; start += 8192 {
			fps := make([]uint64, 0, 8192)
			for fp := start; fp < min(to, start+8192); fp++ {
				fps = append(fps, uint64(fp))
			}
			require.NoError(t, store.MarkDelivered(ctx, run, fps))
		}
	}
	// What an earlier release kept: a plain set, still read.
	require.NoError(t, raw.SAdd(ctx, "prime:delivered:key:long", "ffffffff").Err())
	mark(0, bound+bound/2)

	n, err := raw.ZCard(ctx, "prime:deliveredz:key:long").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(bound), n, "fingerprints kept for the run")
	got, err := store.Delivered(ctx, run, []uint64{0, bound/2 - 1, bound / 2, bound + bound/2 - 1, 0xffffffff, bound * 4})
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, true, true, true, false}, got,
		"the oldest are gone, the newest bound's worth and the earlier release's set are delivered, an unmarked one is not")
}

func TestTheSharedRecordOnlyMovesForward(t *testing.T) {
	srv := redistest.New(t)
	s := runs.NewRedisStore(runs.RedisOptions{Endpoint: srv.Addr(), Prefix: "test"})
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	ctx := context.Background()
	key := "key\x00fwd"
	base := runs.SavedRun{Key: key, Source: runs.AttrRunKey, Value: "fwd"}

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
	s := runs.NewRedisStore(runs.RedisOptions{Endpoint: srv.Addr()})
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	srv.Stop()
	_, err := s.Delivered(context.Background(), "key\x00x", []uint64{1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shared run registry (redis "+srv.Addr()+")")
	assert.False(t, consumererror.IsPermanent(err))
	assert.NotErrorIs(t, err, runs.ErrSkipped)
}

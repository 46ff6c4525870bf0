package primeexporter

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/internal/runs"
)

func TestARunsDeliveredSetInRedisKeepsItsNewestWithinTheBound(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	store := runs.NewRedisStore(runs.RedisOptions{Endpoint: srv.addr(), Prefix: "prime"})
	t.Cleanup(func() { _ = store.Close(ctx) })
	raw := redis.NewClient(&redis.Options{Addr: srv.addr()})
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

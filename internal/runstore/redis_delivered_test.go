package runstore

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
)

// roundTrips counts a client's round trips to Redis: a command, or a
// pipeline, each; not the handshake of a new connection.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "hello" { // a new connection's handshake
			r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

func TestMarkingAndCheckingAStepInRedisAreOneRoundTripEach(t *testing.T) {
	srv := redistest.New(t)
	ctx := context.Background()
	s := NewRedisStore(RedisOptions{Endpoint: srv.Addr(), Prefix: "prime"})
	t.Cleanup(func() { _ = s.Close(ctx) })
	rt := &roundTrips{}
	s.c.AddHook(rt)
	// The first marking loads the script (NOSCRIPT, then EVAL).
	require.NoError(t, s.MarkDelivered(ctx, "key\x00r", 3, []uint64{1}))

	rt.n.Store(0)
	fps := make([]uint64, 5000)
	for i := range fps {
		fps[i] = uint64(i + 2)
	}
	require.NoError(t, s.MarkDelivered(ctx, "key\x00r", 3, fps))
	assert.Equal(t, int64(1), rt.n.Load(), "a marking of 5,000 episodes is one script")

	rt.n.Store(0)
	got, err := s.Delivered(ctx, "key\x00r", 3, []uint64{1, 2, 5001, 6000})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true, false}, got)
	assert.Equal(t, int64(1), rt.n.Load(), "a check is one pipeline: the step's set and the earlier releases' two")
}

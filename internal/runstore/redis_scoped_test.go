package runstore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
)

func TestAScopedStoreKeepsItsRunsApartAndItsCloseLeavesTheConnectionOpen(t *testing.T) {
	srv := redistest.New(t)
	ctx := context.Background()
	base := NewRedisStore(RedisOptions{Endpoint: srv.Addr(), Prefix: "p"})
	defer base.Close(ctx)
	a, b := base.Scoped("p:tenant:a"), base.Scoped("p:tenant:b")
	k := RunKey("key", "same-name", false)
	require.NoError(t, a.Save(ctx, SavedRun{Key: k, Source: "key", Value: "same-name", ID: "run-a", State: StateEnding}))

	runsOf := func(s *RedisStore) []string {
		saved, err := s.Load(ctx)
		require.NoError(t, err)
		var ids []string
		for _, sr := range saved {
			ids = append(ids, sr.ID)
		}
		return ids
	}
	assert.Equal(t, []string{"run-a"}, runsOf(a))
	assert.Empty(t, runsOf(b), "another scope has no run of that name")
	assert.Empty(t, runsOf(base))

	require.NoError(t, a.Close(ctx))
	require.NoError(t, b.SetField(ctx, "tenants", "bob", "k"), "the connection is still open")
	fields, err := base.Fields(ctx, "tenants")
	require.NoError(t, err)
	assert.Empty(t, fields, "fields are the scope's own")
}

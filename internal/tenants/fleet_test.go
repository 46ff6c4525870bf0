package tenants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// onRedis is a gateway of a fleet sharing the registry on addr.
func onRedis(t *testing.T, srv *rfttest.Server, addr string) gateway {
	return startOn(t, srv, &runstore.RedisOptions{Endpoint: addr, Prefix: "fleet"}, nil)
}

// acquire gives sender's data for the run key its run's id, through g.
func acquire(t *testing.T, g gateway, key, runKey string) string {
	t.Helper()
	lease, err := g.backendOf(t, key).Acquire(context.Background(), fleettest.KeyedResource(runKey), "metrics", 1)
	require.NoError(t, err)
	defer lease.Release()
	return lease.ID()
}

func TestGatewaysOnOneRedisCreateATenantsRunOnceAndKeepEachTenantsRunKeysItsOwn(t *testing.T) {
	srv, r := newPlatform(t), redistest.New(t)
	g1, g2 := onRedis(t, srv, r.Addr()), onRedis(t, srv, r.Addr())

	alice := acquire(t, g1, aliceKey, "shared-name")
	assert.Equal(t, alice, acquire(t, g2, aliceNewKey, "shared-name"), "the run moved to another gateway is attached there, under another key of the same user")
	bob := acquire(t, g2, bobKey, "shared-name")
	assert.NotEqual(t, alice, bob, "bob's run key is his own, though alice's run has the same name")

	owners := map[string]string{}
	for _, run := range srv.Runs() {
		owners[run.ID] = run.Owner
	}
	assert.Equal(t, map[string]string{alice: "alice", bob: "bob"}, owners, "one run each, created with its tenant's key")
	for _, req := range srv.Requests() {
		if req.Path == "/api/v1/rft/runs" && req.Method == "POST" {
			assert.NotEmpty(t, req.UserID, "every create carried a tenant's key")
		}
	}
}

func TestAGatewayJoiningTheFleetKnowsEveryTenantBeforeItSendsWithTheKeyItLastSentWith(t *testing.T) {
	srv, r := newPlatform(t), redistest.New(t)
	g1, g2 := onRedis(t, srv, r.Addr()), onRedis(t, srv, r.Addr())
	g1.backendOf(t, aliceKey)
	g2.backendOf(t, bobKey)
	g2.backendOf(t, aliceNewKey) // alice's key replaced, at another gateway

	g3 := onRedis(t, srv, r.Addr())
	assert.Len(t, g3.Registries(), 2, "both tenants are back before either sends to this gateway")
	idx, err := runstore.NewRedisStore(runstore.RedisOptions{Endpoint: r.Addr(), Prefix: "fleet"}).Fields(context.Background(), indexKey)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"alice": aliceNewKey, "bob": bobKey}, idx)
}

func TestATenantsRegistryKeysStayUnderItsOwnPrefixInRedis(t *testing.T) {
	srv, r := newPlatform(t), redistest.New(t)
	g := onRedis(t, srv, r.Addr())
	acquire(t, g, aliceKey, "alices-run")
	acquire(t, g, bobKey, "bobs-run")
	rc := redis.NewClient(&redis.Options{Addr: r.Addr()})
	defer rc.Close()
	keys, err := rc.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	prefixOf := func(user string) string {
		sum := sha256.Sum256([]byte(user))
		return "fleet:tenant:" + hex.EncodeToString(sum[:8]) + ":"
	}
	var alices, bobs int
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, prefixOf("alice")) && strings.Contains(k, "alices-run"):
			alices++
		case strings.HasPrefix(k, prefixOf("bob")) && strings.Contains(k, "bobs-run"):
			bobs++
		case strings.Contains(k, "alices-run") || strings.Contains(k, "bobs-run"):
			t.Errorf("a run's key outside its tenant's prefix: %s", k)
		}
	}
	assert.Positive(t, alices, "keys: %v", keys)
	assert.Positive(t, bobs, "keys: %v", keys)
}

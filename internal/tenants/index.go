package tenants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/runstore"
)

// indexKey is the key of the tenant index, user id → the key it last sent
// with: the storage key (and the name of its storage client), or the Redis
// hash <prefix>:tenants.
const indexKey = "tenants"

// index is where the tenant index is kept, so that after a restart the
// janitor and close-outs of every tenant go on with its key before it
// sends again.
type index interface {
	load(ctx context.Context) (map[string]string, error)
	// put records that user sends with key; all is the whole index, for a
	// store that writes it whole.
	put(ctx context.Context, all map[string]string, user, key string) error
	close(ctx context.Context) error
}

// fileIndex is the index in a storage extension, one value written whole:
// only this collector writes it.
type fileIndex struct{ c storage.Client }

func (f fileIndex) load(ctx context.Context) (map[string]string, error) {
	raw, err := f.c.Get(ctx, indexKey)
	if err != nil || raw == nil {
		return nil, err
	}
	var idx map[string]string
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("the tenant index in storage is damaged: %w", err)
	}
	return idx, nil
}

func (f fileIndex) put(ctx context.Context, all map[string]string, _, _ string) error {
	raw, err := json.Marshal(all)
	if err != nil {
		return err
	}
	return f.c.Set(ctx, indexKey, raw)
}

func (f fileIndex) close(ctx context.Context) error { return f.c.Close(ctx) }

// redisIndex is the index a fleet of gateways shares, a field per tenant,
// so that gateways adding tenants at once lose none, and a gateway that
// starts knows the tenants its peers served.
type redisIndex struct{ s *runstore.RedisStore }

func (r redisIndex) load(ctx context.Context) (map[string]string, error) {
	return r.s.Fields(ctx, indexKey)
}

func (r redisIndex) put(ctx context.Context, _ map[string]string, user, key string) error {
	return r.s.SetField(ctx, indexKey, user, key)
}

func (r redisIndex) close(ctx context.Context) error { return r.s.Close(ctx) }

// openIndex opens the index the settings keep, and the shared registry's
// connection with it; nil, nil without storage or Redis.
func (g *Gateway[B]) openIndex(ctx context.Context) (index, error) {
	switch {
	case g.set.Redis != nil:
		ro := *g.set.Redis
		ro.Logger, ro.Health = g.logger, g.set.Health
		g.redis = runstore.NewRedisStore(ro)
		return redisIndex{g.redis}, nil
	case g.set.Storage != nil:
		c, err := g.set.Storage.GetClient(ctx, component.KindExporter, g.set.ID, indexKey)
		if err != nil {
			return nil, fmt.Errorf("storage: the tenant index: %w", err)
		}
		return fileIndex{c}, nil
	}
	return nil, nil
}

// restore brings back the tenants of the index, each with its runs. A
// damaged index is logged and left: tenants come back as they send again.
func (g *Gateway[B]) restore(ctx context.Context) error {
	idx, err := g.index.load(ctx)
	if err != nil {
		g.logger.Error("Cannot read the tenant index: tenants come back as they send again", zap.Error(err))
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for user, key := range idx {
		if _, err := g.openLocked(ctx, user, key); err != nil {
			return err
		}
	}
	return nil
}

// saveLocked records that user sends with key. A failed write costs the
// close-outs of a restart before the tenant sends again, not data: it is
// logged.
func (g *Gateway[B]) saveLocked(ctx context.Context, user, key string) {
	if g.index == nil {
		return
	}
	all := make(map[string]string, len(g.byUser))
	for u, tb := range g.byUser {
		all[u] = tb.key
	}
	if err := g.index.put(ctx, all, user, key); err != nil {
		g.logger.Warn("Cannot write the tenant index: after a restart a tenant's idle runs wait for it to send again", zap.Error(err))
	}
}

// store is a tenant's run registry's store: on the shared registry, keys
// of its own under <prefix>:tenant:<digest>; in storage, a client of its
// own; else memory. Both are named by a digest of the user id, which may
// hold any character, so that one tenant's run identities never meet
// another's.
func (g *Gateway[B]) store(ctx context.Context, user string) (runstore.Store, error) {
	switch {
	case g.redis != nil:
		prefix := "tenant:" + digest(user)
		if p := g.redis.Prefix(); p != "" {
			prefix = p + ":" + prefix
		}
		return g.redis.Scoped(prefix), nil
	case g.set.Storage != nil:
		c, err := g.set.Storage.GetClient(ctx, component.KindExporter, g.set.ID, "runs-"+digest(user))
		if err != nil {
			return nil, fmt.Errorf("storage: tenant %s's run registry: %w", user, err)
		}
		return runstore.NewExtensionStore(c, runstore.ExtensionOptions{Logger: g.logger, Name: g.set.StorageName, Health: g.set.Health}), nil
	}
	return runstore.NewMemStore(), nil
}

// digest names a user id where any character may not go (a storage
// client's name, a Redis key), and where it would say more than needed.
func digest(user string) string {
	sum := sha256.Sum256([]byte(user))
	return hex.EncodeToString(sum[:8])
}

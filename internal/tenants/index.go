package tenants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/runstore"
)

// indexKey is the storage key of the tenant index: user id → key. It is
// also the name of the index's storage client.
const indexKey = "tenants"

// restore brings back the tenants of the index, each with its runs.
func (g *Gateway[B]) restore(ctx context.Context) error {
	raw, err := g.index.Get(ctx, indexKey)
	if err != nil || raw == nil {
		return err
	}
	var idx map[string]string
	if err := json.Unmarshal(raw, &idx); err != nil {
		g.logger.Error("The tenant index in storage is damaged: tenants come back as they send again", zap.Error(err))
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

// saveLocked writes the tenant index. A failed write costs the close-outs
// of a restart before the tenant sends again, not data: it is logged.
func (g *Gateway[B]) saveLocked(ctx context.Context) {
	if g.index == nil {
		return
	}
	idx := make(map[string]string, len(g.byUser))
	for user, tb := range g.byUser {
		idx[user] = tb.key
	}
	raw, err := json.Marshal(idx)
	if err == nil {
		err = g.index.Set(ctx, indexKey, raw)
	}
	if err != nil {
		g.logger.Warn("Cannot write the tenant index to storage: after a restart a tenant's idle runs wait for it to send again", zap.Error(err))
	}
}

// store is a tenant's run registry's store: a storage client of its own
// (named by a digest of the user id, which may hold any character), or
// memory without storage.
func (g *Gateway[B]) store(ctx context.Context, user string) (runstore.Store, error) {
	if g.set.Storage == nil {
		return runstore.NewMemStore(), nil
	}
	c, err := g.set.Storage.GetClient(ctx, component.KindExporter, g.set.ID, "runs-"+digest(user))
	if err != nil {
		return nil, fmt.Errorf("storage: tenant %s's run registry: %w", user, err)
	}
	return runstore.NewExtensionStore(c, runstore.ExtensionOptions{Logger: g.logger, Name: g.set.StorageName, Health: g.set.Health}), nil
}

// digest names a user id where any character may not go (a storage
// client's name, a Redis key), and where it would say more than needed.
func digest(user string) string {
	sum := sha256.Sum256([]byte(user))
	return hex.EncodeToString(sum[:8])
}

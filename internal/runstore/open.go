package runstore

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// Store is what every store here keeps: a run registry's runs (the calls
// internal/runs' Store takes) and its sample objects' uploads (internal/
// upload's ObjectStore). Open returns one; so does a multi-tenant
// gateway's store of each tenant.
type Store interface {
	Load(ctx context.Context) ([]SavedRun, error)
	Save(ctx context.Context, sr SavedRun) error
	Delivered(ctx context.Context, runKey string, step int64, fps []uint64) ([]bool, error)
	MarkDelivered(ctx context.Context, runKey string, step int64, fps []uint64) error
	Close(ctx context.Context) error
	Object(ctx context.Context, runKey string, fp uint64) (SavedObject, bool, error)
	Resume(ctx context.Context, runKey string, step int64, episodes, objects []uint64) ([]bool, map[uint64]SavedObject, error)
	SaveObject(ctx context.Context, runKey string, fp uint64, so SavedObject) error
	ConfirmObject(ctx context.Context, runKey string, fp uint64, step int64, fps []uint64) error
	DropObject(ctx context.Context, runKey string, fp uint64) error
}

var (
	_ Store = (*MemStore)(nil)
	_ Store = (*ExtensionStore)(nil)
	_ Store = (*RedisStore)(nil)
)

// OpenOptions say which store a collector's config asks for.
type OpenOptions struct {
	// Redis is the shared registry (shared_registry); nil for none.
	Redis *RedisOptions
	// Storage is the storage extension (storage); nil for none. Its
	// client is ID's, named "runs".
	Storage *component.ID
	Host    component.Host
	ID      component.ID
	Logger  *zap.Logger
	// Health is told when the store fails (err) and answers again (nil).
	Health func(error)
}

// Open opens the store the options ask for: Redis's, the storage
// extension's, or memory, saying plainly what a restart costs without
// storage. A storage client that cannot be opened (a damaged file) does
// not stop the collector, which would only start again into the same
// error: it goes on in memory, and Health hears it.
func Open(ctx context.Context, o OpenOptions) (Store, error) {
	if o.Redis != nil {
		o.Logger.Info("The run registry is shared through Redis: collectors with the same shared_registry create each run once and share its sample_id ranges, delivered episodes, pending uploads and close-out",
			zap.String("endpoint", o.Redis.Endpoint), zap.Int("db", o.Redis.DB), zap.String("prefix", o.Redis.Prefix), zap.Bool("tls", o.Redis.TLS != nil))
		ro := *o.Redis
		ro.Logger, ro.Health = o.Logger, o.Health
		return NewRedisStore(ro), nil
	}
	if o.Storage == nil {
		o.Logger.Info("No storage configured: a collector restart forgets the runs it served. Runs it created are created again (a second run), " +
			"and their episode tables continue under random sample_id ranges; set storage: <storage extension> to keep them across restarts")
		return NewMemStore(), nil
	}
	se, err := StorageExtension(o.Host, *o.Storage)
	if err != nil {
		return nil, err
	}
	client, err := se.GetClient(ctx, component.KindExporter, o.ID, "runs")
	if err != nil {
		o.Logger.Error("Cannot open the run registry in storage: the exporter goes on without it, as without storage (a restart forgets its runs, and runs created before are created again); move the damaged file aside, or set the file_storage extension's recreate: true",
			zap.String("storage", o.Storage.String()), zap.Error(err))
		o.Health(fmt.Errorf("storage: %w", err))
		return NewMemStore(), nil
	}
	return NewExtensionStore(client, ExtensionOptions{Logger: o.Logger, Name: o.Storage.String(), Health: o.Health}), nil
}

// StorageExtension is the storage extension id names among host's.
func StorageExtension(host component.Host, id component.ID) (storage.Extension, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("storage: no extension %q is configured; add it under extensions and service::extensions", id.String())
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("storage: extension %s is not a storage extension", id.String())
	}
	return se, nil
}

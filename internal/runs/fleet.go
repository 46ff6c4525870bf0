package runs

import (
	"context"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/runstore"
)

// Store keeps what the registry must remember about a run across a
// collector restart: identity → platform run id, whether it ended or was
// closed, its sample_id range counters, its unconfirmed uploads, and which
// episodes it already delivered. internal/runstore has them:
// runstore.MemStore remembers nothing across a restart, ExtensionStore
// keeps it in a storage extension, and RedisStore shares it with a fleet
// of collectors (it plays the shared roles of fleet_redis.go too).
type Store interface {
	// Load returns every run saved before.
	Load(ctx context.Context) ([]runstore.SavedRun, error)
	// Save replaces one run's record (a shared store merges it).
	Save(ctx context.Context, sr runstore.SavedRun) error
	Close(ctx context.Context) error
}

// The fleet is what a collector's runs share with the other collectors of
// a fleet, chosen once, at New, from the store: alone (solo, on a Store)
// or through Redis (redisFleet, on a store that plays the shared roles).
// One value plays every role; each part of the registry holds only the
// roles it uses, declared beside it: the registry its presence and the
// pushes' holds (registry.go), the records (persist.go), a lease's uploads
// (objects.go), the creator its create (creator.go) and the closer its
// close-out (closer.go). None of them asks which fleet it has.
type fleetRoles struct {
	presence  presence
	holds     pushHolds
	records   recordKeeper
	objects   objectLedger
	creates   createFleet
	closeOuts closeOutFleet
}

// claim is a fleet's answer to a close-out.
type claim int

const (
	closeNow   claim = iota // this collector closes the run out
	closeLater              // not now: look again after closeOutRetryPause
	closeNone               // nothing to do: the run is closing or closed already
)

// newFleet picks the fleet the store allows. ending schedules the
// close-out of a run whose end the fleet recorded.
func newFleet(cfg Config, deps Deps, ending func(r *run, end End)) fleetRoles {
	if shared, ok := sharedOf(deps.Store); ok {
		f := newRedisFleet(deps.Store, shared, cfg, deps, ending)
		return fleetRoles{presence: f, holds: f, records: f, objects: f, creates: f, closeOuts: f}
	}
	s := &solo{records: records{store: deps.Store, warn: deps.Warn, closing: runstore.StateClosed}}
	return fleetRoles{presence: s, holds: s, records: s, objects: s, creates: s, closeOuts: s}
}

// records keeps runs' records and delivered sets in a store, for both
// fleets.
type records struct {
	store Store
	warn  *logonce.Logger
	// closing is what a closing run is saved as: closed alone, closing in
	// a fleet, where the others must refuse its data while it drains.
	closing string
}

func (s records) load(ctx context.Context) ([]runstore.SavedRun, error) { return s.store.Load(ctx) }

// save writes the run's record. A failed save is logged, not returned:
// the data was handled, and what is lost is only what a restart would
// remember.
func (s records) save(ctx context.Context, r *run) {
	if err := s.store.Save(ctx, r.snapshot(s.closing)); err != nil {
		s.warn.Warn("persist\x00"+r.ident.key(), "Could not save the run's state to storage; a restart may not remember it", zap.Stringer("run", r.ident), zap.Error(err))
	}
}

package runs

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
)

// fleet is what a collector's runs share with the other collectors of a
// fleet, chosen once, at New, from the store: alone (solo, on a Store) or
// through Redis (redisFleet, on a SharedStore). The registry, its creator
// and its closer never ask which they have.
type fleet interface {
	// start begins the collector's presence in the fleet (its heartbeat);
	// stop ends it, once the close-outs are done, and closes the store.
	start()
	stop(ctx context.Context) error

	// load returns the runs saved before; save writes a run's record,
	// logging a failure. delivered and markDelivered are the run's
	// delivered episodes.
	load(ctx context.Context) ([]SavedRun, error)
	// record reads the fleet's record of a run by key, taking no hold: a
	// solo collector's fleet has none beyond its own run map.
	record(ctx context.Context, runKey string) (SavedRun, bool)
	save(ctx context.Context, r *run)
	delivered(ctx context.Context, r *run, step int64, fps []uint64) ([]bool, error)
	markDelivered(ctx context.Context, r *run, step int64, fps []uint64) error

	// hold registers a push's hold on the run and brings the run up to
	// date with the fleet; a run closing or closed anywhere comes back as
	// errRunClosed. unhold lets the hold go. holdRetry and releaseRetry
	// do the same for data in the collector's retry (handBacks).
	hold(ctx context.Context, r *run) (string, error)
	unhold(r *run, hold string)
	holdRetry(runKey string, token int64)
	releaseRetry(runKey string, token int64)

	// create sends a run's create once for the fleet, through send (which
	// records the id on the run), or finds the id another collector got.
	// created says the create was this collector's own, to be counted and
	// logged.
	create(ctx context.Context, r *run, send func(context.Context) (string, error)) (id string, created bool, err error)

	// claimCloseOut says whether this collector closes the run out now.
	// shareEnd tells the fleet of an end found here (the idle janitor's).
	// quiet says no other collector holds the run's data; poll is how
	// often a close-out looks again. awaitLeases waits, within ctx, for
	// the pushes other collectors had in flight when the run was marked
	// closing. seenElsewhere says another collector took the run's data
	// within idle_timeout.
	claimCloseOut(r *run) claim
	shareEnd(ctx context.Context, r *run)
	quiet(r *run) bool
	poll() time.Duration
	awaitLeases(ctx context.Context, r *run)
	seenElsewhere(r *run) bool

	// pending returns the run's unconfirmed upload of object fp, if one
	// is known; nextRange takes a new sample_id range for step.
	// savePending and dropPending record an upload's progress and its
	// confirm (the run's pending cache already holds the change).
	pending(ctx context.Context, r *run, fp uint64) (platform.Object, bool)
	nextRange(ctx context.Context, r *run, step int64) int64
	savePending(ctx context.Context, r *run, fp uint64, obj platform.Object)
	dropPending(ctx context.Context, r *run, fp uint64)
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
func newFleet(cfg Config, deps Deps, ending func(r *run, end End)) fleet {
	if s, ok := deps.Store.(SharedStore); ok {
		return newRedisFleet(s, cfg, deps, ending)
	}
	return &solo{records: records{store: deps.Store, warn: deps.Warn, closing: savedClosed}}
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

func (s records) load(ctx context.Context) ([]SavedRun, error) { return s.store.Load(ctx) }

// save writes the run's record. A failed save is logged, not returned:
// the data was handled, and what is lost is only what a restart would
// remember.
func (s records) save(ctx context.Context, r *run) {
	if err := s.store.Save(ctx, r.snapshot(s.closing)); err != nil {
		s.warn.Warn("persist\x00"+r.ident.key(), "Could not save the run's state to storage; a restart may not remember it", zap.Stringer("run", r.ident), zap.Error(err))
	}
}

func (s records) delivered(ctx context.Context, r *run, step int64, fps []uint64) ([]bool, error) {
	return s.store.Delivered(ctx, r.ident.key(), step, fps)
}

func (s records) markDelivered(ctx context.Context, r *run, step int64, fps []uint64) error {
	return s.store.MarkDelivered(ctx, r.ident.key(), step, fps)
}

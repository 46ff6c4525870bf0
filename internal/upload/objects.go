package upload

import (
	"context"
	"slices"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/runstore"
)

// ObjectStore keeps each sample object's upload under a key of its own,
// by its run's key and its fingerprint: a restart, or another collector of
// a fleet, resumes it from there. ConfirmObject marks the object's
// episodes delivered and forgets it in one write. runstore's stores are
// ObjectStores; MemStore remembers nothing, so Objects keeps what is in
// flight itself.
type ObjectStore interface {
	// Delivered reports which fingerprints of step a sink committed
	// before; MarkDelivered records those it committed now. A store keeps
	// them by step (one value per step), so both name the step: an
	// episode's, or NoStep for what has none. ConfirmObject marks an
	// object's episodes in the same write that forgets it.
	Delivered(ctx context.Context, runKey string, step int64, fps []uint64) ([]bool, error)
	MarkDelivered(ctx context.Context, runKey string, step int64, fps []uint64) error
	Object(ctx context.Context, runKey string, fp uint64) (runstore.SavedObject, bool, error)
	// Resume is Delivered and Object in one call: a step's delivered
	// episodes, and the saved progress of the objects it is about to send
	// (those found only; nil when none is).
	Resume(ctx context.Context, runKey string, step int64, episodes, objects []uint64) ([]bool, map[uint64]runstore.SavedObject, error)
	SaveObject(ctx context.Context, runKey string, fp uint64, so runstore.SavedObject) error
	ConfirmObject(ctx context.Context, runKey string, fp uint64, step int64, episodes []uint64) error
	DropObject(ctx context.Context, runKey string, fp uint64) error
}

// ObjectRun is what an object's upload needs of its run: its platform id
// and store key, a new range for a step, and its close-out counts.
type ObjectRun interface {
	ID() string
	Key() string
	NextRange(ctx context.Context, step int64) int64
	Count(name string, n int64)
}

// Objects owns sample objects from their range to their confirm: resume
// reads what earlier attempts left of a step, Take gives an object its
// range (or resumes it), and Send takes it through the platform's two
// stages, writing its own key once it is PUT and its confirm with its
// episodes delivered. Two writes an object, of its own size, and nothing
// else: the run's record is not written.
type Objects struct {
	platform platform.Objects
	store    ObjectStore
	warn     *logonce.Logger
	// inflight is what this process knows of unconfirmed objects, so that
	// a retry resumes without a read, and without any store at all.
	inflight *lru.Cache[objectKey, platform.Object]
}

type objectKey struct {
	run string
	fp  uint64
}

// maxInflightObjects bounds the unconfirmed objects remembered in memory;
// past it the least recently touched is forgotten here, and read from the
// store when its retry comes.
const maxInflightObjects = 4096

// NewObjects returns the objects' owner over the platform's objects route
// and store.
func NewObjects(p platform.Objects, store ObjectStore, warn *logonce.Logger) *Objects {
	inflight, _ := lru.New[objectKey, platform.Object](maxInflightObjects) // errs only on a size < 1
	return &Objects{platform: p, store: store, warn: warn, inflight: inflight}
}

// Take returns object fp of step: where an earlier attempt left it (in
// this process, before a restart, or in another collector of the fleet),
// or new, with a range of its own, which nothing is written for: an
// object only exists for the platform once it is confirmed.
func (o *Objects) Take(ctx context.Context, r ObjectRun, fp uint64, step int64) platform.Object {
	return o.take(ctx, r, fp, step, nil)
}

// prior is what resume found of a step's objects: the fingerprints it
// asked for, and the progress saved of those found.
type prior struct {
	asked []uint64
	saved map[uint64]runstore.SavedObject
}

// resume reads, in one call to the store, which of step's episodes a sink
// committed before and what earlier attempts left of the objects it is
// about to send (fps), for take.
func (o *Objects) resume(ctx context.Context, r ObjectRun, step int64, episodes, fps []uint64) ([]bool, *prior, error) {
	delivered, saved, err := o.store.Resume(ctx, r.Key(), step, episodes, fps)
	if err != nil {
		return nil, nil, err
	}
	return delivered, &prior{asked: fps, saved: saved}, nil
}

// take is Take with what resume read: an object it asked for is not read
// again, and one it did not ask for (its step's episodes were cut anew,
// some of them delivered before) is read on its own.
func (o *Objects) take(ctx context.Context, r ObjectRun, fp uint64, step int64, read *prior) platform.Object {
	key := r.Key()
	k := objectKey{key, fp}
	if obj, ok := o.inflight.Get(k); ok {
		return obj
	}
	var so runstore.SavedObject
	var found bool
	if read != nil && slices.Contains(read.asked, fp) {
		so, found = read.saved[fp]
	} else {
		var err error
		so, found, err = o.store.Object(ctx, key, fp)
		found = found && err == nil
	}
	if found && (so.RunID == "" || so.RunID == r.ID()) {
		obj := objectOf(so)
		o.inflight.Add(k, obj)
		return obj
	}
	obj := platform.Object{Step: step, Range: r.NextRange(ctx, step)}
	o.inflight.Add(k, obj)
	return obj
}

// Delivered reports, for each fingerprint of step, whether a sink
// committed it before: a batch replayed by the queue after a restart, or
// by the collector's retry, must not put rows in the table twice.
func (o *Objects) Delivered(ctx context.Context, r ObjectRun, step int64, fps []uint64) ([]bool, error) {
	return o.store.Delivered(ctx, r.Key(), step, fps)
}

// markDelivered records fps of step as committed where no object's
// confirm did (Prime Traces documents, evaluation samples). A failed
// write is logged, not returned: the items landed, and what is lost is
// only what a replay after a restart would leave out.
func (o *Objects) markDelivered(ctx context.Context, r ObjectRun, step int64, fps []uint64) {
	if err := o.store.MarkDelivered(ctx, r.Key(), step, fps); err != nil {
		o.warn.Warn("delivered\x00"+r.ID(), msgNotMarked, zap.String("run_id", r.ID()), zap.Error(err))
	}
}

// msgNotMarked is the warning of a delivered marking storage refused.
const msgNotMarked = "Could not record delivered episodes in storage; a replay after a restart may upload them again"

// Send stores body as obj in the platform's two stages: the upload
// (presign when it has no URL still valid, then PUT) and the confirm.
// Once PUT, the object is saved under its key, before the confirm: from
// then on its key must not be forgotten, for a new key would land its
// rows twice, so a retry or a restart only confirms it again. What a
// failed upload got (a URL) is kept in memory only: losing it after a
// restart costs a presign, and orphans a URL. The confirm marks the
// episodes delivered and forgets the object. An object the platform
// refuses for good is forgotten too.
func (o *Objects) Send(ctx context.Context, r ObjectRun, fp uint64, obj platform.Object, body []byte, episodes []uint64) error {
	id, key := r.ID(), r.Key()
	k := objectKey{key, fp}
	for {
		next, done, err := o.platform.Advance(ctx, id, obj, body)
		if err != nil {
			if platform.Permanent(err) {
				o.inflight.Remove(k)
				_ = o.store.DropObject(ctx, key, fp)
			} else if next.URL != "" {
				o.inflight.Add(k, next) // its retry PUTs to the same URL
			}
			return err
		}
		if done {
			break
		}
		obj = next
		o.inflight.Add(k, obj)
		if !obj.Put {
			continue
		}
		if err := o.store.SaveObject(ctx, key, fp, savedObject(id, obj)); err != nil {
			o.warn.Warn("object\x00"+id, "Could not save a sample object's progress to storage; after a restart it is put again", zap.String("run_id", id), zap.Error(err))
		}
	}
	o.inflight.Remove(k)
	// A crash between the confirm and this write is the one window in
	// which a replayed batch can find these episodes undelivered; its
	// object, saved as put, is then only confirmed again.
	if err := o.store.ConfirmObject(ctx, key, fp, obj.Step, episodes); err != nil {
		o.warn.Warn("delivered\x00"+id, msgNotMarked, zap.String("run_id", id), zap.Error(err))
	}
	r.Count("sample_rows", int64(len(episodes)))
	r.Count("sample_objects", 1)
	r.Count("sample_bytes", int64(len(body)))
	return nil
}

// savedObject and objectOf convert an object's progress to its store
// record and back.
func savedObject(runID string, o platform.Object) runstore.SavedObject {
	return runstore.SavedObject{
		RunID: runID, Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key,
		PresignedAt: o.PresignedAt, ExpiresIn: int64(o.ExpiresIn / time.Second), Put: o.Put,
	}
}

func objectOf(o runstore.SavedObject) platform.Object {
	return platform.Object{
		Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key,
		PresignedAt: o.PresignedAt, ExpiresIn: time.Duration(o.ExpiresIn) * time.Second, Put: o.Put,
	}
}

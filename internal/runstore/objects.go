package runstore

import (
	"context"
	"encoding/json"
	"strconv"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// A sample object's upload is kept under a key of its own, apart from its
// run's record: the uploader writes it once the object is PUT, and its
// confirm deletes it in the batch that marks its episodes delivered. So an
// object costs two writes of its own size, whatever the run's size, and a
// restart or another collector resumes it by its fingerprint (Resume
// reads a step's objects with its delivered episodes). MemStore keeps none (nothing outlives the process there, and
// the uploader keeps the objects in flight); RedisStore keeps them in the
// run's pending hash (redis_pending.go).

// storeObjectPrefix keys an ExtensionStore's objects:
// object/<fingerprint, hex>/<run key>.
const storeObjectPrefix = "object/"

func objectKey(runKey string, fp uint64) string {
	return storeObjectPrefix + strconv.FormatUint(fp, 16) + "/" + runKey
}

// Object reads an unconfirmed upload. A damaged one is dropped with one
// line: its object is uploaded again under a new range, as if it had
// never started.
func (s *ExtensionStore) Object(ctx context.Context, runKey string, fp uint64) (SavedObject, bool, error) {
	key := objectKey(runKey, fp)
	raw, err := s.client.Get(ctx, key)
	if err != nil || raw == nil {
		return SavedObject{}, false, err
	}
	so, err := readSavedObject(raw)
	if err != nil {
		if s.client.Delete(ctx, key) == nil {
			s.opts.Logger.Warn("Pending upload "+fpField(fp)+" of "+runName(runKey)+" in storage is damaged ("+damageOf(err)+"): dropped; its object is uploaded again under a new sample_id range",
				zap.String("storage", s.opts.Name))
		}
		return SavedObject{}, false, nil
	}
	return so, true, nil
}

// SaveObject writes an upload's progress. A refusal (a full disk) is
// returned, not kept: what it costs is a second PUT of the object after a
// restart, under a new key, which the confirm it never had leaves out of
// the table.
func (s *ExtensionStore) SaveObject(ctx context.Context, runKey string, fp uint64, so SavedObject) error {
	body, err := json.Marshal(so)
	if err != nil {
		return err
	}
	err = s.client.Set(ctx, objectKey(runKey, fp), body)
	s.settle(ctx, err)
	return err
}

// ConfirmObject marks a confirmed object's episodes of step delivered and
// forgets the object, in one batch.
func (s *ExtensionStore) ConfirmObject(ctx context.Context, runKey string, fp uint64, step int64, fps []uint64) error {
	s.logMu.Lock()
	err := s.markLocked(ctx, runKey, step, fps, storage.DeleteOperation(objectKey(runKey, fp)))
	s.backlog.mark(runKey, step, fps, err)
	s.logMu.Unlock()
	s.settle(ctx, err)
	return nil
}

// DropObject forgets an upload the platform refused for good.
func (s *ExtensionStore) DropObject(ctx context.Context, runKey string, fp uint64) error {
	return s.client.Delete(ctx, objectKey(runKey, fp))
}

func (*MemStore) Object(context.Context, string, uint64) (SavedObject, bool, error) {
	return SavedObject{}, false, nil
}

func (*MemStore) SaveObject(context.Context, string, uint64, SavedObject) error { return nil }

func (m *MemStore) ConfirmObject(ctx context.Context, runKey string, _ uint64, step int64, fps []uint64) error {
	return m.MarkDelivered(ctx, runKey, step, fps)
}

func (*MemStore) DropObject(context.Context, string, uint64) error { return nil }

package runstore

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

const (
	storeIndexKey  = "runs"
	storeRunPrefix = "run/"
	// storeAsidePrefix keeps a damaged value that was left out, for a
	// post-mortem: damaged/<its key>.
	storeAsidePrefix = "damaged/"
)

// maxStoredDelivered bounds the delivered fingerprints one run keeps in
// storage (8 bytes each in a step's value). The set is what lets a replay
// after a crash or a retry skip episodes already confirmed; a replay
// reaches back a few batches, not a quarter of a million episodes, and
// without a bound a long run's set grew by its every episode. Past the
// bound the oldest steps are deleted, whole, a marking at a time.
const maxStoredDelivered = 1 << 18

// ExtensionStore is Store on a storage extension's client (e.g. the
// contrib file_storage). Runs are saved under run/<key> with an index of
// keys; a run's delivered episodes are a value per step
// (extension_delivered.go), so that marking them never rewrites the run's record.
//
// Damaged values (salvage.go, extension_repair.go) are recovered or left out with one log
// line each; a damaged index is rebuilt from a listing of the keys when
// the client can walk them. Writes that storage refuses (a full disk) are
// kept in memory, answered from there, and written with the next write
// storage takes (extension_backlog.go); the store reports them itself, so Save
// and MarkDelivered then return nil.
type ExtensionStore struct {
	client storage.Client
	opts   ExtensionOptions

	mu        sync.Mutex
	index     map[string]bool // run keys saved
	indexRead bool            // the saved index was read: a save may rewrite it

	logMu sync.Mutex // serialises markings: each rewrites its run's step index
	steps stepIndexes

	backlog  backlog
	flushing sync.Mutex // one write-back at a time
}

// ExtensionOptions are an ExtensionStore's log and health hook.
type ExtensionOptions struct {
	Logger *zap.Logger
	// Name is the storage extension, for log lines (file_storage).
	Name string
	// Health is told when storage stops taking writes (err) and when it
	// takes them again (nil), once per change.
	Health func(err error)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NewExtensionStore wraps a storage client.
func NewExtensionStore(client storage.Client, opts ExtensionOptions) *ExtensionStore {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Health == nil {
		opts.Health = func(error) {}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &ExtensionStore{client: client, opts: opts, index: map[string]bool{}, steps: newStepIndexes(), backlog: newBacklog()}
}

// Load returns every run saved before that can go on. A damaged record is
// salvaged (salvageRun) or left out, and a damaged index is read as far as
// it goes and completed from a listing of storage; each with one log line.
// Only a storage read that fails is an error.
func (s *ExtensionStore) Load(ctx context.Context) ([]SavedRun, error) {
	if err := s.migrate(ctx); err != nil {
		s.failedRead(err)
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rebuilt, err := s.readIndexLocked(ctx)
	if err != nil {
		s.failedRead(err)
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(s.index))
	ops := make([]*storage.Operation, len(keys))
	for i, k := range keys {
		ops[i] = storage.GetOperation(storeRunPrefix + k)
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		s.failedRead(err)
		return nil, err
	}
	var out []SavedRun
	var repairs []*storage.Operation
	for i, op := range ops {
		sr, repair, ok := s.readRecord(keys[i], op.Value)
		repairs = append(repairs, repair...)
		if !ok {
			delete(s.index, keys[i])
			continue
		}
		out = append(out, sr)
	}
	if rebuilt || len(repairs) > 0 {
		// Written once, so that the next start reads whole values and
		// says nothing; a failure leaves the next start to say it again.
		if idx, err := json.Marshal(slices.Sorted(maps.Keys(s.index))); err == nil {
			_ = s.client.Batch(ctx, append(repairs, storage.SetOperation(storeIndexKey, idx))...)
		}
	}
	return out, nil
}

// readIndexLocked reads the run index into s.index. A damaged index is
// read up to the damage and completed from a listing of the run records;
// rebuilt says it is to be written again.
func (s *ExtensionStore) readIndexLocked(ctx context.Context) (rebuilt bool, err error) {
	raw, err := s.client.Get(ctx, storeIndexKey)
	if err != nil {
		return false, err
	}
	keys, damage := salvageIndex(raw)
	if raw == nil {
		keys, damage = nil, ""
	}
	for _, k := range keys {
		s.index[k] = true
	}
	s.indexRead = true
	if damage == "" {
		return false, nil
	}
	listed, canList, err := s.walk(ctx, storeRunPrefix)
	switch {
	case err != nil:
		s.opts.Logger.Error("The run index in storage is damaged ("+damage+") and storage could not be listed: the runs after the damage are not restored, and their next data creates them again (a second run on the platform)",
			zap.String("storage", s.opts.Name), zap.Int("runs_read", len(keys)), zap.Error(err))
	case !canList:
		s.opts.Logger.Error("The run index in storage is damaged ("+damage+"): the runs after the damage are not restored, and their next data creates them again (a second run on the platform); this storage extension cannot list its keys to find them",
			zap.String("storage", s.opts.Name), zap.Int("runs_read", len(keys)))
	default:
		for k := range listed {
			s.index[strings.TrimPrefix(k, storeRunPrefix)] = true
		}
		s.opts.Logger.Warn("The run index in storage is damaged ("+damage+"): rebuilt from the run records in storage; no run is lost",
			zap.String("storage", s.opts.Name), zap.Int("runs_read", len(keys)), zap.Int("runs", len(s.index)))
	}
	return true, nil
}

// readRecord checks one stored record: ok with the run to restore, and
// the writes that repair storage (a salvaged record written whole again,
// or one left out moved aside under damaged/).
func (s *ExtensionStore) readRecord(key string, raw []byte) (SavedRun, []*storage.Operation, bool) {
	name := runName(key)
	if raw == nil {
		s.opts.Logger.Error("Run record of "+name+" is missing, though the run index names it: the run is left out, and its next data creates it again (a second run on the platform)",
			zap.String("storage", s.opts.Name), zap.String("storage_key", storeRunPrefix+key))
		return SavedRun{}, nil, false
	}
	sv := salvageRun(key, raw)
	switch {
	case sv.damage == "":
		return sv.sr, nil, true
	case !sv.resumable:
		fields := []zap.Field{zap.String("storage", s.opts.Name), zap.String("storage_key", storeRunPrefix+key), zap.String("damage", sv.damage)}
		if sv.sr.ID != "" {
			fields = append(fields, zap.String("run_id", sv.sr.ID))
		}
		s.opts.Logger.Error("Run record of "+name+" is damaged ("+sv.damage+"): the run is left out, and its next data creates it again (a second run on the platform); the damaged record is kept under "+storeAsidePrefix+storeRunPrefix+"<key>", fields...)
		return SavedRun{}, []*storage.Operation{
			storage.SetOperation(storeAsidePrefix+storeRunPrefix+key, raw),
			storage.DeleteOperation(storeRunPrefix + key),
		}, false
	}
	lost := "nothing"
	if len(sv.lost) > 0 {
		lost = strings.Join(sv.lost, "; ")
	}
	s.opts.Logger.Warn("Run record of "+name+" is damaged ("+sv.damage+"): the run goes on as run "+sv.sr.ID+"; lost: "+lost,
		zap.String("storage", s.opts.Name), zap.String("storage_key", storeRunPrefix+key), zap.String("run_id", sv.sr.ID))
	body, err := json.Marshal(sv.sr)
	if err != nil {
		return sv.sr, nil, true
	}
	return sv.sr, []*storage.Operation{storage.SetOperation(storeRunPrefix+key, body)}, true
}

// walk lists the keys under prefix with their values; canList is false
// when the client cannot walk its keys.
func (s *ExtensionStore) walk(ctx context.Context, prefix string) (found map[string][]byte, canList bool, err error) {
	w, ok := s.client.(storage.Walker)
	if !ok {
		return nil, false, nil
	}
	found = map[string][]byte{}
	err = w.Walk(ctx, func(key string, value []byte) ([]*storage.Operation, error) {
		if strings.HasPrefix(key, prefix) {
			found[key] = slices.Clone(value)
		}
		return nil, nil
	})
	return found, true, err
}

func (s *ExtensionStore) Save(ctx context.Context, sr SavedRun) error {
	body, err := json.Marshal(sr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	err = s.saveLocked(ctx, sr.Key, body)
	s.backlog.record(sr.Key, body, err)
	s.mu.Unlock()
	s.settle(ctx, err)
	return nil
}

// saveLocked writes a record, and the index when it is a new run's.
func (s *ExtensionStore) saveLocked(ctx context.Context, key string, body []byte) error {
	ops := []*storage.Operation{storage.SetOperation(storeRunPrefix+key, body)}
	if !s.indexRead {
		// Load could not read the index: a write without it would drop
		// every run it lists.
		if _, err := s.readIndexLocked(ctx); err != nil {
			return err
		}
	}
	if !s.index[key] {
		keys := append(slices.Collect(maps.Keys(s.index)), key)
		idx, err := json.Marshal(keys)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(storeIndexKey, idx))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return err
	}
	s.index[key] = true
	return nil
}

// Close writes what storage refused before, if it takes it now, and
// closes the client.
func (s *ExtensionStore) Close(ctx context.Context) error {
	s.backlog.close()
	s.flush(ctx)
	if runs, episodes := s.backlog.size(); runs+episodes > 0 {
		s.opts.Logger.Error("Shutting down with run state that storage did not take: a restart does not remember it (a run created meanwhile is created again, episodes delivered meanwhile may be uploaded again)",
			zap.String("storage", s.opts.Name), zap.Int("runs", runs), zap.Int("episodes", episodes))
	}
	return s.client.Close(ctx)
}

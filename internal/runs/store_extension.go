package runs

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

const (
	storeIndexKey  = "runs"
	storeRunPrefix = "run/"
	storeEpPrefix  = "delivered/"
	storeLogPrefix = "deliveredlog/"  // deliveredlog/<n>/<key>: a run's nth chunk
	storeLogHead   = "deliveredhead/" // deliveredhead/<key>: which chunks it holds
	// storeAsidePrefix keeps a damaged value that was left out, for a
	// post-mortem: damaged/<its key>.
	storeAsidePrefix = "damaged/"
)

// maxStoredDelivered bounds the delivered fingerprints one run keeps in
// storage (about 112 bytes each in file_storage: some 29 MB a run). The
// set is what lets a replay after a crash or a retry skip episodes already
// confirmed; a replay reaches back a few batches, not a quarter of a
// million episodes, and without a bound a long run's set grew by its every
// episode. Past the bound the oldest fingerprints are deleted, a marking
// at a time.
const maxStoredDelivered = 1 << 18

// ExtensionStore is Store on a storage extension's client (e.g. the
// contrib file_storage). Runs are saved under run/<key> with an index of
// keys; every delivered episode is a key of its own, so that marking one
// never rewrites the run's record.
//
// Each marking is also logged, as a chunk of its fingerprints under
// deliveredlog/<n>/<key>, with a header deliveredhead/<key> saying which
// chunks are held (the number first, so no key's text can make another's):
// the storage API lists keys only where the client can walk them
// (storage.Walker, as file_storage can), so the log is how the oldest
// fingerprints are found again to delete them (maxStoredDelivered).
// Fingerprints saved before the log existed are never pruned.
//
// Damaged values (store_salvage.go) are recovered or left out with one log
// line each; a damaged index or log header is rebuilt from a listing of
// the keys when the client can walk them. Writes that storage refuses (a
// full disk) are kept in memory, answered from there, and written with the
// next write storage takes (store_backlog.go); the store reports them
// itself, so Save and MarkDelivered then return nil.
type ExtensionStore struct {
	client storage.Client
	opts   ExtensionOptions

	mu        sync.Mutex
	index     map[string]bool // run keys saved
	indexRead bool            // the saved index was read: a save may rewrite it

	logMu sync.Mutex // serialises markings: each rewrites its run's header
	logs  map[string]deliveredLog

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

// deliveredLog is a run's header: chunks [First, Next) hold Held
// fingerprints.
type deliveredLog struct {
	First int64 `json:"first"`
	Next  int64 `json:"next"`
	Held  int64 `json:"held"`
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
	return &ExtensionStore{client: client, opts: opts, index: map[string]bool{}, logs: map[string]deliveredLog{}, backlog: newBacklog()}
}

// Load returns every run saved before that can go on. A damaged record is
// salvaged (salvageRun) or left out, and a damaged index is read as far as
// it goes and completed from a listing of storage; each with one log line.
// Only a storage read that fails is an error.
func (s *ExtensionStore) Load(ctx context.Context) ([]SavedRun, error) {
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

func episodeKey(runKey string, fp uint64) string {
	return storeEpPrefix + runKey + "/" + strconv.FormatUint(fp, 16)
}

// Delivered answers from storage and from the markings storage has not
// taken yet.
func (s *ExtensionStore) Delivered(ctx context.Context, runKey string, fps []uint64) ([]bool, error) {
	ops := make([]*storage.Operation, len(fps))
	for i, fp := range fps {
		ops[i] = storage.GetOperation(episodeKey(runKey, fp))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return nil, err
	}
	out := make([]bool, len(fps))
	for i, op := range ops {
		out[i] = op.Value != nil
	}
	s.backlog.delivered(runKey, fps, out)
	return out, nil
}

func (s *ExtensionStore) MarkDelivered(ctx context.Context, runKey string, fps []uint64) error {
	if len(fps) == 0 {
		return nil
	}
	s.logMu.Lock()
	err := s.markLocked(ctx, runKey, fps)
	s.backlog.mark(runKey, fps, err)
	s.logMu.Unlock()
	s.settle(ctx, err)
	return nil
}

// markLocked writes one marking: the fingerprints, a log chunk of them and
// the run's header, and deletes the oldest chunks' fingerprints past the
// bound.
func (s *ExtensionStore) markLocked(ctx context.Context, runKey string, fps []uint64) error {
	lg, err := s.deliveredLog(ctx, runKey)
	if err != nil {
		return err
	}
	next := lg
	next.Next++
	next.Held += int64(len(fps))
	// Deletes first: a fingerprint both pruned and marked again stays.
	var ops []*storage.Operation
	for next.Held > maxStoredDelivered && next.First < lg.Next {
		raw, err := s.client.Get(ctx, logChunkKey(runKey, next.First))
		if err != nil {
			return err
		}
		if len(raw)%8 != 0 {
			s.opts.Logger.Warn("Delivered log chunk "+strconv.FormatInt(next.First, 10)+" of "+runName(runKey)+" is damaged (truncated: "+strconv.Itoa(len(raw))+" bytes): its whole fingerprints are pruned, the rest stay in storage; no episode is uploaded twice",
				zap.String("storage", s.opts.Name), zap.String("storage_key", logChunkKey(runKey, next.First)))
		}
		for i := 0; i+8 <= len(raw); i += 8 {
			ops = append(ops, storage.DeleteOperation(episodeKey(runKey, binary.LittleEndian.Uint64(raw[i:]))))
		}
		ops = append(ops, storage.DeleteOperation(logChunkKey(runKey, next.First)))
		next.Held -= int64(len(raw) / 8)
		next.First++
	}
	chunk := make([]byte, 0, 8*len(fps))
	for _, fp := range fps {
		ops = append(ops, storage.SetOperation(episodeKey(runKey, fp), []byte{1}))
		chunk = binary.LittleEndian.AppendUint64(chunk, fp)
	}
	header, err := json.Marshal(next)
	if err != nil {
		return err
	}
	ops = append(ops, storage.SetOperation(logChunkKey(runKey, lg.Next), chunk), storage.SetOperation(storeLogHead+runKey, header))
	// One batch (one transaction in file_storage): a crash keeps the
	// header and the chunks it names in step.
	if err := s.client.Batch(ctx, ops...); err != nil {
		return err
	}
	s.logs[runKey] = next
	return nil
}

// deliveredLog returns a run's header, read from storage the first time
// (a restart continues the log where it stood). A damaged header is
// rebuilt.
func (s *ExtensionStore) deliveredLog(ctx context.Context, runKey string) (deliveredLog, error) {
	if lg, ok := s.logs[runKey]; ok {
		return lg, nil
	}
	raw, err := s.client.Get(ctx, storeLogHead+runKey)
	if err != nil {
		return deliveredLog{}, err
	}
	var lg deliveredLog
	if raw != nil {
		part, damage, ok := salvageLog(raw)
		lg = part
		if !ok {
			lg = s.rebuildLog(ctx, runKey, part, damage)
		}
	}
	s.logs[runKey] = lg
	return lg, nil
}

// rebuildLog makes a damaged header again from the run's chunks in
// storage. Without a listing it goes on past the chunks the damaged
// header still names: the fingerprints of older chunks stay delivered,
// but are no longer pruned.
func (s *ExtensionStore) rebuildLog(ctx context.Context, runKey string, part deliveredLog, damage string) deliveredLog {
	name := runName(runKey)
	chunks, canList, err := s.walk(ctx, storeLogPrefix)
	if err != nil || !canList {
		start := max(part.First, part.Next, 0)
		s.opts.Logger.Warn("Delivered log of "+name+" is damaged ("+damage+"): it starts again at chunk "+strconv.FormatInt(start, 10)+"; the episodes it logged before stay delivered, but are no longer pruned (at most 262,144 fingerprints of the run stay in storage for good)",
			zap.String("storage", s.opts.Name), zap.String("storage_key", storeLogHead+runKey))
		return deliveredLog{First: start, Next: start}
	}
	var lg deliveredLog
	n := 0
	for key, raw := range chunks {
		num, rest, _ := strings.Cut(strings.TrimPrefix(key, storeLogPrefix), "/")
		c, err := strconv.ParseInt(num, 10, 64)
		if err != nil || rest != runKey {
			continue
		}
		if n == 0 || c < lg.First {
			lg.First = c
		}
		lg.Next = max(lg.Next, c+1)
		lg.Held += int64(len(raw) / 8)
		n++
	}
	s.opts.Logger.Warn("Delivered log of "+name+" is damaged ("+damage+"): rebuilt from its "+strconv.Itoa(n)+" chunks in storage; nothing is lost",
		zap.String("storage", s.opts.Name), zap.String("storage_key", storeLogHead+runKey), zap.Int64("fingerprints", lg.Held))
	return lg
}

func logChunkKey(runKey string, n int64) string {
	return storeLogPrefix + strconv.FormatInt(n, 10) + "/" + runKey
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

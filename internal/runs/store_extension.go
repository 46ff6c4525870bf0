package runs

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

const (
	storeIndexKey  = "runs"
	storeRunPrefix = "run/"
	storeEpPrefix  = "delivered/"
	storeLogPrefix = "deliveredlog/"  // deliveredlog/<n>/<key>: a run's nth chunk
	storeLogHead   = "deliveredhead/" // deliveredhead/<key>: which chunks it holds
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
// chunks are held (the number first, so no key's text can make another's): the storage API cannot list keys, so the log is how the
// oldest fingerprints are found again to delete them (maxStoredDelivered).
// Fingerprints saved before the log existed are never pruned.
type ExtensionStore struct {
	client storage.Client

	mu    sync.Mutex
	index map[string]bool // run keys saved

	logMu sync.Mutex // serialises markings: each rewrites its run's header
	logs  map[string]deliveredLog
}

// deliveredLog is a run's header: chunks [First, Next) hold Held
// fingerprints.
type deliveredLog struct {
	First int64 `json:"first"`
	Next  int64 `json:"next"`
	Held  int64 `json:"held"`
}

// NewExtensionStore wraps a storage client.
func NewExtensionStore(client storage.Client) *ExtensionStore {
	return &ExtensionStore{client: client, index: map[string]bool{}, logs: map[string]deliveredLog{}}
}

func (s *ExtensionStore) Load(ctx context.Context) ([]SavedRun, error) {
	raw, err := s.client.Get(ctx, storeIndexKey)
	if err != nil || raw == nil {
		return nil, err
	}
	var keys []string
	if err := json.Unmarshal(raw, &keys); err != nil {
		return nil, fmt.Errorf("storage: run index: %w", err)
	}
	ops := make([]*storage.Operation, len(keys))
	for i, k := range keys {
		ops[i] = storage.GetOperation(storeRunPrefix + k)
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return nil, err
	}
	var out []SavedRun
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, op := range ops {
		if op.Value == nil {
			continue
		}
		var sr SavedRun
		if err := json.Unmarshal(op.Value, &sr); err != nil {
			return nil, fmt.Errorf("storage: run %q: %w", keys[i], err)
		}
		s.index[sr.Key] = true
		out = append(out, sr)
	}
	return out, nil
}

func (s *ExtensionStore) Save(ctx context.Context, sr SavedRun) error {
	body, err := json.Marshal(sr)
	if err != nil {
		return err
	}
	ops := []*storage.Operation{storage.SetOperation(storeRunPrefix+sr.Key, body)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.index[sr.Key] {
		keys := append(slices.Collect(maps.Keys(s.index)), sr.Key)
		idx, err := json.Marshal(keys)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(storeIndexKey, idx))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return err
	}
	s.index[sr.Key] = true
	return nil
}

func episodeKey(runKey string, fp uint64) string {
	return storeEpPrefix + runKey + "/" + strconv.FormatUint(fp, 16)
}

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
	return out, nil
}

func (s *ExtensionStore) MarkDelivered(ctx context.Context, runKey string, fps []uint64) error {
	if len(fps) == 0 {
		return nil
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
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
// (a restart continues the log where it stood).
func (s *ExtensionStore) deliveredLog(ctx context.Context, runKey string) (deliveredLog, error) {
	if lg, ok := s.logs[runKey]; ok {
		return lg, nil
	}
	var lg deliveredLog
	raw, err := s.client.Get(ctx, storeLogHead+runKey)
	if err != nil {
		return lg, err
	}
	if raw != nil {
		if err := json.Unmarshal(raw, &lg); err != nil {
			return lg, fmt.Errorf("storage: delivered log of %q: %w", runKey, err)
		}
	}
	s.logs[runKey] = lg
	return lg, nil
}

func logChunkKey(runKey string, n int64) string {
	return storeLogPrefix + strconv.FormatInt(n, 10) + "/" + runKey
}

func (s *ExtensionStore) Close(ctx context.Context) error { return s.client.Close(ctx) }

package runs

import (
	"context"
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
)

// ExtensionStore is Store on a storage extension's client (e.g. the
// contrib file_storage). Runs are saved under run/<key> with an index of
// keys; every delivered episode is a key of its own, so that marking one
// never rewrites the run's record.
type ExtensionStore struct {
	client storage.Client

	mu    sync.Mutex
	index map[string]bool // run keys saved
}

// NewExtensionStore wraps a storage client.
func NewExtensionStore(client storage.Client) *ExtensionStore {
	return &ExtensionStore{client: client, index: map[string]bool{}}
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
	ops := make([]*storage.Operation, len(fps))
	for i, fp := range fps {
		ops[i] = storage.SetOperation(episodeKey(runKey, fp), []byte{1})
	}
	return s.client.Batch(ctx, ops...)
}

func (s *ExtensionStore) Close(ctx context.Context) error { return s.client.Close(ctx) }

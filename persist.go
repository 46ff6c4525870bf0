package primeexporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// runStore keeps what the registry must remember about a run across a
// collector restart: identity → platform run id, whether it ended or was
// closed, its sample_id range counters, its unconfirmed uploads, and which
// episodes it already delivered. Without a storage extension it remembers
// nothing (memStore), and a restart costs what the start-up log says.
type runStore interface {
	// load returns every run saved before.
	load(ctx context.Context) ([]persistedRun, error)
	// save replaces one run's record.
	save(ctx context.Context, pr persistedRun) error
	// delivered reports, for each episode fingerprint, whether it was
	// confirmed before.
	delivered(ctx context.Context, runKey string, fps []uint64) ([]bool, error)
	// markDelivered records confirmed episodes.
	markDelivered(ctx context.Context, runKey string, fps []uint64) error
	close(ctx context.Context) error
}

// persistedRun is one run's record in storage. It is small: the counters
// and unconfirmed uploads, not the delivered set, which has a key per
// episode.
type persistedRun struct {
	Key      string `json:"key"`
	Source   string `json:"source"`
	Value    string `json:"value"`
	Attach   bool   `json:"attach,omitempty"`
	ID       string `json:"id,omitempty"`
	State    string `json:"state,omitempty"` // "", "ending", "closed"
	EndState string `json:"end_status,omitempty"`
	EndWhy   string `json:"end_reason,omitempty"`
	// Ranges is the next sequential sample_id range per step.
	Ranges map[string]int64 `json:"ranges,omitempty"`
	// Pending are uploads with a key but no confirm yet, by object
	// fingerprint.
	Pending map[string]persistedObject `json:"pending,omitempty"`
}

type persistedObject struct {
	Step        int64     `json:"step"`
	Range       int64     `json:"range"`
	URL         string    `json:"url,omitempty"`
	Key         string    `json:"key,omitempty"`
	PresignedAt time.Time `json:"presigned_at,omitzero"`
	ExpiresIn   int64     `json:"expires_in_s,omitempty"`
	Put         bool      `json:"put,omitempty"`
}

const (
	storeIndexKey  = "runs"
	storeRunPrefix = "run/"
	storeEpPrefix  = "delivered/"
)

// extensionStore is runStore on a storage extension's client (e.g. the
// contrib file_storage).
type extensionStore struct {
	client storage.Client

	mu    sync.Mutex
	index map[string]bool // run keys saved
}

func newExtensionStore(client storage.Client) *extensionStore {
	return &extensionStore{client: client, index: map[string]bool{}}
}

func (s *extensionStore) load(ctx context.Context) ([]persistedRun, error) {
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
	var out []persistedRun
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, op := range ops {
		if op.Value == nil {
			continue
		}
		var pr persistedRun
		if err := json.Unmarshal(op.Value, &pr); err != nil {
			return nil, fmt.Errorf("storage: run %q: %w", keys[i], err)
		}
		s.index[pr.Key] = true
		out = append(out, pr)
	}
	return out, nil
}

func (s *extensionStore) save(ctx context.Context, pr persistedRun) error {
	body, err := json.Marshal(pr)
	if err != nil {
		return err
	}
	ops := []*storage.Operation{storage.SetOperation(storeRunPrefix+pr.Key, body)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.index[pr.Key] {
		keys := make([]string, 0, len(s.index)+1)
		for k := range s.index {
			keys = append(keys, k)
		}
		keys = append(keys, pr.Key)
		idx, err := json.Marshal(keys)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(storeIndexKey, idx))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return err
	}
	s.index[pr.Key] = true
	return nil
}

func episodeKey(runKey string, fp uint64) string {
	return storeEpPrefix + runKey + "/" + strconv.FormatUint(fp, 16)
}

func (s *extensionStore) delivered(ctx context.Context, runKey string, fps []uint64) ([]bool, error) {
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

func (s *extensionStore) markDelivered(ctx context.Context, runKey string, fps []uint64) error {
	ops := make([]*storage.Operation, len(fps))
	for i, fp := range fps {
		ops[i] = storage.SetOperation(episodeKey(runKey, fp), []byte{1})
	}
	return s.client.Batch(ctx, ops...)
}

func (s *extensionStore) close(ctx context.Context) error { return s.client.Close(ctx) }

// memStore is the store without a storage extension: the delivered set
// lives in memory (bounded) and nothing survives a restart.
type memStore struct {
	mu    sync.Mutex
	seen  map[string]struct{}
	order []string
}

// maxMemDelivered bounds the in-memory delivered set; past it the oldest is
// forgotten, which at worst lets a replay of a very old batch through.
const maxMemDelivered = 1 << 18

func newMemStore() *memStore { return &memStore{seen: map[string]struct{}{}} }

func (*memStore) load(context.Context) ([]persistedRun, error) { return nil, nil }
func (*memStore) save(context.Context, persistedRun) error     { return nil }
func (*memStore) close(context.Context) error                  { return nil }

func (m *memStore) delivered(_ context.Context, runKey string, fps []uint64) ([]bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]bool, len(fps))
	for i, fp := range fps {
		_, out[i] = m.seen[episodeKey(runKey, fp)]
	}
	return out, nil
}

func (m *memStore) markDelivered(_ context.Context, runKey string, fps []uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, fp := range fps {
		k := episodeKey(runKey, fp)
		if _, ok := m.seen[k]; ok {
			continue
		}
		m.seen[k] = struct{}{}
		m.order = append(m.order, k)
		if len(m.order) > maxMemDelivered {
			delete(m.seen, m.order[0])
			m.order = m.order[1:]
		}
	}
	return nil
}

// errNotStorage says the configured extension cannot store anything.
func errNotStorage(name string) error {
	return errors.New("storage: extension " + name + " is not a storage extension")
}

package runstore

import (
	"context"
	"sync"
)

// maxMemDelivered bounds the in-memory delivered set: it keeps the newest
// fingerprints in two generations of half this many, and forgets the older
// generation whole when the newer fills. A replay checks what was delivered
// moments to minutes before (the batches a retry or a restart hands back),
// which the newest quarter million episodes cover; an older replay at
// worst lets its episodes through again.
const maxMemDelivered = 1 << 18

// MemStore is the store without a storage extension: the delivered set
// lives in memory, bounded, and nothing survives a restart. The sets are
// per run and keyed by the bare fingerprint, and a generation is a plain
// map: a lookup hashes one uint64, where an LRU keyed by (run, fingerprint)
// hashed the run's key and relinked a list on every episode.
type MemStore struct {
	mu  sync.Mutex
	cur map[string]map[uint64]struct{} // run key → fingerprints, the newer generation
	old map[string]map[uint64]struct{}
	n   int // fingerprints in cur
}

// NewMemStore returns an empty in-memory store.
func NewMemStore() *MemStore {
	return &MemStore{cur: map[string]map[uint64]struct{}{}, old: map[string]map[uint64]struct{}{}}
}

func (*MemStore) Load(context.Context) ([]SavedRun, error) { return nil, nil }
func (*MemStore) Save(context.Context, SavedRun) error     { return nil }
func (*MemStore) Close(context.Context) error              { return nil }

// Delivered and MarkDelivered keep no steps: the set is in memory, and
// bounded by count.
func (m *MemStore) Delivered(_ context.Context, runKey string, _ int64, fps []uint64) ([]bool, error) {
	out := make([]bool, len(fps))
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, old := m.cur[runKey], m.old[runKey]
	for i, fp := range fps {
		_, inCur := cur[fp]
		_, inOld := old[fp]
		out[i] = inCur || inOld
	}
	return out, nil
}

func (m *MemStore) MarkDelivered(_ context.Context, runKey string, _ int64, fps []uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, fp := range fps {
		if m.n >= maxMemDelivered/2 {
			m.old, m.cur, m.n = m.cur, map[string]map[uint64]struct{}{}, 0
		}
		set, ok := m.cur[runKey]
		if !ok {
			// Sized as the run's older generation: growing from nothing
			// rehashed its way to a hundred thousand fingerprints.
			set = make(map[uint64]struct{}, len(m.old[runKey]))
			m.cur[runKey] = set
		}
		if _, dup := set[fp]; !dup {
			set[fp] = struct{}{}
			m.n++
		}
	}
	return nil
}

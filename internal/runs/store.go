package runs

import (
	"context"
	"sync"
	"time"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// Store keeps what the registry must remember about a run across a
// collector restart: identity → platform run id, whether it ended or was
// closed, its sample_id range counters, its unconfirmed uploads, and which
// episodes it already delivered. MemStore remembers nothing across a
// restart; ExtensionStore keeps it in a storage extension.
type Store interface {
	// Load returns every run saved before.
	Load(ctx context.Context) ([]SavedRun, error)
	// Save replaces one run's record.
	Save(ctx context.Context, sr SavedRun) error
	// Delivered reports, for each fingerprint of an episode of step,
	// whether it was confirmed before.
	Delivered(ctx context.Context, runKey string, step int64, fps []uint64) ([]bool, error)
	// MarkDelivered records confirmed episodes of step.
	MarkDelivered(ctx context.Context, runKey string, step int64, fps []uint64) error
	Close(ctx context.Context) error
}

// SavedRun is one run's record in a store. It is small: the counters and
// unconfirmed uploads, not the delivered set, which has a value per step.
type SavedRun struct {
	Key      string `json:"key"`
	Source   string `json:"source"`
	Value    string `json:"value"`
	Attach   bool   `json:"attach,omitempty"`
	ID       string `json:"id,omitempty"`
	Team     string `json:"team,omitempty"`
	State    string `json:"state,omitempty"` // "", "ending", "closed"
	EndState string `json:"end_status,omitempty"`
	EndWhy   string `json:"end_reason,omitempty"`
	// Traces is the run's Prime Traces routing state.
	Traces tracesState `json:"traces,omitzero"`
	// SeenAt is when any collector last took data for the run; only a
	// shared store keeps it.
	SeenAt time.Time `json:"-"`
	// Ranges is the next sequential sample_id range per step.
	Ranges map[string]int64 `json:"ranges,omitempty"`
	// Pending are uploads with a range but no confirm yet, by object
	// fingerprint (hex).
	Pending map[string]SavedObject `json:"pending,omitempty"`
	// Eval is an evaluation's config and summary.
	Eval *SavedEval `json:"eval,omitempty"`
}

// SharedStore is a Store that several collectors use at once (RedisStore).
// Beyond a Store it gives what a fleet needs to agree on a run without a
// lock service: the record another collector left for an identity, claims
// that expire (one collector creates, one closes out), a shared counter
// (sample_id ranges), holds (a run's data in flight anywhere, which its
// close-out waits for) and pending uploads any collector can resume.
// Save merges rather than replaces: a state only moves forward, an id or
// an end once written stays.
type SharedStore interface {
	Store
	// Hold returns the run's record as the fleet left it (found is false
	// before any collector saved one) and, unless hold is "" or the run is
	// closing or closed, registers hold for ttl or until Unhold; held says
	// whether it did. A hold's first letter is its kind: HoldLease or
	// HoldRetry.
	Hold(ctx context.Context, runKey, hold string, ttl time.Duration) (sr SavedRun, found, held bool, err error)
	Unhold(ctx context.Context, runKey, hold string) error
	// Holds counts the run's live holds by kind: those not expired whose
	// collector's heartbeat (Alive) has not lapsed.
	Holds(ctx context.Context, runKey string) (leases, retries int, err error)
	// Alive renews the heartbeat of owner for ttl. Hold renews it too.
	Alive(ctx context.Context, owner string, ttl time.Duration) error
	// Claim takes name for owner until ttl passes or Unclaim; false when
	// someone else holds it.
	Claim(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)
	// Unclaim lets name go if owner still holds it.
	Unclaim(ctx context.Context, name, owner string) error
	// Next adds one to one of the run's counters and returns it (1 first).
	Next(ctx context.Context, runKey, counter string) (int64, error)
	// Pending returns the run's unconfirmed upload of object fp.
	Pending(ctx context.Context, runKey string, fp uint64) (SavedObject, bool, error)
	SavePending(ctx context.Context, runKey string, fp uint64, so SavedObject) error
	DropPending(ctx context.Context, runKey string, fp uint64) error
}

// Kinds of holds, the first letter of a hold's name.
const (
	HoldLease = 'l' // a push holds a lease on the run
	HoldRetry = 'r' // a push handed the run's data back to the collector's retry
)

// SavedObject is a pending upload in a store.
type SavedObject struct {
	Step        int64     `json:"step"`
	Range       int64     `json:"range"`
	URL         string    `json:"url,omitempty"`
	Key         string    `json:"key,omitempty"`
	PresignedAt time.Time `json:"presigned_at,omitzero"`
	ExpiresIn   int64     `json:"expires_in_s,omitempty"`
	Put         bool      `json:"put,omitempty"`
}

func savedObject(o platform.Object) SavedObject {
	return SavedObject{
		Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key,
		PresignedAt: o.PresignedAt, ExpiresIn: int64(o.ExpiresIn / time.Second), Put: o.Put,
	}
}

func (o SavedObject) object() platform.Object {
	return platform.Object{
		Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key,
		PresignedAt: o.PresignedAt, ExpiresIn: time.Duration(o.ExpiresIn) * time.Second, Put: o.Put,
	}
}

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

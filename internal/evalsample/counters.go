package evalsample

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// DefaultCounterLimit is how many examples Counters remembers unless told
// otherwise: well above the examples of the largest common benchmarks,
// a few MB at most.
const DefaultCounterLimit = 1 << 17

// maxKeyBytes: an example_id longer than this (a long string idx) is
// remembered by its hash, so a counter's memory stays bounded per key.
const maxKeyBytes = 64

// Counters numbers an evaluation's rollouts per example: the n-th episode
// of an example_id has rollout_number n, across all the batches the
// evaluation's episodes arrive in, as the SDK's build_samples numbers them
// with the dict its caller carries. The caller keeps one per evaluation.
// It is safe for concurrent use, and remembers at most its limit of
// examples: past it, the example numbered least recently is forgotten, and
// numbered from 1 again should it come back. A nil *Counters remembers
// nothing (every rollout is number 1). The zero value has the default
// limit.
type Counters struct {
	mu    sync.Mutex
	limit int
	lru   *simplelru.LRU[string, int64]
}

// NewCounters is a Counters remembering at most limit examples
// (DefaultCounterLimit when limit <= 0).
func NewCounters(limit int) *Counters {
	return &Counters{limit: limit}
}

// init makes the LRU; c.mu is held.
func (c *Counters) init() {
	if c.lru != nil {
		return
	}
	if c.limit <= 0 {
		c.limit = DefaultCounterLimit
	}
	c.lru, _ = simplelru.NewLRU[string, int64](c.limit, nil) // fails only for a size <= 0
}

// Next is the next rollout number of the example whose example_id has the
// JSON text exampleID ("7", "null").
func (c *Counters) Next(exampleID string) int64 {
	if c == nil {
		return 1
	}
	key := counterKey(exampleID)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	n, _ := c.lru.Get(key)
	n++
	c.lru.Add(key, n)
	return n
}

// Len is how many examples are remembered.
func (c *Counters) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru == nil {
		return 0
	}
	return c.lru.Len()
}

// counterKey is the example's key: its JSON text, or, when that is long,
// "#" and its hash (JSON text never starts with "#").
func counterKey(exampleID string) string {
	if len(exampleID) <= maxKeyBytes {
		return exampleID
	}
	return "#" + strconv.FormatUint(xxhash.Sum64String(exampleID), 16)
}

// counted is one example's count in Counters' JSON.
type counted struct {
	Key string `json:"k"`
	N   int64  `json:"n"`
}

// MarshalJSON gives the counts, least recently numbered first, so that an
// evaluation's numbering survives a restart (UnmarshalJSON).
func (c *Counters) MarshalJSON() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []counted{}
	if c.lru != nil {
		for _, k := range c.lru.Keys() {
			n, _ := c.lru.Peek(k)
			out = append(out, counted{k, n})
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON replaces the counts with those MarshalJSON gave; past the
// limit, the least recently numbered are dropped.
func (c *Counters) UnmarshalJSON(b []byte) error {
	var in []counted
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("evalsample: rollout counters: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru = nil
	c.init()
	for _, e := range in {
		c.lru.Add(e.Key, e.N)
	}
	return nil
}

package runstore

import (
	"slices"
	"sync"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// The runs' delivered indexes in memory: read whole at a run's first use
// (some 24 bytes a part), so that a check reads only its step's parts.

// runSteps is a run's index in memory: its chunks' parts, the chunks in
// order, the fingerprints they hold, and the legacy fingerprints (nil
// when it holds none). The markings (under logMu) change it under
// stepIndexes.mu; Delivered reads it under that mutex.
type runSteps struct {
	chunks map[int64][]stepPart
	order  []int64
	held   int64
	legacy []uint64
}

func newRunSteps(parts []stepPart) *runSteps {
	rs := &runSteps{chunks: map[int64][]stepPart{}}
	for _, p := range parts {
		c := chunkOf(p.step)
		if _, ok := rs.chunks[c]; !ok {
			rs.order = append(rs.order, c)
		}
		rs.chunks[c] = append(rs.chunks[c], p)
		rs.held += p.n
	}
	slices.Sort(rs.order)
	for _, c := range rs.order {
		slices.SortFunc(rs.chunks[c], cmpPart)
	}
	return rs
}

// all is the run's whole index.
func (rs *runSteps) all() *deliveredIndex {
	var parts []stepPart
	for _, c := range rs.order {
		parts = append(parts, rs.chunks[c]...)
	}
	return newDeliveredIndex(parts)
}

// writes are the values of the whole index.
func (rs *runSteps) writes(runKey string) []*storage.Operation {
	ops := []*storage.Operation{storage.SetOperation(storeStepIndex+runKey, encodeHeader(rs.order))}
	for _, c := range rs.order {
		ops = append(ops, storage.SetOperation(chunkKey(runKey, c), newDeliveredIndex(rs.chunks[c]).encode()))
	}
	return ops
}

// stepIndexes are the runs' indexes read so far.
type stepIndexes struct {
	mu       sync.Mutex
	runs     map[string]*runSteps
	reported map[string]bool // damaged parts said once
}

func newStepIndexes() stepIndexes {
	return stepIndexes{runs: map[string]*runSteps{}, reported: map[string]bool{}}
}

// run is the run's index, nil before its first use; only a marking (under
// logMu) may read it without the mutex.
func (c *stepIndexes) run(runKey string) *runSteps {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[runKey]
}

// lookup copies the parts of step and the legacy fingerprints; ok is
// false before the run's first use.
func (c *stepIndexes) lookup(runKey string, step int64) (parts []stepPart, legacy []uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.runs[runKey]
	if rs == nil {
		return nil, nil, false
	}
	_, ps := (&deliveredIndex{parts: rs.chunks[chunkOf(step)]}).of(step)
	return slices.Clone(ps), rs.legacy, true
}

func (c *stepIndexes) put(runKey string, rs *runSteps) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[runKey] = rs
}

// change applies a written change to a run's index.
func (c *stepIndexes) change(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
}

// once is true the first time key is reported.
func (c *stepIndexes) once(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reported[key] {
		return false
	}
	c.reported[key] = true
	return true
}

package runstore

import (
	"bytes"
	"context"
	"slices"
	"strconv"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// Repair of a run's delivered values: a damaged part keeps its whole
// fingerprints and its damaged value is kept aside under damaged/; a
// damaged index is rebuilt from a listing of the run's parts. Each with
// one log line, and the collector goes on (the package doc, Damage).

// damagedPart reports a damaged part once and returns the write that
// keeps it aside, under damaged/<its key>; the caller writes what is left
// of it in its place.
func (s *ExtensionStore) damagedPart(runKey string, p stepPart, raw []byte, damage string, kept int) []*storage.Operation {
	key := stepPartKey(runKey, p.step, p.part)
	if s.steps.once(key) {
		step := "step " + strconv.FormatInt(p.step, 10)
		if p.step == legacyStep {
			step = "an earlier release"
		}
		s.opts.Logger.Warn("Delivered episodes of "+step+" of "+runName(runKey)+" in storage are damaged ("+damage+"): its "+strconv.Itoa(kept)+" whole fingerprints are kept, the damaged value is kept under "+storeAsidePrefix+key+"; a replay of an episode whose fingerprint was lost may upload it again",
			zap.String("storage", s.opts.Name), zap.String("storage_key", key))
	}
	return []*storage.Operation{storage.SetOperation(storeAsidePrefix+key, raw)}
}

// repairPart writes what is left of a damaged part in its place, with its
// chunk of the index, and returns its fingerprints. Another reader may
// have repaired it first.
func (s *ExtensionStore) repairPart(ctx context.Context, runKey string, p stepPart, raw []byte, damage string) []uint64 {
	have := readPart(raw)
	s.logMu.Lock()
	defer s.logMu.Unlock()
	key := stepPartKey(runKey, p.step, p.part)
	cur, err := s.client.Get(ctx, key)
	rs := s.steps.run(runKey)
	if err != nil || !bytes.Equal(cur, raw) || rs == nil {
		return have
	}
	ops, fixed := s.fixPart(runKey, rs, p, raw, damage, have)
	if s.client.Batch(ctx, ops...) == nil {
		s.steps.change(fixed)
	}
	return have
}

// fixPart returns the writes that put what is left of a damaged part in
// its place, and the change to the run's index once they are written.
func (s *ExtensionStore) fixPart(runKey string, rs *runSteps, p stepPart, raw []byte, damage string, have []uint64) ([]*storage.Operation, func()) {
	key := stepPartKey(runKey, p.step, p.part)
	ops := s.damagedPart(runKey, p, raw, damage, len(have))
	c := chunkOf(p.step)
	parts := slices.Clone(rs.chunks[c])
	i := slices.IndexFunc(parts, func(q stepPart) bool { return q.step == p.step && q.part == p.part })
	if i < 0 {
		return ops, func() {}
	}
	held := rs.held - parts[i].n + int64(len(have))
	if len(have) == 0 {
		parts = slices.Delete(parts, i, i+1)
		ops = append(ops, storage.DeleteOperation(key))
	} else {
		parts[i].n = int64(len(have))
		ops = append(ops, storage.SetOperation(key, encodePart(have)))
	}
	// A chunk left empty stays, empty, until a marking prunes past it.
	ops = append(ops, storage.SetOperation(chunkKey(runKey, c), newDeliveredIndex(parts).encode()))
	return ops, func() { rs.chunks[c], rs.held = parts, held }
}

// rebuildSteps makes a damaged index again from a listing of the run's
// parts. Without a listing it starts again empty: the parts written
// before are no longer read, nor pruned.
func (s *ExtensionStore) rebuildSteps(ctx context.Context, runKey, damage string) *runSteps {
	name := runName(runKey)
	found, canList, err := s.walk(ctx, storeStepPrefix)
	if err != nil || !canList {
		s.opts.Logger.Error("Delivered index of "+name+" in storage is damaged ("+damage+") and storage cannot be listed: it starts again empty; a replay of an episode delivered before may upload it again",
			zap.String("storage", s.opts.Name), zap.String("storage_key", storeStepIndex+runKey))
		rs := newRunSteps(nil)
		_ = s.client.Batch(ctx, rs.writes(runKey)...)
		return rs
	}
	var parts []stepPart
	for key, raw := range found {
		rk, step, part, ok := parseStepPartKey(key)
		if !ok || rk != runKey || len(raw) < 8 {
			continue
		}
		parts = append(parts, stepPart{step: step, part: part, n: int64(min(len(raw)/8, maxPartFingerprints))})
	}
	rs := newRunSteps(parts)
	_ = s.client.Batch(ctx, rs.writes(runKey)...)
	s.opts.Logger.Warn("Delivered index of "+name+" in storage is damaged ("+damage+"): rebuilt from its "+strconv.Itoa(len(parts))+" parts in storage; nothing is lost",
		zap.String("storage", s.opts.Name), zap.String("storage_key", storeStepIndex+runKey), zap.Int64("fingerprints", rs.held))
	return rs
}

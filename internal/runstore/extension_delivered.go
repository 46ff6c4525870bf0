package runstore

import (
	"context"
	"slices"
	"strconv"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// An ExtensionStore's delivered marks: Delivered reads the step's parts
// (one Get for a step of fewer than maxPartFingerprints episodes);
// MarkDelivered rewrites the step's last part and its chunk of the index
// in one batch, pruning the run's oldest steps past maxStoredDelivered
// (extension_index.go has the format).

// Delivered answers from the step's parts in storage, the run's legacy
// fingerprints and the markings storage has not taken yet.
func (s *ExtensionStore) Delivered(ctx context.Context, runKey string, step int64, fps []uint64) ([]bool, error) {
	out := make([]bool, len(fps))
	if len(fps) == 0 {
		return out, nil
	}
	parts, legacy, ok := s.steps.lookup(runKey, step)
	if !ok {
		s.logMu.Lock()
		_, err := s.runStepsLocked(ctx, runKey)
		s.logMu.Unlock()
		if err != nil {
			return nil, err
		}
		parts, legacy, _ = s.steps.lookup(runKey, step)
	}
	if len(parts) > 0 {
		ops := make([]*storage.Operation, len(parts))
		for i, p := range parts {
			ops[i] = storage.GetOperation(stepPartKey(runKey, step, p.part))
		}
		if err := s.client.Batch(ctx, ops...); err != nil {
			return nil, err
		}
		for j, op := range ops {
			raw := op.Value
			if damage := partDamage(raw); damage != "" {
				have := s.repairPart(ctx, runKey, parts[j], raw, damage)
				for i, fp := range fps {
					_, found := slices.BinarySearch(have, fp)
					out[i] = out[i] || found
				}
				continue
			}
			for i, fp := range fps {
				out[i] = out[i] || partHas(raw, fp)
			}
		}
	}
	if legacy != nil {
		for i, fp := range fps {
			_, found := slices.BinarySearch(legacy, fp)
			out[i] = out[i] || found
		}
	}
	s.backlog.delivered(runKey, step, fps, out)
	return out, nil
}

func (s *ExtensionStore) MarkDelivered(ctx context.Context, runKey string, step int64, fps []uint64) error {
	if len(fps) == 0 {
		return nil
	}
	s.logMu.Lock()
	err := s.markLocked(ctx, runKey, step, fps)
	s.backlog.mark(runKey, step, fps, err)
	s.logMu.Unlock()
	s.settle(ctx, err)
	return nil
}

// markLocked writes one marking: the step's last part with the new
// fingerprints merged in (new parts past maxPartFingerprints) and the
// step's chunk of the index, deleting the oldest parts past the bound
// (and the header, when a chunk comes or goes). also go in the same batch:
// an object's confirm forgets the object with its marking.
func (s *ExtensionStore) markLocked(ctx context.Context, runKey string, step int64, fps []uint64, also ...*storage.Operation) error {
	rs, err := s.runStepsLocked(ctx, runKey)
	if err != nil {
		return err
	}
	merged := slices.Compact(slices.Sorted(slices.Values(fps)))
	var ops []*storage.Operation
	c := chunkOf(step)
	cur := rs.chunks[c]
	at, parts := (&deliveredIndex{parts: cur}).of(step)
	first := int64(0) // the first part written
	if len(parts) > 0 {
		last := parts[len(parts)-1]
		first = last.part + 1
		if last.n < maxPartFingerprints {
			first = last.part
			key := stepPartKey(runKey, step, last.part)
			raw, err := s.client.Get(ctx, key)
			if err != nil {
				return err
			}
			have := readPart(raw)
			if damage := partDamage(raw); damage != "" {
				ops = append(ops, s.damagedPart(runKey, last, raw, damage, len(have))...)
			}
			merged = mergeSorted(have, merged)
		}
	}
	held := rs.held
	chunk := make([]stepPart, 0, len(cur)+1)
	chunk = append(chunk, cur[:at]...)
	for _, p := range parts {
		if p.part < first {
			chunk = append(chunk, p)
		} else {
			held -= p.n
		}
	}
	for p := first; len(merged) > 0; p++ {
		n := min(len(merged), maxPartFingerprints)
		ops = append(ops, storage.SetOperation(stepPartKey(runKey, step, p), encodePart(merged[:n])))
		chunk = append(chunk, stepPart{step: step, part: p, n: int64(n)})
		held += int64(n)
		merged = merged[n:]
	}
	chunk = append(chunk, cur[at+len(parts):]...)
	changed := map[int64][]stepPart{c: chunk}
	order := rs.order
	if _, ok := rs.chunks[c]; !ok {
		order = append(slices.Clone(order), c)
		slices.Sort(order)
	}
	// Past the bound the oldest parts go, whole, never one just written.
	for _, oc := range order {
		if held <= maxStoredDelivered {
			break
		}
		ps, ok := changed[oc]
		if !ok {
			ps = rs.chunks[oc]
		}
		keep := ps[:0:0]
		for _, p := range ps {
			if held > maxStoredDelivered && !(p.step == step && p.part >= first) {
				ops = append(ops, storage.DeleteOperation(stepPartKey(runKey, p.step, p.part)))
				held -= p.n
				continue
			}
			keep = append(keep, p)
		}
		if len(keep) != len(ps) {
			changed[oc] = keep
		}
	}
	newOrder := order
	for oc, ps := range changed {
		if len(ps) == 0 {
			ops = append(ops, storage.DeleteOperation(chunkKey(runKey, oc)))
			newOrder = slices.DeleteFunc(slices.Clone(newOrder), func(x int64) bool { return x == oc })
		} else {
			ops = append(ops, storage.SetOperation(chunkKey(runKey, oc), newDeliveredIndex(ps).encode()))
		}
	}
	if !slices.Equal(newOrder, rs.order) {
		ops = append(ops, storage.SetOperation(storeStepIndex+runKey, encodeHeader(newOrder)))
	}
	// One batch (one transaction in file_storage): a crash keeps the
	// index and the parts it names in step.
	ops = append(ops, also...)
	if err := s.client.Batch(ctx, ops...); err != nil {
		return err
	}
	s.steps.change(func() {
		for oc, ps := range changed {
			if len(ps) == 0 {
				delete(rs.chunks, oc)
			} else {
				rs.chunks[oc] = ps
			}
		}
		rs.order, rs.held = newOrder, held
		if lc := rs.chunks[chunkOf(legacyStep)]; len(lc) == 0 || lc[0].step != legacyStep {
			rs.legacy = nil
		}
	})
	return nil
}

// runStepsLocked returns the run's index: from memory, else read from
// storage (a damaged one rebuilt; a log of the layout before moved), with
// its legacy fingerprints. Called with logMu held.
func (s *ExtensionStore) runStepsLocked(ctx context.Context, runKey string) (*runSteps, error) {
	if rs := s.steps.run(runKey); rs != nil {
		return rs, nil
	}
	rs, damage, err := s.readSteps(ctx, runKey)
	switch {
	case err != nil:
		return nil, err
	case damage != "":
		rs = s.rebuildSteps(ctx, runKey, damage)
	case rs == nil:
		if rs, err = s.moveLog(ctx, runKey); err != nil {
			return nil, err
		}
	}
	if lc := rs.chunks[chunkOf(legacyStep)]; len(lc) > 0 && lc[0].step == legacyStep {
		_, parts := (&deliveredIndex{parts: lc}).of(legacyStep)
		ops := make([]*storage.Operation, len(parts))
		for i, p := range parts {
			ops[i] = storage.GetOperation(stepPartKey(runKey, legacyStep, p.part))
		}
		if err := s.client.Batch(ctx, ops...); err != nil {
			return nil, err
		}
		legacy := []uint64{}
		for i, op := range ops {
			have := readPart(op.Value)
			if damage := partDamage(op.Value); damage != "" {
				// Written back whole, so that the next start says nothing.
				fix, fixed := s.fixPart(runKey, rs, parts[i], op.Value, damage, have)
				if s.client.Batch(ctx, fix...) == nil {
					fixed()
				}
			}
			legacy = mergeSorted(legacy, have)
		}
		rs.legacy = legacy
	}
	s.steps.put(runKey, rs)
	return rs, nil
}

// readSteps reads a run's index: nil without a header, damage when the
// header or a chunk it names is damaged or missing.
func (s *ExtensionStore) readSteps(ctx context.Context, runKey string) (*runSteps, string, error) {
	raw, err := s.client.Get(ctx, storeStepIndex+runKey)
	if err != nil || raw == nil {
		return nil, "", err
	}
	order, damage := decodeHeader(raw)
	if damage != "" {
		return nil, damage, nil
	}
	ops := make([]*storage.Operation, len(order))
	for i, c := range order {
		ops[i] = storage.GetOperation(chunkKey(runKey, c))
	}
	if err := s.client.Batch(ctx, ops...); err != nil {
		return nil, "", err
	}
	rs := &runSteps{chunks: map[int64][]stepPart{}, order: order}
	for i, op := range ops {
		if op.Value == nil {
			return nil, "chunk " + strconv.FormatInt(order[i], 10) + " missing", nil
		}
		x, damage := decodeStepIndex(op.Value)
		if damage == "" && slices.ContainsFunc(x.parts, func(p stepPart) bool { return chunkOf(p.step) != order[i] }) {
			damage = "a step in the wrong chunk"
		}
		if damage != "" {
			return nil, "chunk " + strconv.FormatInt(order[i], 10) + ": " + damage, nil
		}
		rs.chunks[order[i]] = x.parts
		rs.held += x.held
	}
	return rs, "", nil
}

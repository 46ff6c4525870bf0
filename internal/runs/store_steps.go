package runs

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// A run's delivered episodes in a storage extension are a value per step,
// so that a marking writes one value, not a key per episode. With a key
// per episode, file_storage (bbolt) dirtied about one leaf page per
// episode on random keys, and more distinct leaves per commit as the tree
// filled: CPU per episode rose over a 1,000,000-episode run (docs/
// performance.md, Over a million episodes). The keys:
//
//   - deliveredstep/<step>/<part>/<key>: one part of a step's delivered
//     fingerprints, sorted, 8 bytes each (little-endian). A step's first
//     part is 0; a part holds at most maxPartFingerprints, so that a step
//     of very many episodes (an evaluation's samples, which have no step)
//     is not rewritten whole by every marking.
//   - deliveredchunk/<chunk>/<key>: the run's index of the steps
//     [chunk×256, chunk×256+255]: which parts of them it holds and how
//     many fingerprints each (binary, checksummed, under 1 KB for a run
//     with a part per step);
//   - deliveredsteps/<key>: the run's header, which chunks it holds
//     (binary, checksummed), written only when a chunk comes or goes;
//   - deliveredlayout: "steps" once the layout below was moved.
//
// The index is read whole at a run's first use and kept in memory (some
// 24 bytes a part). Delivered reads the step's parts (one Get for a step
// of fewer than maxPartFingerprints episodes); MarkDelivered rewrites the
// step's last part and its chunk, in one batch (one transaction in
// file_storage), and deletes the oldest parts whole while the run holds
// more than maxStoredDelivered fingerprints: a window of steps, the
// newest kept, as the layout before kept the newest markings. What a
// marking writes and copies does not grow with the window: with a single
// index value for the whole window (8 KB at 2,600 steps of 100 episodes)
// a marking took 7× the time and 16× the allocations once the window was
// full.
//
// The layout before (a key per episode, delivered/<key>/<fp hex>, with a
// log of markings under deliveredlog/ and deliveredhead/) is moved on
// Load, once, into the pseudo-step legacyStep, the oldest of the window,
// which every Delivered consults (it is read into memory once, at most
// maxStoredDelivered fingerprints, 2 MB, a run) until pruning reaches it.
// A storage extension that cannot list its keys has its runs' logs moved
// at their first use instead; what an even earlier release wrote without
// a log is then no longer read.
const (
	storeStepPrefix  = "deliveredstep/"
	storeStepIndex   = "deliveredsteps/"
	storeChunkPrefix = "deliveredchunk/"
	storeLayoutKey   = "deliveredlayout"
	storeLayoutSteps = "steps"

	// The layout before.
	storeEpPrefix  = "delivered/"
	storeLogPrefix = "deliveredlog/"  // deliveredlog/<n>/<key>: a run's nth marking
	storeLogHead   = "deliveredhead/" // deliveredhead/<key>: which markings it holds
)

// maxPartFingerprints is the most fingerprints one stored value holds
// (64 KB).
const maxPartFingerprints = 8192

// legacyStep holds what the layout before kept: its steps are unknown.
const legacyStep = math.MinInt64

// stepIndexMagic starts an encoded chunk of a step index, stepHeaderMagic
// a run's header (their format's version).
var (
	stepIndexMagic  = []byte("dsi1")
	stepHeaderMagic = []byte("dsh1")
)

// chunkOf is the chunk of the index that holds step.
func chunkOf(step int64) int64 { return step >> 8 }

func chunkKey(runKey string, chunk int64) string {
	return storeChunkPrefix + strconv.FormatInt(chunk, 10) + "/" + runKey
}

// deliveredIndex is a list of parts, by step then part: a chunk as stored,
// or a run's whole index.
type deliveredIndex struct {
	parts []stepPart // by step, then part
	held  int64
}

type stepPart struct{ step, part, n int64 }

// of returns the parts of step and where they start.
func (x *deliveredIndex) of(step int64) (int, []stepPart) {
	i := sort.Search(len(x.parts), func(i int) bool { return x.parts[i].step >= step })
	j := i
	for j < len(x.parts) && x.parts[j].step == step {
		j++
	}
	return i, x.parts[i:j]
}

func newDeliveredIndex(parts []stepPart) *deliveredIndex {
	x := &deliveredIndex{parts: parts}
	for _, p := range parts {
		x.held += p.n
	}
	return x
}

func (x *deliveredIndex) encode() []byte {
	b := append(make([]byte, 0, len(stepIndexMagic)+8+6*len(x.parts)), stepIndexMagic...)
	b = binary.AppendUvarint(b, uint64(len(x.parts)))
	prev := int64(0)
	for _, p := range x.parts {
		// The difference wraps for far-apart steps; the sum in decode
		// wraps back.
		b = binary.AppendVarint(b, p.step-prev)
		b = binary.AppendUvarint(b, uint64(p.part))
		b = binary.AppendUvarint(b, uint64(p.n))
		prev = p.step
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// openFramed checks the frame of a value encoded here (magic, an entry
// count, the entries, a CRC32 of all that) and returns the entries' bytes
// and their count; damage says why it cannot.
func openFramed(raw, magic []byte) (entries []byte, n uint64, damage string) {
	if !bytes.HasPrefix(raw, magic) {
		return nil, 0, "not a step index"
	}
	if len(raw) < len(magic)+4 {
		return nil, 0, "truncated"
	}
	body := raw[:len(raw)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(raw[len(raw)-4:]) {
		return nil, 0, "checksum mismatch: truncated or altered"
	}
	r := body[len(magic):]
	n, k := binary.Uvarint(r)
	if k <= 0 || n > uint64(len(r)) {
		return nil, 0, "bad entry count"
	}
	return r[k:], n, ""
}

// decodeStepIndex reads a step index; damage says why it cannot.
func decodeStepIndex(raw []byte) (*deliveredIndex, string) {
	r, n, damage := openFramed(raw, stepIndexMagic)
	if damage != "" {
		return nil, damage
	}
	parts := make([]stepPart, 0, n)
	prev := int64(0)
	for range n {
		d, k1 := binary.Varint(r)
		if k1 <= 0 {
			return nil, "truncated"
		}
		part, k2 := binary.Uvarint(r[k1:])
		if k2 <= 0 {
			return nil, "truncated"
		}
		cnt, k3 := binary.Uvarint(r[k1+k2:])
		if k3 <= 0 || cnt > maxPartFingerprints || part > math.MaxInt32 {
			return nil, "impossible entry"
		}
		r = r[k1+k2+k3:]
		p := stepPart{step: prev + d, part: int64(part), n: int64(cnt)}
		if len(parts) > 0 && !partLess(parts[len(parts)-1], p) {
			return nil, "entries out of order"
		}
		parts = append(parts, p)
		prev = p.step
	}
	if len(r) != 0 {
		return nil, "trailing bytes"
	}
	return newDeliveredIndex(parts), ""
}

func partLess(a, b stepPart) bool {
	return a.step < b.step || a.step == b.step && a.part < b.part
}

func stepPartKey(runKey string, step, part int64) string {
	return storeStepPrefix + strconv.FormatInt(step, 10) + "/" + strconv.FormatInt(part, 10) + "/" + runKey
}

// parseStepPartKey reads a part's key back (for a listing).
func parseStepPartKey(key string) (runKey string, step, part int64, ok bool) {
	rest, found := strings.CutPrefix(key, storeStepPrefix)
	if !found {
		return "", 0, 0, false
	}
	st, rest, _ := strings.Cut(rest, "/")
	pt, runKey, found := strings.Cut(rest, "/")
	step, err1 := strconv.ParseInt(st, 10, 64)
	part, err2 := strconv.ParseInt(pt, 10, 64)
	return runKey, step, part, found && err1 == nil && err2 == nil && part >= 0
}

func encodePart(fps []uint64) []byte {
	b := make([]byte, 0, 8*len(fps))
	for _, fp := range fps {
		b = binary.LittleEndian.AppendUint64(b, fp)
	}
	return b
}

// partDamage says how a stored part is damaged: "" for whole fingerprints
// in strictly rising order.
func partDamage(raw []byte) string {
	if len(raw)%8 != 0 {
		return "truncated: " + strconv.Itoa(len(raw)) + " bytes"
	}
	for i := 8; i < len(raw); i += 8 {
		if binary.LittleEndian.Uint64(raw[i-8:]) >= binary.LittleEndian.Uint64(raw[i:]) {
			return "out of order at fingerprint " + strconv.Itoa(i/8)
		}
	}
	return ""
}

// readPart returns a part's fingerprints: its whole ones, sorted, when it
// is damaged.
func readPart(raw []byte) []uint64 {
	fps := make([]uint64, 0, len(raw)/8)
	for i := 0; i+8 <= len(raw); i += 8 {
		fps = append(fps, binary.LittleEndian.Uint64(raw[i:]))
	}
	slices.Sort(fps)
	return slices.Compact(fps)
}

// partHas looks fp up in a whole part, without decoding it.
func partHas(raw []byte, fp uint64) bool {
	n := len(raw) / 8
	i := sort.Search(n, func(i int) bool { return binary.LittleEndian.Uint64(raw[8*i:]) >= fp })
	return i < n && binary.LittleEndian.Uint64(raw[8*i:]) == fp
}

// mergeSorted merges two sorted sets.
func mergeSorted(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return append(append(out, a[i:]...), b[j:]...)
}

// encodeHeader writes a run's header: its chunks, ascending.
func encodeHeader(chunks []int64) []byte {
	b := append(make([]byte, 0, len(stepHeaderMagic)+8+2*len(chunks)), stepHeaderMagic...)
	b = binary.AppendUvarint(b, uint64(len(chunks)))
	prev := int64(0)
	for _, c := range chunks {
		b = binary.AppendVarint(b, c-prev)
		prev = c
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func decodeHeader(raw []byte) ([]int64, string) {
	r, n, damage := openFramed(raw, stepHeaderMagic)
	if damage != "" {
		return nil, damage
	}
	out := make([]int64, 0, n)
	prev := int64(0)
	for range n {
		d, k := binary.Varint(r)
		if k <= 0 {
			return nil, "truncated"
		}
		r = r[k:]
		c := prev + d
		if len(out) > 0 && c <= out[len(out)-1] {
			return nil, "entries out of order"
		}
		out = append(out, c)
		prev = c
	}
	if len(r) != 0 {
		return nil, "trailing bytes"
	}
	return out, ""
}

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

func cmpPart(a, b stepPart) int {
	if partLess(a, b) {
		return -1
	}
	if partLess(b, a) {
		return 1
	}
	return 0
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
// (and the header, when a chunk comes or goes).
func (s *ExtensionStore) markLocked(ctx context.Context, runKey string, step int64, fps []uint64) error {
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

// legacyParts cuts a set of the layout before into the legacy parts, as
// writes.
func legacyParts(runKey string, fps []uint64) ([]stepPart, []*storage.Operation) {
	var parts []stepPart
	var ops []*storage.Operation
	for p := int64(0); len(fps) > 0; p++ {
		n := min(len(fps), maxPartFingerprints)
		parts = append(parts, stepPart{step: legacyStep, part: p, n: int64(n)})
		ops = append(ops, storage.SetOperation(stepPartKey(runKey, legacyStep, p), encodePart(fps[:n])))
		fps = fps[n:]
	}
	return parts, ops
}

// migrate moves the delivered sets of the layout before, once, when the
// storage extension can list its keys: each run's keys become legacy
// parts in one batch (one line each); the layout key then says it is
// done.
func (s *ExtensionStore) migrate(ctx context.Context) error {
	raw, err := s.client.Get(ctx, storeLayoutKey)
	if err != nil || string(raw) == storeLayoutSteps {
		return err
	}
	found, canList, err := s.walk(ctx, "delivered")
	if err != nil || !canList {
		return err // moved run by run, as they are used (moveLog)
	}
	old := map[string][]uint64{}
	drop := map[string][]*storage.Operation{}
	for key := range found {
		var runKey string
		switch {
		case strings.HasPrefix(key, storeEpPrefix):
			rest := strings.TrimPrefix(key, storeEpPrefix)
			i := strings.LastIndexByte(rest, '/')
			if i < 0 {
				continue
			}
			runKey = rest[:i]
			if fp, err := strconv.ParseUint(rest[i+1:], 16, 64); err == nil {
				old[runKey] = append(old[runKey], fp)
			}
		case strings.HasPrefix(key, storeLogPrefix):
			_, runKey, _ = strings.Cut(strings.TrimPrefix(key, storeLogPrefix), "/")
		case strings.HasPrefix(key, storeLogHead):
			runKey = strings.TrimPrefix(key, storeLogHead)
		default:
			continue
		}
		drop[runKey] = append(drop[runKey], storage.DeleteOperation(key))
	}
	for _, runKey := range slices.Sorted(maps.Keys(drop)) {
		fps := slices.Compact(slices.Sorted(slices.Values(old[runKey])))
		ops := drop[runKey]
		if len(fps) > 0 {
			parts, writes := legacyParts(runKey, fps)
			if cur, damage, err := s.readSteps(ctx, runKey); err == nil && damage == "" && cur != nil {
				// A build of this layout marked the run already (its
				// layout key lost): its parts follow the legacy ones.
				parts = append(parts, slices.DeleteFunc(cur.all().parts, func(p stepPart) bool { return p.step == legacyStep })...)
			}
			ops = append(append(ops, writes...), newRunSteps(parts).writes(runKey)...)
		}
		if err := s.client.Batch(ctx, ops...); err != nil {
			return err
		}
		s.opts.Logger.Info("Moved the delivered episodes an earlier release stored for "+runName(runKey)+" to the per-step layout: they stay delivered",
			zap.String("storage", s.opts.Name), zap.Int("fingerprints", len(fps)))
	}
	return s.client.Set(ctx, storeLayoutKey, []byte(storeLayoutSteps))
}

// moveLog moves one run's delivered log of the layout before, where
// storage could not be listed at Load: the fingerprints its chunks name
// become legacy parts, and its keys go, in one batch. Fingerprints stored
// before that release's log existed are not found.
func (s *ExtensionStore) moveLog(ctx context.Context, runKey string) (*runSteps, error) {
	raw, err := s.client.Get(ctx, storeLogHead+runKey)
	if err != nil || raw == nil {
		return newRunSteps(nil), err
	}
	lg, damage, ok := salvageLog(raw)
	if !ok {
		s.opts.Logger.Warn("Delivered log of "+runName(runKey)+" is damaged ("+damage+"): the episodes it logged are no longer read (a replay of one may upload it again)",
			zap.String("storage", s.opts.Name), zap.String("storage_key", storeLogHead+runKey))
		lg = deliveredLog{}
	}
	ops := []*storage.Operation{storage.DeleteOperation(storeLogHead + runKey)}
	var fps []uint64
	for n := lg.First; n < lg.Next; n++ {
		key := storeLogPrefix + strconv.FormatInt(n, 10) + "/" + runKey
		chunk, err := s.client.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		for i := 0; i+8 <= len(chunk); i += 8 {
			fp := binary.LittleEndian.Uint64(chunk[i:])
			fps = append(fps, fp)
			ops = append(ops, storage.DeleteOperation(storeEpPrefix+runKey+"/"+strconv.FormatUint(fp, 16)))
		}
		ops = append(ops, storage.DeleteOperation(key))
	}
	fps = slices.Compact(slices.Sorted(slices.Values(fps)))
	parts, writes := legacyParts(runKey, fps)
	rs := newRunSteps(parts)
	ops = append(append(ops, writes...), rs.writes(runKey)...)
	if err := s.client.Batch(ctx, ops...); err != nil {
		return nil, err
	}
	s.opts.Logger.Info("Moved the delivered episodes an earlier release logged for "+runName(runKey)+" to the per-step layout: they stay delivered",
		zap.String("storage", s.opts.Name), zap.Int("fingerprints", len(fps)))
	return rs, nil
}

// deliveredLog is the header of a run's log in the layout before: chunks
// [First, Next) hold Held fingerprints.
type deliveredLog struct {
	First int64 `json:"first"`
	Next  int64 `json:"next"`
	Held  int64 `json:"held"`
}

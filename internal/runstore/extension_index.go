package runstore

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
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
const (
	storeStepPrefix  = "deliveredstep/"
	storeStepIndex   = "deliveredsteps/"
	storeChunkPrefix = "deliveredchunk/"
	storeLayoutKey   = "deliveredlayout"
	storeLayoutSteps = "steps"
)

// maxPartFingerprints is the most fingerprints one stored value holds
// (64 KB).
const maxPartFingerprints = 8192

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

func cmpPart(a, b stepPart) int {
	if partLess(a, b) {
		return -1
	}
	if partLess(b, a) {
		return 1
	}
	return 0
}

package runs

import (
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// sentWindowSteps is how many of a run's newest steps keep the exact value
// sent per key. A cumulative SDK re-exports every step seen so far on
// every collection, but a step's values only change while it is still
// being aggregated or while a late point for it (an asynchronous
// evaluation, an off-policy rollout) is on its way, and both happen within
// a few steps of the newest. 512 steps covers that with room to spare and
// costs about 512 × (keys per step) values per run, whatever the run's
// length; older steps keep only which steps were sent (sentRanges).
const sentWindowSteps = 512

// maxSentRangesPerKey bounds the ranges of sent steps a key keeps below
// the window. A key sent on every step needs one range; a key sent every
// n-th step (an evaluation) needs one per send, so without a bound it
// would grow with the run. Past the bound the oldest gap is filled: a
// never-sent step in it is then taken as sent. That gap is at least
// maxSentRangesPerKey sends of the key behind the window, so only a
// straggler that late is lost.
const maxSentRangesPerKey = 256

// sentValues remembers what a run has sent, so that a cumulative
// re-export does not post a step again: the exact last value per key for
// the newest sentWindowSteps steps, and below them per key the set of
// steps sent, as merged ranges. Memory is O(sentWindowSteps × keys per
// step + keys × maxSentRangesPerKey), flat in the run's length.
//
// A step below the window counts as sent for a key once any value of that
// key was sent for it: a re-export of an old step repeats the value we
// sent and is skipped, and a changed value for a step more than
// sentWindowSteps behind the newest is not posted again. A key never sent
// for an old step (a straggler) is posted once.
//
// PostSteps may run concurrently for one run (several exporter
// consumers), hence the mutex.
type sentValues struct {
	mu   sync.Mutex
	st   *sentState // nil until the first markSent, and after reset
	sent atomic.Int64
}

// sentState is sentValues' memory between two resets.
type sentState struct {
	newest int64 // the newest step marked sent
	// window holds step s at s mod sentWindowSteps; only steps in
	// [floor(), newest] are held.
	window [sentWindowSteps]sentStep
	// keys holds each key once, cloned: a key may point into a large
	// pdata buffer that must not be kept alive by this run. The window's
	// maps use these strings as their keys.
	keys map[string]*sentKey
}

// sentStep is one step's exact values; vals is nil for an empty slot.
type sentStep struct {
	step int64
	vals map[string]float64
}

// sentKey is one key and the steps below the window it was sent for.
type sentKey struct {
	name   string
	ranges sentRanges
}

func newSentValues() *sentValues {
	return &sentValues{}
}

// reset forgets every value, keeping the count sent. The state is
// replaced, not cleared: a Go map keeps its buckets after its entries are
// deleted, which cost about 300 KB per closed run in the soak test. It is
// allocated again only if the run sends again, so a closed run keeps
// nothing.
func (s *sentValues) reset() {
	s.mu.Lock()
	s.st = nil
	s.mu.Unlock()
}

// unsent returns the values of one step not already sent with the same
// value (for a step below the window: not already sent at all).
func (s *sentValues) unsent(step int64, values map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(values))
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	switch {
	case st == nil:
		for k, v := range values {
			out[k] = v
		}
	case step >= st.floor():
		var sent map[string]float64
		if slot := &st.window[slotOf(step)]; slot.vals != nil && slot.step == step {
			sent = slot.vals
		}
		for k, v := range values {
			if old, ok := sent[k]; ok && old == v {
				continue
			}
			out[k] = v
		}
	default:
		for k, v := range values {
			if h := st.keys[k]; h != nil && h.ranges.has(step) {
				continue
			}
			out[k] = v
		}
	}
	return out
}

// markSent records a step's values after the platform accepted them. The
// "step" entry PostSteps adds is not a value and is not stored (it is
// counted, as it always was).
func (s *sentValues) markSent(step int64, values map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	if st == nil {
		st = &sentState{newest: step, keys: map[string]*sentKey{}}
		s.st = st
	}
	if step > st.newest {
		st.advance(step)
	}
	if step < st.floor() {
		for k := range values {
			if k != stepKey {
				st.intern(k).ranges.add(step)
			}
		}
	} else {
		slot := &st.window[slotOf(step)]
		if slot.vals != nil && slot.step != step {
			st.evict(slot) // not reached: advance evicts every step below the floor
		}
		if slot.vals == nil {
			slot.step, slot.vals = step, make(map[string]float64, len(values))
		}
		for k, v := range values {
			if k != stepKey {
				// Assigning to an existing string key stores the new
				// key string too, so always use the interned one.
				slot.vals[st.intern(k).name] = v
			}
		}
	}
	s.sent.Add(int64(len(values)))
}

// count counts n values sent in a post that is not remembered: a time
// row's.
func (s *sentValues) count(n int) { s.sent.Add(int64(n)) }

func (s *sentValues) total() int { return int(s.sent.Load()) }

// floor is the oldest step of the window.
func (st *sentState) floor() int64 {
	if st.newest < math.MinInt64+sentWindowSteps-1 {
		return math.MinInt64
	}
	return st.newest - sentWindowSteps + 1
}

// advance makes step the newest, moving the steps that fall below the new
// floor from the window to their keys' ranges, oldest first (ranges grow
// at their end then, the cheap case).
func (st *sentState) advance(step int64) {
	from := st.floor()
	d := uint64(step) - uint64(st.newest) // step > newest: exact even across the sign
	st.newest = step
	to := st.floor()
	// The window held steps in [from, from+sentWindowSteps-1]; those below
	// to go, at most min(d, sentWindowSteps) of them.
	n := int64(min(d, sentWindowSteps))
	for i := range n {
		s := from + i
		if s >= to {
			break
		}
		if slot := &st.window[slotOf(s)]; slot.vals != nil && slot.step == s {
			st.evict(slot)
		}
	}
}

// evict moves one step from the window to its keys' ranges.
func (st *sentState) evict(slot *sentStep) {
	for k := range slot.vals {
		st.keys[k].ranges.add(slot.step)
	}
	slot.vals = nil
}

// intern returns the key's entry, adding it with a copy of k.
func (st *sentState) intern(k string) *sentKey {
	if h, ok := st.keys[k]; ok {
		return h
	}
	h := &sentKey{name: strings.Clone(k)}
	st.keys[h.name] = h
	return h
}

func slotOf(step int64) int {
	i := step % sentWindowSteps
	if i < 0 {
		i += sentWindowSteps
	}
	return int(i)
}

// sentRanges is a set of steps as sorted, disjoint, non-adjacent
// inclusive ranges: contiguous steps cost one range, so its size is the
// number of gaps, at most maxSentRangesPerKey.
type sentRanges []stepRange

type stepRange struct{ lo, hi int64 }

// has reports whether step is in the set.
func (r sentRanges) has(step int64) bool {
	i := sort.Search(len(r), func(i int) bool { return r[i].hi >= step })
	return i < len(r) && r[i].lo <= step
}

// add puts step in the set, merging ranges it joins.
func (r *sentRanges) add(step int64) {
	rs := *r
	n := len(rs)
	// i is the first range that contains step or ends right before it.
	i := n
	if n > 0 && rs[n-1].hi < step {
		if step-1 == rs[n-1].hi { // the common case: the next step of a key
			rs[n-1].hi = step
			return
		}
	} else {
		i = sort.Search(n, func(i int) bool { return rs[i].hi >= step || rs[i].hi == step-1 && step != math.MinInt64 })
	}
	switch {
	case i == n:
		rs = append(rs, stepRange{step, step})
	case rs[i].lo <= step && step <= rs[i].hi:
		return
	case step != math.MinInt64 && rs[i].hi == step-1:
		rs[i].hi = step
		if i+1 < n && rs[i+1].lo == step+1 { // step < rs[i+1].lo, so step+1 does not wrap
			rs[i].hi = rs[i+1].hi
			rs = append(rs[:i+1], rs[i+2:]...)
		}
	case rs[i].lo == step+1: // step < rs[i].lo
		rs[i].lo = step
	default:
		rs = append(rs, stepRange{})
		copy(rs[i+1:], rs[i:])
		rs[i] = stepRange{step, step}
	}
	if len(rs) > maxSentRangesPerKey { // fill the oldest gap
		rs[1].lo = rs[0].lo
		rs = append(rs[:0], rs[1:]...)
	}
	*r = rs
}

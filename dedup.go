package primeexporter

import "sync"

// maxSentValuesPerRun bounds what a run remembers of sent points. With
// cumulative temporality every export repeats every step seen so far; the
// most recent steps are the ones repeated, so forgetting the oldest first
// costs at worst a replay, which the platform merges.
const maxSentValuesPerRun = 1 << 16

type sentKey struct {
	step int64
	key  string
}

// sentValues remembers the last value sent per (step, key), oldest evicted
// first.
type sentValues struct {
	mu    sync.Mutex
	limit int
	vals  map[sentKey]float64
	order []sentKey // ring buffer of insertion order
	next  int
	sent  int
}

func newSentValues(limit int) *sentValues {
	return &sentValues{limit: limit, vals: map[sentKey]float64{}}
}

// unsent returns the values of one step not already sent with the same
// value.
func (s *sentValues) unsent(step int64, values map[string]float64) map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]float64, len(values))
	for k, v := range values {
		if old, ok := s.vals[sentKey{step, k}]; ok && old == v {
			continue
		}
		out[k] = v
	}
	return out
}

// markSent records a step's values after the platform accepted them.
func (s *sentValues) markSent(step int64, values map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range values {
		sk := sentKey{step, k}
		s.sent++
		if _, ok := s.vals[sk]; ok {
			s.vals[sk] = v
			continue
		}
		if len(s.order) < s.limit {
			s.order = append(s.order, sk)
		} else {
			delete(s.vals, s.order[s.next])
			s.order[s.next] = sk
			s.next = (s.next + 1) % s.limit
		}
		s.vals[sk] = v
	}
}

func (s *sentValues) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// reset forgets every value, keeping the count sent.
func (s *sentValues) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vals, s.order, s.next = map[sentKey]float64{}, nil, 0
}

package primeexporter

import (
	"math/rand/v2"
	"sync"
)

// The viewer finds a sample by (step, sample_id), so ids must be unique
// across every object of a step: sample_id = range × 2^32 + row. The process
// that owns a run counts ranges per step from 0; one that cannot know the
// earlier counters draws from the upper half [2^20, 2^21), which the counter
// never reaches, and every id stays below 2^53.
const (
	randomRangeLow  = 1 << 20
	randomRangeHigh = 1 << 21
)

// sampleRanges hands out a run's ranges per step.
type sampleRanges struct {
	mu         sync.Mutex
	sequential bool               // this process created the run
	next       map[int64]int64    // step → next sequential range
	used       map[int64]rangeSet // step → random ranges drawn
	draw       func() int64
}

type rangeSet map[int64]struct{}

func newSampleRanges(sequential bool) *sampleRanges {
	return &sampleRanges{
		sequential: sequential,
		next:       map[int64]int64{},
		used:       map[int64]rangeSet{},
		draw:       func() int64 { return randomRangeLow + rand.Int64N(randomRangeHigh-randomRangeLow) },
	}
}

// take returns a range for one more object of step.
func (s *sampleRanges) take(step int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sequential {
		r := s.next[step]
		s.next[step] = r + 1
		return r
	}
	used := s.used[step]
	if used == nil {
		used = rangeSet{}
		s.used[step] = used
	}
	for {
		r := s.draw()
		if _, taken := used[r]; !taken {
			used[r] = struct{}{}
			return r
		}
	}
}

func (s *sampleRanges) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next, s.used = map[int64]int64{}, map[int64]rangeSet{}
}

package runs

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
)

// The viewer finds a sample by (step, sample_id), so ids must be unique
// across every object of a step: sample_id = range × 2^32 + row. The
// process that owns a run counts ranges per step from 0; one that cannot
// know the earlier counters draws from the upper half [2^20, 2^21), which
// the counter never reaches, and every id stays below 2^53.
const (
	randomRangeLow  = 1 << 20
	randomRangeHigh = 1 << 21
	// fallbackRangeLow starts the ranges drawn at random for a step below
	// a run's range floor (maxRangeSteps), and when the shared
	// counter cannot be reached in the middle of a push: above every
	// counted range (a created run counts from 0, an attached one from
	// randomRangeLow, and neither gets near 2^19 objects in one step).
	fallbackRangeLow = randomRangeLow + randomRangeLow/2
)

// objectLedger is what a lease's uploads keep in the fleet: the run's
// sample_id ranges. The objects themselves, from range to confirm, and the
// episodes they delivered are the uploader's (internal/upload), in the
// store under keys of their own.
type objectLedger interface {
	nextRange(ctx context.Context, r *run, step int64) int64
}

// Key is the run's key in the store, under which the uploader keeps its
// objects.
func (l Lease) Key() string { return l.r.ident.key() }

// NextRange takes a new sample_id range for an object of step. It writes
// nothing: a collector alone counts in memory within the band its run's
// record holds (rangesBand), and a fleet counts in Redis.
func (l Lease) NextRange(ctx context.Context, step int64) int64 {
	return l.g.fleet.objects.nextRange(ctx, l.r, step)
}

// rangesBand is how many ranges a step may take in one process's life of
// a run: a created run counts each step from 0, and its record says that
// ranges from rangesBand on are free; a restart counts each step from
// there, and saves the band above. So a range is never written per
// object, and never reused after a restart: an object that took one and
// was PUT before a crash left no record of its range, and the band holds
// it. A step that outgrows its band draws random ranges, as a step below
// the range floor does. 1024 a band leaves room for 1023 restarts below
// randomRangeLow.
const rangesBand = 1024

// maxRangeSteps bounds the steps whose range counters a run keeps in
// memory: the newest steps are kept. A step older than every kept one is
// below the floor: a late object of it (an off-policy episode of an old
// step) draws a random range from [fallbackRangeLow, 2^21), above every
// counted range, as an attached run does; two such objects of one step
// collide with probability 2^-19. 64 steps is far beyond an async
// trainer's lag (a handful of steps).
const maxRangeSteps = 64

// sampleRanges hands out a run's ranges per step.
type sampleRanges struct {
	mu         sync.Mutex
	sequential bool                         // this process created or restored the run
	next       map[int64]int64              // step → next sequential range
	floor      int64                        // steps below it are no longer counted
	used       map[int64]map[int64]struct{} // step → random ranges drawn
	// base is where this process counts each step from, limit the end of
	// its band (rangesBand), which the run's record holds.
	base, limit int64
}

func newSampleRanges(sequential bool) *sampleRanges {
	return &sampleRanges{sequential: sequential, next: map[int64]int64{}, used: map[int64]map[int64]struct{}{}, floor: math.MinInt64, limit: rangesBand}
}

// take returns a range for one more object of step.
func (s *sampleRanges) take(step int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, counted := s.next[step]
	if !counted {
		r = s.base
	}
	if s.sequential && step >= s.floor && r < s.limit {
		s.next[step] = r + 1
		if len(s.next) > maxRangeSteps {
			oldest := minKey(s.next)
			delete(s.next, oldest)
			s.floor = oldest + 1
		}
		return r
	}
	low := int64(randomRangeLow)
	if s.sequential {
		low = fallbackRangeLow
	}
	used := s.used[step]
	if used == nil {
		used = map[int64]struct{}{}
		s.used[step] = used
		if len(s.used) > maxRangeSteps {
			delete(s.used, minKey(s.used))
		}
	}
	for {
		r = low + rand.Int64N(randomRangeHigh-low)
		if _, taken := used[r]; !taken {
			used[r] = struct{}{}
			return r
		}
	}
}

func minKey[V any](m map[int64]V) int64 {
	first, lowest := true, int64(0)
	for k := range m {
		if first || k < lowest {
			first, lowest = false, k
		}
	}
	return lowest
}

// reset replaces the counters with empty maps, letting the old ones go.
func (s *sampleRanges) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next, s.used, s.floor = map[int64]int64{}, map[int64]map[int64]struct{}{}, math.MinInt64
}

// band is the end of the band this process counts in, which the run's
// record holds.
func (s *sampleRanges) band() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}

// restoreBand counts from the end of the band a record held.
func (s *sampleRanges) restoreBand(from int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.base = min(from, randomRangeLow)
	s.limit = min(s.base+rangesBand, randomRangeLow)
}

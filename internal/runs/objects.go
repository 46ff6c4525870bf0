package runs

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
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

// objectLedger is what a lease's uploads keep in the fleet. delivered and
// markDelivered are the run's delivered episodes; pending returns the
// run's unconfirmed upload of object fp, if one is known; nextRange takes
// a new sample_id range for step. savePending and dropPending record an
// upload's progress and its confirm (the run's pending cache already holds
// the change).
type objectLedger interface {
	delivered(ctx context.Context, r *run, step int64, fps []uint64) ([]bool, error)
	markDelivered(ctx context.Context, r *run, step int64, fps []uint64) error
	pending(ctx context.Context, r *run, fp uint64) (platform.Object, bool)
	nextRange(ctx context.Context, r *run, step int64) int64
	savePending(ctx context.Context, r *run, fp uint64, obj platform.Object)
	dropPending(ctx context.Context, r *run, fp uint64)
}

// maxPendingObjects bounds what a run remembers of unconfirmed uploads;
// past it the least recently touched is forgotten, which at worst
// re-uploads that object.
const maxPendingObjects = 256

// Delivered reports, for each fingerprint of an episode of step, whether
// it was confirmed before: a batch replayed by the queue after a restart,
// or by the collector's retry, must not put rows in the table twice.
func (l Lease) Delivered(ctx context.Context, step int64, fps []uint64) ([]bool, error) {
	return l.g.fleet.objects.delivered(ctx, l.r, step, fps)
}

// Pending returns the pending upload of the object with fingerprint fp
// (one another collector of the fleet started too), or starts one for step
// with a new sample_id range. A new object is remembered (and saved) from
// the start, so that a retry or a restart keeps its range instead of
// leaving a gap or reusing it.
func (l Lease) Pending(ctx context.Context, fp uint64, step int64) platform.Pending {
	p := &pendingUpload{l: l, fp: fp}
	if obj, ok := l.g.fleet.objects.pending(ctx, l.r, fp); ok {
		p.obj = obj
		return p
	}
	p.save(ctx, platform.Object{Step: step, Range: l.g.fleet.objects.nextRange(ctx, l.r, step)})
	return p
}

// MarkDelivered records episodes (or documents) of step a sink committed,
// so that a replay leaves them out.
func (l Lease) MarkDelivered(ctx context.Context, step int64, fps []uint64) {
	if err := l.g.fleet.objects.markDelivered(ctx, l.r, step, fps); err != nil {
		l.g.Warn.Warn("delivered\x00"+l.id, "Could not record delivered episodes in storage; a replay after a restart may upload them again", zap.String("run_id", l.id), zap.Error(err))
	}
}

// pendingUpload is a Lease's platform.Pending: one object, from its range
// to its confirm.
type pendingUpload struct {
	l   Lease
	fp  uint64
	obj platform.Object
}

func (p *pendingUpload) Range() int64 { return p.obj.Range }

// Send stores body through the registry's Objects, resuming what an
// earlier attempt did, and records the confirm: episodes delivered, the
// upload no longer pending, the run's counts grown.
func (p *pendingUpload) Send(ctx context.Context, body []byte, episodes []uint64) error {
	l := p.l
	if err := l.g.Objects.Store(ctx, l.id, p.obj, body, func(o platform.Object) { p.save(ctx, o) }); err != nil {
		return err
	}
	// A crash between the confirm and this write is the one window in
	// which a replayed batch can put these rows in the table twice.
	l.MarkDelivered(ctx, p.obj.Step, episodes)
	l.r.pending.cache().Remove(p.fp)
	l.g.fleet.objects.dropPending(ctx, l.r, p.fp)
	l.Count("sample_rows", int64(len(episodes)))
	l.Count("sample_objects", 1)
	l.Count("sample_bytes", int64(len(body)))
	return nil
}

// save records the upload's progress.
func (p *pendingUpload) save(ctx context.Context, obj platform.Object) {
	p.obj = obj
	p.l.r.pending.cache().Add(p.fp, obj)
	p.l.g.fleet.objects.savePending(ctx, p.l.r, p.fp, obj)
}

// pendingObjects are a run's uploads that have a range but no confirm yet,
// by object fingerprint.
type pendingObjects struct {
	objs atomic.Pointer[lru.Cache[uint64, platform.Object]]
}

func newPendingObjects() *pendingObjects {
	p := &pendingObjects{}
	p.reset()
	return p
}

// cache is the current set; reset replaces it (see sentValues.reset).
func (p *pendingObjects) cache() *lru.Cache[uint64, platform.Object] { return p.objs.Load() }

func (p *pendingObjects) reset() {
	objs, _ := lru.New[uint64, platform.Object](maxPendingObjects) // errs only on a size < 1
	p.objs.Store(objs)
}

// maxRangeSteps bounds the steps whose range counters a run keeps, so a
// long run's record (saved with every object) stays small: the newest
// steps are kept. A step older than every kept one is below the floor: a
// late object of it (an off-policy episode of an old step) draws a random
// range from [fallbackRangeLow, 2^21), above every counted range, as an
// attached run does; two such objects of one step collide with
// probability 2^-19. 64 steps is far beyond an async trainer's lag (a
// handful of steps) and keeps the record small: the whole record is
// marshalled and written with every object, so its cost is paid per
// object, and while the counters fill a run's first steps run cheaper
// than the rest (docs/performance.md, Over a million episodes).
const maxRangeSteps = 64

// sampleRanges hands out a run's ranges per step.
type sampleRanges struct {
	mu         sync.Mutex
	sequential bool                         // this process created the run
	next       map[int64]int64              // step → next sequential range
	floor      int64                        // steps below it are no longer counted
	used       map[int64]map[int64]struct{} // step → random ranges drawn
}

func newSampleRanges(sequential bool) *sampleRanges {
	return &sampleRanges{sequential: sequential, next: map[int64]int64{}, used: map[int64]map[int64]struct{}{}, floor: math.MinInt64}
}

// take returns a range for one more object of step.
func (s *sampleRanges) take(step int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sequential && step >= s.floor {
		r := s.next[step]
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
		r := low + rand.Int64N(randomRangeHigh-low)
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

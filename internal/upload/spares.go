package upload

import "sync/atomic"

// spares keeps up to cap(free) values between uses, made by fresh when
// none is spare. Unlike a sync.Pool, which every garbage collection
// empties, a kept value survives collections: an encoder's page buffers
// and an object's body are megabytes, and with 2 KB episodes the collector
// collects often enough that most objects built theirs again from nothing
// (about 4 KB allocated per episode, a fifth of the exporter's own).
type spares[T any] struct {
	free  chan T
	fresh func() T
	keep  func(T) bool // whether a returned value is worth keeping
	// size and budget, when size is set, bound the kept values' bytes
	// together, whatever their count: object bodies are as many as the
	// objects in flight, a few dozen small ones at 2 KB episodes, and a
	// few dozen large ones must not stay in memory for good.
	size   func(T) int
	budget int64
	kept   *atomic.Int64
}

func newSpares[T any](n int, fresh func() T, keep func(T) bool) spares[T] {
	return spares[T]{free: make(chan T, n), fresh: fresh, keep: keep}
}

// newBudgetSpares is newSpares keeping at most budget bytes, as size
// measures them.
func newBudgetSpares[T any](n int, fresh func() T, keep func(T) bool, size func(T) int, budget int64) spares[T] {
	s := newSpares(n, fresh, keep)
	s.size, s.budget, s.kept = size, budget, new(atomic.Int64)
	return s
}

func (s spares[T]) get() T {
	select {
	case v := <-s.free:
		if s.size != nil {
			s.kept.Add(-int64(s.size(v)))
		}
		return v
	default:
		return s.fresh()
	}
}

// put keeps v if there is room and it is worth keeping; otherwise the
// collector has it.
func (s spares[T]) put(v T) {
	if !s.keep(v) {
		return
	}
	var n int64
	if s.size != nil {
		n = int64(s.size(v))
		if s.kept.Add(n) > s.budget {
			s.kept.Add(-n)
			return
		}
	}
	select {
	case s.free <- v:
	default:
		if s.size != nil {
			s.kept.Add(-n)
		}
	}
}

package upload

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
}

func newSpares[T any](n int, fresh func() T, keep func(T) bool) spares[T] {
	return spares[T]{free: make(chan T, n), fresh: fresh, keep: keep}
}

func (s spares[T]) get() T {
	select {
	case v := <-s.free:
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
	select {
	case s.free <- v:
	default:
	}
}

package runstore

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
)

// backlog keeps what storage refused to write (a full disk) until it takes
// writes again: the newest record of each run, and delivered fingerprints,
// which Delivered answers from meanwhile, so that a replay while the disk
// is full uploads nothing twice. A crash before storage takes them again
// forgets them, as if they had never been written: a run created meanwhile
// is created again, episodes delivered meanwhile may be uploaded again.
type backlog struct {
	mu       sync.Mutex
	failing  error     // nil while storage takes writes
	failedAt time.Time // the last refusal
	records  map[string][]byte
	marks    map[string]map[int64]map[uint64]struct{} // run → step → fingerprints
	n        int                                      // fingerprints in marks
	// dropped counts fingerprints past maxBacklogMarks, not kept.
	dropped int
	// recheck looks again once storageSettle has passed, should no write
	// come to do it; closed stops it for good.
	recheck *time.Timer
	closed  bool
}

// maxBacklogMarks bounds the fingerprints kept for a refused storage, as
// the in-memory store bounds its own. A full disk refuses new data at the
// receiver (the persistent queue cannot take it), so what is delivered
// meanwhile is what the queue held.
const maxBacklogMarks = maxMemDelivered

// backlogChunk is the most fingerprints written back in one marking.
const backlogChunk = 4096

// storageSettle is how long writes must go through after a refusal before
// storage counts as taking writes again. A full disk takes the writes that
// fit in its files' free pages and refuses the others: without it, the
// status and the log would flap with every write.
const storageSettle = 5 * time.Second

func newBacklog() backlog {
	return backlog{records: map[string][]byte{}, marks: map[string]map[int64]map[uint64]struct{}{}}
}

// record notes a record's write: kept while storage refuses it.
func (b *backlog) record(key string, body []byte, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.records[key] = body
	} else {
		delete(b.records, key)
	}
}

// written forgets a record written back, unless a newer one replaced it.
func (b *backlog) written(key string, body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bytes.Equal(b.records[key], body) {
		delete(b.records, key)
	}
}

// mark keeps a marking storage refused.
func (b *backlog) mark(key string, step int64, fps []uint64, err error) {
	if err == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	steps := b.marks[key]
	if steps == nil {
		steps = map[int64]map[uint64]struct{}{}
		b.marks[key] = steps
	}
	set := steps[step]
	if set == nil {
		set = map[uint64]struct{}{}
		steps[step] = set
	}
	for _, fp := range fps {
		if _, ok := set[fp]; ok {
			continue
		}
		if b.n >= maxBacklogMarks {
			b.dropped++
			continue
		}
		set[fp] = struct{}{}
		b.n++
	}
}

// unmark forgets fingerprints written back.
func (b *backlog) unmark(key string, step int64, fps []uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.marks[key][step]
	for _, fp := range fps {
		if _, ok := set[fp]; ok {
			delete(set, fp)
			b.n--
		}
	}
	if len(set) == 0 {
		delete(b.marks[key], step)
	}
	if len(b.marks[key]) == 0 {
		delete(b.marks, key)
	}
}

// delivered adds the fingerprints of step kept here to a storage answer.
func (b *backlog) delivered(key string, step int64, fps []uint64, out []bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	set := b.marks[key][step]
	if set == nil {
		return
	}
	for i, fp := range fps {
		if _, ok := set[fp]; ok {
			out[i] = true
		}
	}
}

// backlogMarking is a marking waiting to be written.
type backlogMarking struct {
	step int64
	fps  []uint64
}

// take copies what waits to be written: records, and the fingerprints of
// each run's steps in markings of at most backlogChunk.
func (b *backlog) take() (records map[string][]byte, marks map[string][]backlogMarking) {
	b.mu.Lock()
	defer b.mu.Unlock()
	records = maps.Clone(b.records)
	marks = map[string][]backlogMarking{}
	for key, steps := range b.marks {
		for _, step := range slices.Sorted(maps.Keys(steps)) {
			fps := slices.Sorted(maps.Keys(steps[step]))
			for len(fps) > 0 {
				n := min(len(fps), backlogChunk)
				marks[key] = append(marks[key], backlogMarking{step: step, fps: fps[:n]})
				fps = fps[n:]
			}
		}
	}
	return records, marks
}

func (b *backlog) size() (runs, episodes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.records), b.n
}

// fail notes a failure; first says storage was taking writes until now.
func (b *backlog) fail(err error, now time.Time) (first bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	first = b.failing == nil
	b.failing, b.failedAt = err, now
	return first
}

// recovered says, once, that storage took everything after a failure and
// has taken every write for storageSettle; wait is how long is left of it.
func (b *backlog) recovered(now time.Time) (ok bool, dropped int, wait time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failing == nil || len(b.records) > 0 || b.n > 0 {
		return false, 0, 0
	}
	if wait := storageSettle - now.Sub(b.failedAt); wait > 0 {
		return false, 0, wait
	}
	b.failing, dropped, b.dropped = nil, b.dropped, 0
	return true, dropped, 0
}

// lookAgain runs f after wait, unless a look is already due or the store
// is closed.
func (b *backlog) lookAgain(wait time.Duration, f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.recheck != nil {
		return
	}
	b.recheck = time.AfterFunc(wait, func() {
		b.mu.Lock()
		b.recheck = nil
		closed := b.closed
		b.mu.Unlock()
		if !closed {
			f()
		}
	})
}

// close stops the look again for good.
func (b *backlog) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.recheck != nil {
		b.recheck.Stop()
	}
}

// idle: no failure, nothing waiting.
func (b *backlog) idle() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failing == nil
}

// settle follows a write: a refused one is reported, once until storage
// takes writes again; a taken one writes what waits.
func (s *ExtensionStore) settle(ctx context.Context, err error) {
	if err != nil {
		s.refused(err)
		return
	}
	s.flush(ctx)
}

// refused reports that storage does not take writes: one log line naming
// the directory, and the component status, once per failure.
func (s *ExtensionStore) refused(err error) {
	if !s.backlog.fail(err, s.opts.Now()) {
		return
	}
	fields := []zap.Field{zap.String("storage", s.opts.Name)}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		fields = append(fields, zap.String("directory", filepath.Dir(pe.Path)))
	}
	s.opts.Logger.Error("Storage does not take the run registry's writes: the exporter goes on, keeping its runs' state in memory until storage takes writes again; a crash before then forgets that state (a run created meanwhile is created again, episodes delivered meanwhile may be uploaded again)",
		append(fields, zap.Error(err))...)
	s.opts.Health(err)
}

// failedRead reports a failed read at start the same way (Restore logs
// it), so that the status clears with the next write storage takes.
func (s *ExtensionStore) failedRead(err error) {
	if s.backlog.fail(err, s.opts.Now()) {
		s.opts.Health(err)
	}
}

// flush writes back what storage refused, after a write it took.
func (s *ExtensionStore) flush(ctx context.Context) {
	if s.backlog.idle() || !s.flushing.TryLock() {
		return
	}
	defer s.flushing.Unlock()
	records, marks := s.backlog.take()
	for key, body := range records {
		s.mu.Lock()
		err := s.saveLocked(ctx, key, body)
		if err == nil {
			s.backlog.written(key, body)
		}
		s.mu.Unlock()
		if err != nil {
			s.refused(err)
			return
		}
	}
	for key, markings := range marks {
		for _, m := range markings {
			s.logMu.Lock()
			err := s.markLocked(ctx, key, m.step, m.fps)
			if err == nil {
				s.backlog.unmark(key, m.step, m.fps)
			}
			s.logMu.Unlock()
			if err != nil {
				s.refused(err)
				return
			}
		}
	}
	ok, dropped, wait := s.backlog.recovered(s.opts.Now())
	switch {
	case ok:
		s.opts.Logger.Info("Storage takes the run registry's writes again: the state kept in memory meanwhile is written",
			zap.String("storage", s.opts.Name), zap.Int("episodes_not_kept", dropped))
		s.opts.Health(nil)
	case wait > 0:
		// No later write may come (the runs are quiet): look again then.
		s.backlog.lookAgain(wait, func() { s.flush(context.Background()) })
	}
}

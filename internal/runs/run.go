package runs

import (
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runstore"
)

// errRunClosed marks data for a run that was already closed out.
var errRunClosed = errors.New("run is closed")

type runState int

const (
	stateOpen    runState = iota
	stateEnding           // prime.run.end received; the grace period runs
	stateClosing          // no new data; draining, then the close-out requests
	stateClosed
)

// run is one entry of the registry: one platform run, whichever signal,
// pipeline or process its data comes from.
type run struct {
	ident identity

	// createMu serialises the first create, so that concurrent first data
	// from both signals makes one request and the others wait for its id.
	createMu sync.Mutex

	mu        sync.Mutex
	id        string
	team      string // the team it was created for; for an attached run, the configured one
	refusal   error
	refusedAt time.Time
	// rejection is why the create was last refused, for status queries;
	// it stays until the run has an id.
	rejection *reject.Rejection
	state     runState
	end       End
	endTimer  *time.Timer
	inflight  int
	drained   chan struct{} // closed when inflight reaches 0 while closing
	lastSeen  time.Time
	lastDone  time.Time // when a push of the run last ended
	traces    runstore.Traces
	eval      *evalState // an evaluation's config and summary; nil for a training run
	// closer: this collector holds the fleet's close-out claim (shared
	// registry), so the run's closing state there is its own doing.
	closer bool

	sent   *sentValues
	ranges *sampleRanges
	stats  runStats
	// ambientKeys are the ambient keys the run took (ambient.go).
	ambientKeys keyCap
}

func newRun(ident identity) *run {
	// Only the process that creates a run can count its sample ranges from
	// 0; an attached run may have had another writer.
	return &run{ident: ident, sent: newSentValues(), ranges: newSampleRanges(!ident.attach)}
}

func (r *run) platformID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

func (r *run) setID(id, team string) {
	r.mu.Lock()
	r.id, r.team = id, team
	r.mu.Unlock()
}

// hold counts a push in; a closing or closed run takes no more data.
func (r *run) hold(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state >= stateClosing {
		return errRunClosed
	}
	r.inflight++
	r.lastSeen = now
	return nil
}

func (r *run) release(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastDone = now
	r.inflight--
	if r.inflight == 0 && r.drained != nil {
		close(r.drained)
		r.drained = nil
	}
}

// dropState drops what a closed run no longer needs; the entry itself
// stays, so that later data for it is refused rather than starting a new
// run. The caches are replaced, not emptied: a Go map keeps its buckets
// after its entries are deleted, which cost about 300 KB per closed run in
// the soak test.
func (r *run) dropState() {
	r.sent.reset()
	r.ranges.reset()
	r.ambientKeys.reset()
}

// runStats are one run's counts for its close-out log line.
type runStats struct {
	mu sync.Mutex
	n  map[string]int64
}

func (s *runStats) add(name string, v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int64{}
	}
	s.n[name] += v
}

func (s *runStats) fields() []zap.Field {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]zap.Field, 0, len(s.n))
	for _, k := range slices.Sorted(maps.Keys(s.n)) {
		out = append(out, zap.Int64(k, s.n[k]))
	}
	return out
}

package runs

import (
	"context"
	"maps"
	"sync"

	"github.com/primeintellect/primeexporter/internal/evalsample"
	"github.com/primeintellect/primeexporter/internal/runstore"
)

// evalState is what a run that is an evaluation keeps beyond a training
// run: the config its close-out sends, its summary, and the rollout
// numbers of its examples. A record replayed after it was numbered (a
// retry, a restart) numbers its rollout again: its samples are left out
// as delivered, and the example's later rollouts count one higher.
type evalState struct {
	mu       sync.Mutex
	metadata map[string]any
	sum      *evalsample.Summary
	counters *evalsample.Counters
}

// evalState is the run's evaluation state, made on first use.
func (r *run) evalState() *evalState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.eval == nil {
		r.eval = &evalState{sum: evalsample.NewSummary(), counters: evalsample.NewCounters(0)}
	}
	return r.eval
}

func (e *evalState) setMetadata(m map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.metadata = m
}

func (e *evalState) metadataCopy() map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.metadata)
}

// summary renders the summary the platform is sent.
func (e *evalState) summary() map[string]any { return e.sum.Render() }

func (e *evalState) saved() *runstore.SavedEval {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := &runstore.SavedEval{Metadata: e.metadata}
	if raw, err := e.sum.MarshalJSON(); err == nil {
		out.Summary = raw
	}
	if raw, err := e.counters.MarshalJSON(); err == nil {
		out.Counters = raw
	}
	return out
}

func (e *evalState) restore(sv *runstore.SavedEval) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.metadata = sv.Metadata
	// What cannot be read starts anew: a summary or rollout numbers from
	// this restart on.
	if len(sv.Summary) > 0 {
		_ = e.sum.UnmarshalJSON(sv.Summary)
	}
	if len(sv.Counters) > 0 {
		_ = e.counters.UnmarshalJSON(sv.Counters)
	}
}

// IsEval says the lease's run is an evaluation.
func (l Lease) IsEval() bool { return l.r.ident.eval }

// Summary is the evaluation's summary: the pushes feed it, its close-out
// sends it.
func (l Lease) Summary() *evalsample.Summary { return l.r.evalState().sum }

// Counters numbers the rollouts of the evaluation's examples.
func (l Lease) Counters() *evalsample.Counters { return l.r.evalState().counters }

// SaveEval records the evaluation's summary in the store, so that a
// restart finishes it with what was delivered before.
func (l Lease) SaveEval(ctx context.Context) { l.g.fleet.records.save(ctx, l.r) }

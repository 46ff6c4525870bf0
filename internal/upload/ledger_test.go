package upload

import (
	"context"
	"fmt"
	"sync"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// journal is what the uploader asked of the ledger and the sink, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
}

// take returns the lines so far and starts anew.
func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.lines
	j.lines = nil
	return out
}

// fakeLedger is a run's ledger and route in memory, as a lease keeps
// them: delivered fingerprints, pending uploads and the sink they store
// their objects in, a range counter per step, the run's counts and its
// document routing. It writes what it is asked into its
// journal.
type fakeLedger struct {
	journal *journal

	mu        sync.Mutex
	delivered map[stepFP]bool
	pending   map[uint64]platform.Object
	ranges    map[int64]int64
	counts    map[string]int64
	onTable   bool
	committed bool
	// sink stores the objects of its pending uploads.
	sink platform.Objects
}

var (
	_ Ledger = (*fakeLedger)(nil)
	_ Route  = (*fakeLedger)(nil)
)

func newFakeLedger() *fakeLedger {
	return &fakeLedger{journal: &journal{}, delivered: map[stepFP]bool{}, pending: map[uint64]platform.Object{},
		ranges: map[int64]int64{}, counts: map[string]int64{}}
}

func (*fakeLedger) ID() string   { return "run-1" }
func (*fakeLedger) Team() string { return "team-1" }

func (f *fakeLedger) Count(name string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[name] += n
}

// stepFP is a delivered fingerprint with its step: a store keeps them by
// step, so an item is found only under the step it was marked with.
type stepFP struct {
	step int64
	fp   uint64
}

func (f *fakeLedger) Delivered(_ context.Context, step int64, fps []uint64) ([]bool, error) {
	f.journal.add("delivered? %d", len(fps))
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]bool, len(fps))
	for i, fp := range fps {
		out[i] = f.delivered[stepFP{step, fp}]
	}
	return out, nil
}

func (f *fakeLedger) MarkDelivered(_ context.Context, step int64, fps []uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fp := range fps {
		f.delivered[stepFP{step, fp}] = true
	}
}

func (f *fakeLedger) Pending(_ context.Context, fp uint64, step int64) platform.Pending {
	f.mu.Lock()
	defer f.mu.Unlock()
	if obj, ok := f.pending[fp]; ok {
		f.journal.add("object of step %d: resumed, range %d", step, obj.Range)
		return &fakePending{f: f, fp: fp, obj: obj}
	}
	obj := platform.Object{Step: step, Range: f.ranges[step]}
	f.ranges[step]++
	f.pending[fp] = obj
	f.journal.add("object of step %d: new, range %d, saved", step, obj.Range)
	return &fakePending{f: f, fp: fp, obj: obj}
}

// fakePending is the ledger's upload of one object, through its sink, as
// a lease's is: progress saved, and on the confirm the episodes delivered
// and the upload forgotten.
type fakePending struct {
	f   *fakeLedger
	fp  uint64
	obj platform.Object
}

func (p *fakePending) Range() int64 { return p.obj.Range }

func (p *fakePending) Send(ctx context.Context, body []byte, episodes []uint64) error {
	f := p.f
	err := f.sink.Store(ctx, f.ID(), p.obj, body, func(obj platform.Object) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pending[p.fp] = obj
		f.journal.add("save: %s", progress(obj))
	})
	if err != nil {
		return err
	}
	f.MarkDelivered(ctx, p.obj.Step, episodes)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pending, p.fp)
	f.journal.add("done: %d episodes delivered", len(episodes))
	return nil
}

func (f *fakeLedger) DocumentsOnTable() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.onTable
}

func (f *fakeLedger) TracesCommitted(context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed = true
}

func (f *fakeLedger) MoveDocumentsToTable(context.Context) (onTable, switched bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.committed || f.onTable {
		return f.onTable, false
	}
	f.onTable = true
	return true, true
}

// pendingObjects are the uploads the ledger still holds.
func (f *fakeLedger) pendingObjects() []platform.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []platform.Object
	for _, obj := range f.pending {
		out = append(out, obj)
	}
	return out
}

// progress says how far an upload got.
func progress(obj platform.Object) string {
	switch {
	case obj.Put:
		return "put"
	case obj.URL != "":
		return "presigned"
	}
	return "new"
}

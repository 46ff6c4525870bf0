package runs

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"go.uber.org/zap"
)

// recordKeeper keeps runs' records in the fleet's store. load returns the
// runs saved before; record reads the fleet's record of a run by key,
// taking no hold (a solo collector's fleet has none beyond its own run
// map); save writes a run's record, logging a failure.
type recordKeeper interface {
	load(ctx context.Context) ([]runstore.SavedRun, error)
	record(ctx context.Context, runKey string) (runstore.SavedRun, bool)
	save(ctx context.Context, r *run)
}

// snapshot is the run's record for the store; closing is what a closing
// run is saved as.
func (r *run) snapshot(closing string) runstore.SavedRun {
	r.mu.Lock()
	sr := runstore.SavedRun{
		Key: r.ident.key(), Source: r.ident.source, Value: r.ident.value, Attach: r.ident.attach,
		ID: r.id, Team: r.team, EndState: r.end.Status, EndWhy: r.end.Reason, Traces: r.traces,
	}
	ev := r.eval
	switch r.state {
	case stateEnding:
		sr.State = runstore.StateEnding
	case stateClosing:
		sr.State = closing
	case stateClosed:
		sr.State = runstore.StateClosed
	}
	r.mu.Unlock()
	if ev != nil {
		sr.Eval = ev.saved()
	}
	sr.Ranges = r.ranges.snapshot()
	pending := r.pending.cache()
	for _, fp := range pending.Keys() {
		o, ok := pending.Peek(fp)
		if !ok {
			continue
		}
		if sr.Pending == nil {
			sr.Pending = map[string]runstore.SavedObject{}
		}
		sr.Pending[strconv.FormatUint(fp, 16)] = savedObject(o)
	}
	return sr
}

// Restore rebuilds the registry from the store at start: closed runs stay
// closed, runs that had ended are closed out after the grace period, and
// open runs carry on with their platform id, counters and pending uploads.
// A store that cannot be read does not stop the collector, which would
// only start again into the same error: it starts without the saved runs,
// and says what that costs. Damaged records are the store's to salvage or
// leave out (internal/runstore).
func (g *Registry) Restore(ctx context.Context) {
	saved, err := g.fleet.records.load(ctx)
	if err != nil {
		g.Logger.Error("Could not read the runs saved in storage: starting without them; a run created before this start is created again when its data comes (a second run on the platform), and its episodes may be uploaded again",
			zap.Error(err))
		return
	}
	g.mu.Lock()
	var ending []*run
	for _, sr := range saved {
		r := newRun(savedIdentity(sr))
		r.id, r.team, r.traces = sr.ID, sr.Team, sr.Traces
		r.end = End{Status: sr.EndState, Reason: sr.EndWhy}
		r.lastSeen = g.now()
		switch sr.State {
		case runstore.StateClosed:
			r.state = stateClosed
		case runstore.StateEnding:
			ending = append(ending, r)
		}
		if sr.Eval != nil {
			r.evalState().restore(sr.Eval)
		}
		r.ranges.restore(sr.Ranges)
		for k, o := range sr.Pending {
			if fp, err := strconv.ParseUint(k, 16, 64); err == nil {
				r.pending.cache().Add(fp, objectOf(o))
			}
		}
		g.runs[sr.Key] = r
	}
	g.mu.Unlock()
	for _, r := range ending {
		g.closer.requestEnd(r, r.end)
	}
	if len(saved) > 0 {
		g.Logger.Info("Restored runs from storage", zap.Int("runs", len(saved)), zap.Int("ending", len(ending)))
	}
}

func (s *sampleRanges) snapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.next) == 0 {
		return nil
	}
	out := make(map[string]int64, len(s.next)+1)
	for step, n := range s.next {
		out[strconv.FormatInt(step, 10)] = n
	}
	if s.floor != math.MinInt64 {
		out[runstore.RangeFloorKey] = s.floor
	}
	return out
}

func (s *sampleRanges) restore(m map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range m {
		if k == runstore.RangeFloorKey {
			s.floor = n
		} else if step, err := strconv.ParseInt(k, 10, 64); err == nil {
			s.next[step] = n
		}
	}
}

// savedObject and objectOf convert a pending upload to its store record
// and back.
func savedObject(o platform.Object) runstore.SavedObject {
	return runstore.SavedObject{
		Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key,
		PresignedAt: o.PresignedAt, ExpiresIn: int64(o.ExpiresIn / time.Second), Put: o.Put,
	}
}

func objectOf(o runstore.SavedObject) platform.Object {
	return platform.Object{
		Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key,
		PresignedAt: o.PresignedAt, ExpiresIn: time.Duration(o.ExpiresIn) * time.Second, Put: o.Put,
	}
}

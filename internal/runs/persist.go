package runs

import (
	"context"
	"math"

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
	if r.ranges.sequential {
		sr.RangesFrom = r.ranges.band()
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
	var ending, bands []*run
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
		r.ranges.restoreBand(rangesFrom(sr))
		if r.ranges.sequential && r.state != stateClosed {
			bands = append(bands, r)
		}
		g.runs[sr.Key] = r
	}
	g.mu.Unlock()
	// A restored run counts in a band of its own, saved before any
	// object takes a range of it.
	if _, alone := g.fleet.objects.(*solo); alone {
		for _, r := range bands {
			g.fleet.records.save(ctx, r)
		}
	}
	for _, r := range ending {
		g.closer.requestEnd(r, r.end)
	}
	if len(saved) > 0 {
		g.Logger.Info("Restored runs from storage", zap.Int("runs", len(saved)), zap.Int("ending", len(ending)))
	}
}

// rangesFrom is where a restored run's ranges are free: the band its
// record holds, or, in a record written before bands, above every counter
// and pending upload it kept.
func rangesFrom(sr runstore.SavedRun) int64 {
	if sr.Ranges[runstore.RangeFloorKey] == math.MaxInt64 {
		return randomRangeLow // ranges lost (runstore's salvage): no step counts again
	}
	from := sr.RangesFrom
	for k, n := range sr.Ranges {
		if k != runstore.RangeFloorKey {
			from = max(from, n)
		}
	}
	for _, o := range sr.Pending {
		from = max(from, o.Range+1)
	}
	return from
}

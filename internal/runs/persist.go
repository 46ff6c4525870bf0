package runs

import (
	"context"
	"math"
	"strconv"

	"go.uber.org/zap"
)

// Saved run states. Only a shared store is told of closing: there other
// collectors must refuse the run's data while its close-out drains, and a
// restart of the fleet must finish a close-out that was cut short.
const (
	savedEnding  = "ending"
	savedClosing = "closing"
	savedClosed  = "closed"
)

// snapshot is the run's record for the store; closing is what a closing
// run is saved as.
func (r *run) snapshot(closing string) SavedRun {
	r.mu.Lock()
	sr := SavedRun{
		Key: r.ident.key(), Source: r.ident.source, Value: r.ident.value, Attach: r.ident.attach,
		ID: r.id, Team: r.team, EndState: r.end.Status, EndWhy: r.end.Reason, Traces: r.traces,
	}
	ev := r.eval
	switch r.state {
	case stateEnding:
		sr.State = savedEnding
	case stateClosing:
		sr.State = closing
	case stateClosed:
		sr.State = savedClosed
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
			sr.Pending = map[string]SavedObject{}
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
// leave out (store_salvage.go).
func (g *Registry) Restore(ctx context.Context) {
	saved, err := g.fleet.load(ctx)
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
		case savedClosed:
			r.state = stateClosed
		case savedEnding:
			ending = append(ending, r)
		}
		if sr.Eval != nil {
			r.evalState().restore(sr.Eval)
		}
		r.ranges.restore(sr.Ranges)
		for k, o := range sr.Pending {
			if fp, err := strconv.ParseUint(k, 16, 64); err == nil {
				r.pending.cache().Add(fp, o.object())
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
		out[rangeFloorKey] = s.floor
	}
	return out
}

func (s *sampleRanges) restore(m map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range m {
		if k == rangeFloorKey {
			s.floor = n
		} else if step, err := strconv.ParseInt(k, 10, 64); err == nil {
			s.next[step] = n
		}
	}
}

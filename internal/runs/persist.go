package runs

import (
	"context"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// Saved run states.
const (
	savedEnding = "ending"
	savedClosed = "closed"
)

// snapshot is the run's record for the store.
func (r *run) snapshot() SavedRun {
	r.mu.Lock()
	sr := SavedRun{
		Key: r.ident.key(), Source: r.ident.source, Value: r.ident.value, Attach: r.ident.attach,
		ID: r.id, Team: r.team, EndState: r.end.Status, EndWhy: r.end.Reason, Traces: r.traces,
	}
	switch r.state {
	case stateEnding:
		sr.State = savedEnding
	case stateClosing, stateClosed:
		sr.State = savedClosed
	}
	r.mu.Unlock()
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
		sr.Pending[strconv.FormatUint(fp, 16)] = SavedObject{
			Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key,
			PresignedAt: o.PresignedAt, ExpiresIn: int64(o.ExpiresIn / time.Second), Put: o.Put,
		}
	}
	return sr
}

// persist saves the run's record. A failed save is logged, not returned:
// the data was handled, and what is lost is only what a restart would
// remember.
func (g *Registry) persist(ctx context.Context, r *run) {
	if err := g.Store.Save(ctx, r.snapshot()); err != nil {
		g.Warn.Warn("persist\x00"+r.ident.key(), "Could not save the run's state to storage; a restart may not remember it", zap.Stringer("run", r.ident), zap.Error(err))
	}
}

// Restore rebuilds the registry from the store at start: closed runs stay
// closed, runs that had ended are closed out after the grace period, and
// open runs carry on with their platform id, counters and pending uploads.
func (g *Registry) Restore(ctx context.Context) error {
	saved, err := g.Store.Load(ctx)
	if err != nil {
		return err
	}
	g.mu.Lock()
	var ending []*run
	for _, sr := range saved {
		r := newRun(identity{source: sr.Source, value: sr.Value, attach: sr.Attach})
		r.id, r.team, r.traces = sr.ID, sr.Team, sr.Traces
		r.end = End{Status: sr.EndState, Reason: sr.EndWhy}
		r.lastSeen = g.now()
		switch sr.State {
		case savedClosed:
			r.state = stateClosed
		case savedEnding:
			ending = append(ending, r)
		}
		r.ranges.restore(sr.Ranges)
		for k, o := range sr.Pending {
			if fp, err := strconv.ParseUint(k, 16, 64); err == nil {
				r.pending.cache().Add(fp, platform.Object{
					Step: o.Step, Range: o.Range, URL: o.URL, Key: o.Key,
					PresignedAt: o.PresignedAt, ExpiresIn: time.Duration(o.ExpiresIn) * time.Second, Put: o.Put,
				})
			}
		}
		g.runs[sr.Key] = r
	}
	g.mu.Unlock()
	for _, r := range ending {
		g.requestEnd(r, r.end)
	}
	if len(saved) > 0 {
		g.Logger.Info("Restored runs from storage", zap.Int("runs", len(saved)), zap.Int("ending", len(ending)))
	}
	return nil
}

func (s *sampleRanges) snapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.next) == 0 {
		return nil
	}
	out := make(map[string]int64, len(s.next))
	for step, n := range s.next {
		out[strconv.FormatInt(step, 10)] = n
	}
	return out
}

func (s *sampleRanges) restore(m map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range m {
		if step, err := strconv.ParseInt(k, 10, 64); err == nil {
			s.next[step] = n
		}
	}
}

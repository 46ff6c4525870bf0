package primeexporter

import (
	"context"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// snapshot is the run's record for storage.
func (r *run) snapshot() persistedRun {
	r.mu.Lock()
	pr := persistedRun{
		Key: r.ident.registryKey(), Source: r.ident.source, Value: r.ident.value, Attach: r.ident.attach,
		ID: r.id, EndState: r.end.status, EndWhy: r.end.reason,
	}
	switch r.state {
	case stateEnding:
		pr.State = "ending"
	case stateClosing, stateClosed:
		pr.State = "closed"
	}
	r.mu.Unlock()
	pr.Ranges = r.ranges.snapshot()
	pr.Pending = r.pending.snapshot()
	return pr
}

// persist saves the run's record. A failed save is logged, not returned:
// the data was handled, and what is lost is only what a restart would
// remember.
func (g *registry) persist(ctx context.Context, r *run) {
	if err := g.store.save(ctx, r.snapshot()); err != nil {
		g.warn.Warn("persist\x00"+r.ident.registryKey(), "Could not save the run's state to storage; a restart may not remember it", zap.Stringer("run", r.ident), zap.Error(err))
	}
}

// restore rebuilds the registry from storage at start: closed runs stay
// closed, runs that had ended are closed out after the grace period, and
// open runs carry on with their platform id, counters and pending uploads.
func (g *registry) restore(ctx context.Context) error {
	saved, err := g.store.load(ctx)
	if err != nil {
		return err
	}
	g.mu.Lock()
	var ending []*run
	for _, pr := range saved {
		ident := identity{source: pr.Source, value: pr.Value, attach: pr.Attach}
		r := newRun(ident)
		r.id = pr.ID
		r.end = endRequest{status: pr.EndState, reason: pr.EndWhy}
		r.lastSeen = g.now()
		switch pr.State {
		case "closed":
			r.state = stateClosed
		case "ending":
			ending = append(ending, r)
		}
		r.ranges.restore(pr.Ranges)
		r.pending.restore(pr.Pending)
		g.runs[pr.Key] = r
	}
	g.mu.Unlock()
	for _, r := range ending {
		g.requestEnd(r, r.end)
	}
	if len(saved) > 0 {
		g.logger.Info("Restored runs from storage", zap.Int("runs", len(saved)), zap.Int("ending", len(ending)))
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

func (p *pendingObjects) snapshot() map[string]persistedObject {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.objs) == 0 {
		return nil
	}
	out := make(map[string]persistedObject, len(p.objs))
	for fp, o := range p.objs {
		out[strconv.FormatUint(fp, 16)] = persistedObject{
			Step: o.step, Range: o.rangeIdx, URL: o.url, Key: o.key,
			PresignedAt: o.presignedAt, ExpiresIn: int64(o.expiresIn / time.Second), Put: o.put,
		}
	}
	return out
}

func (p *pendingObjects) restore(m map[string]persistedObject) {
	for k, o := range m {
		fp, err := strconv.ParseUint(k, 16, 64)
		if err != nil {
			continue
		}
		p.remember(fp, &pendingObject{
			step: o.Step, rangeIdx: o.Range, url: o.URL, key: o.Key,
			presignedAt: o.PresignedAt, expiresIn: time.Duration(o.ExpiresIn) * time.Second, put: o.Put,
		})
	}
}

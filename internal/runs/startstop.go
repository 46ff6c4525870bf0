package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// maxListedRuns bounds the run ids one log line lists.
const maxListedRuns = 20

// Start begins marking created runs crashed after idle_timeout without
// data and, with a shared registry, this collector's heartbeat.
func (g *Registry) Start() {
	if g.shared != nil {
		g.beat.Go(g.heartbeat)
	}
	if g.cfg.IdleTimeout <= 0 {
		return
	}
	every := min(max(g.cfg.IdleTimeout/10, 10*time.Millisecond), time.Minute)
	g.janitor.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-g.stop:
				return
			case <-t.C:
				g.closeIdle()
			}
		}
	})
}

func (g *Registry) closeIdle() {
	now := g.now()
	isIdle := func(r *run) bool {
		return r.state == stateOpen && !r.ident.attach && r.id != "" && r.inflight == 0 && now.Sub(r.lastSeen) >= g.cfg.IdleTimeout
	}
	g.mu.Lock()
	var idle []*run
	for _, r := range g.runs {
		r.mu.Lock()
		if isIdle(r) {
			idle = append(idle, r)
		}
		r.mu.Unlock()
	}
	g.mu.Unlock()
	for _, r := range idle {
		// A fleet's run is idle only when no collector of it took data.
		if g.shared != nil && g.seenElsewhere(r) {
			continue
		}
		r.mu.Lock()
		still := isIdle(r)
		if still {
			r.state, r.end = stateEnding, End{Status: StatusCrashed, Reason: "no telemetry for " + g.cfg.IdleTimeout.String()}
		}
		r.mu.Unlock()
		if !still {
			continue
		}
		g.Logger.Warn("Run sent no telemetry for idle_timeout; closing it out as crashed", zap.Stringer("run", r.ident), zap.Duration("idle_timeout", g.cfg.IdleTimeout))
		if g.shared != nil {
			g.persist(context.Background(), r)
		}
		g.closeOut(r)
	}
}

// Shutdown stops the janitor and finishes the close-outs the trainers
// asked for, skipping what is left of their grace periods. Runs that did
// not end stay open: a collector restart is not the end of a training run.
func (g *Registry) Shutdown(ctx context.Context) error {
	close(g.stop)
	g.janitor.Wait()
	g.mu.Lock()
	var pending []*run
	var open []string
	for _, r := range g.runs {
		r.mu.Lock()
		switch {
		case r.endTimer != nil && r.endTimer.Stop():
			pending = append(pending, r)
		case r.state == stateOpen && r.id != "":
			open = append(open, r.id)
		}
		r.mu.Unlock()
	}
	g.mu.Unlock()
	slices.Sort(open)
	if len(open) > maxListedRuns {
		open = append(open[:maxListedRuns], fmt.Sprintf("… %d more", len(open)-maxListedRuns))
	}
	g.Logger.Info("Prime exporter shutting down: ended runs are closed out now; open runs stay open and continue after a restart",
		zap.Int("closing_out", len(pending)), zap.Int("open_runs", len(open)), zap.Strings("open_run_ids", open),
		zap.Bool("storage", g.cfg.Persistent))
	for _, r := range pending {
		go func() {
			defer g.closeouts.Done()
			g.closeOut(r)
		}()
	}
	done := make(chan struct{})
	go func() {
		g.closeouts.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		g.Logger.Warn("Shutdown deadline reached with run close-outs still in flight; with storage they are closed out after a restart", zap.Int("ended_runs", len(pending)))
		err = ctx.Err()
	}
	close(g.beatStop)
	g.beat.Wait()
	return errors.Join(err, g.Store.Close(ctx))
}

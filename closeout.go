package primeexporter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/rft"
)

// Run statuses a trainer can report in prime.run.end.
const (
	statusCompleted = "completed"
	statusFailed    = "failed"
	statusCancelled = "cancelled"
	statusCrashed   = "crashed"

	attrRunStatus = "prime.run.status"
	attrRunError  = "prime.run.error"
)

// endRequest is what a run is closed out with.
type endRequest struct {
	status string
	reason string
}

// parseEnd reads prime.run.end's attributes. An unknown status still closes
// the run (as failed, naming the status): losing the close-out over a typo
// would leave the run open on the platform for good.
func parseEnd(attrs pcommon.Map) (endRequest, error) {
	end := endRequest{status: statusCompleted}
	if v, ok := attrs.Get(attrRunError); ok {
		end.reason = v.AsString()
	}
	v, ok := attrs.Get(attrRunStatus)
	if !ok {
		return end, nil
	}
	s, isStr := pvalue.String(v)
	switch {
	case !isStr:
		end.status, end.reason = statusFailed, joinReason("prime.run.status of type "+pvalue.TypeName(v), end.reason)
		return end, fmt.Errorf("attribute %s must be a string, got %s", attrRunStatus, pvalue.TypeName(v))
	case s == statusCompleted || s == statusFailed || s == statusCancelled || s == statusCrashed:
		end.status = s
		return end, nil
	default:
		end.status, end.reason = statusFailed, joinReason("unknown status "+s, end.reason)
		return end, fmt.Errorf("attribute %s %q is not completed, failed, cancelled or crashed", attrRunStatus, s)
	}
}

func joinReason(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// statusMessage is rft-api.md's error_message: the API only knows
// completed and failed, so the finer reason leads the message.
func (e endRequest) statusMessage() string {
	switch e.status {
	case statusCancelled, statusCrashed:
		return joinReason(e.status, e.reason)
	case statusFailed:
		if e.reason == "" {
			return statusFailed
		}
		return e.reason
	}
	return ""
}

// requestEnd starts a run's close-out after the grace period, in which data
// still travelling in the other signal's pipeline is accepted. The first end
// wins.
func (g *registry) requestEnd(r *run, end endRequest) {
	r.mu.Lock()
	if r.state != stateOpen {
		r.mu.Unlock()
		return
	}
	r.state, r.end = stateEnding, end
	r.mu.Unlock()
	// Saved before the grace period: a restart then still closes the run.
	g.persist(context.Background(), r)
	r.mu.Lock()
	defer r.mu.Unlock()
	g.closeouts.Add(1)
	r.endTimer = time.AfterFunc(g.cfg.FinalizeGrace, func() {
		defer g.closeouts.Done()
		g.closeOut(r)
	})
}

// closeOut drains the run and sends its terminal status. It runs once per
// run: stateClosing is taken under the run's lock.
func (g *registry) closeOut(r *run) {
	g.awaitRetries(r)
	r.mu.Lock()
	if r.state >= stateClosing {
		r.mu.Unlock()
		return
	}
	r.state = stateClosing
	var drained <-chan struct{}
	if r.inflight > 0 {
		ch := make(chan struct{})
		r.drained, drained = ch, ch
	}
	end, id := r.end, r.id
	r.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.FinalizeTimeout)
	defer cancel()
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
			g.logger.Warn("Closing out a run whose last data is still being sent", zap.Stringer("run", r.ident), zap.String("run_id", id))
		}
	}
	defer func() {
		r.mu.Lock()
		r.state = stateClosed
		r.mu.Unlock()
		g.persist(context.WithoutCancel(ctx), r)
		r.dropState()
	}()
	if id == "" {
		g.logger.Warn("Run ended before it could be created on the platform; nothing to close out", zap.Stringer("run", r.ident), zap.String("status", end.status))
		return
	}
	if err := g.sendEndUntilDone(ctx, r, id, end); err != nil {
		g.logger.Error("Could not close out run", zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.status), zap.Error(err))
		return
	}
	g.tel.runEvent("closed")
	fields := append([]zap.Field{zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.status),
		zap.String("reason", end.reason), zap.Int("metric_values_sent", r.sent.total())}, r.stats.fields()...)
	g.logger.Info("Closed out run", fields...)
}

// sendEnd maps a status to the platform: completed → finalize (falling back
// to the status route on a permanent error); anything else → status failed.
// An attached run belongs to its launcher, which marks its failures.
func (g *registry) sendEnd(ctx context.Context, r *run, id string, end endRequest) error {
	if end.status == statusCompleted {
		err := g.p.Finalize(ctx, id, 0)
		if isPermanent(err) && !errors.Is(err, errUnauthorized) {
			g.logger.Warn("Finalize refused; marking the run completed through the status route", zap.String("run_id", id), zap.Error(err))
			err = g.p.SetStatus(ctx, id, rft.StatusCompleted, "")
		}
		return err
	}
	if r.ident.attach {
		g.logger.Info("Attached run ended without completing; its launcher marks the failure, so the exporter does not", zap.String("run_id", id), zap.String("status", end.status), zap.String("reason", end.reason))
		return nil
	}
	return g.p.SetStatus(ctx, id, rft.StatusFailed, end.statusMessage())
}

// startJanitor marks created runs crashed after idle_timeout without data.
func (g *registry) startJanitor() {
	if g.cfg.IdleTimeout <= 0 {
		return
	}
	every := min(max(g.cfg.IdleTimeout/10, 10*time.Millisecond), time.Minute)
	g.janitor.Add(1)
	go func() {
		defer g.janitor.Done()
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
	}()
}

func (g *registry) closeIdle() {
	now := g.now()
	g.mu.Lock()
	var idle []*run
	for _, r := range g.runs {
		r.mu.Lock()
		if r.state == stateOpen && !r.ident.attach && r.id != "" && r.inflight == 0 && now.Sub(r.lastSeen) >= g.cfg.IdleTimeout {
			r.state, r.end = stateEnding, endRequest{status: statusCrashed, reason: "no telemetry for " + g.cfg.IdleTimeout.String()}
			idle = append(idle, r)
		}
		r.mu.Unlock()
	}
	g.mu.Unlock()
	for _, r := range idle {
		g.logger.Warn("Run sent no telemetry for idle_timeout; closing it out as crashed", zap.Stringer("run", r.ident), zap.Duration("idle_timeout", g.cfg.IdleTimeout))
		g.closeOut(r)
	}
}

// maxListedRuns bounds the run ids one log line lists.
const maxListedRuns = 20

// dropState drops what a closed run no longer needs; the entry itself stays,
// so that later data for it is refused rather than starting a new run.
func (r *run) dropState() {
	r.sent.reset()
	r.ranges.reset()
	r.pending.reset()
}

// shutdownTimersOnly stops the janitor and the grace timers without
// closing anything out: what a kill -9 leaves behind, for restart tests.
func (g *registry) shutdownTimersOnly() {
	close(g.stop)
	g.janitor.Wait()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.runs {
		r.mu.Lock()
		if r.endTimer != nil && r.endTimer.Stop() {
			g.closeouts.Done()
		}
		r.mu.Unlock()
	}
}

// shutdown stops the janitor and finishes the close-outs the trainers asked
// for, skipping what is left of their grace periods. Runs that did not end
// stay open: a collector restart is not the end of a training run.
func (g *registry) shutdown(ctx context.Context) error {
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
	sort.Strings(open)
	if len(open) > maxListedRuns {
		open = append(open[:maxListedRuns], fmt.Sprintf("… %d more", len(open)-maxListedRuns))
	}
	g.logger.Info("Prime exporter shutting down: ended runs are closed out now; open runs stay open and continue after a restart",
		zap.Int("closing_out", len(pending)), zap.Int("open_runs", len(open)), zap.Strings("open_run_ids", open),
		zap.Bool("storage", g.cfg.Storage != nil))
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
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		g.logger.Warn("Shutdown deadline reached with run close-outs still in flight; with storage they are closed out after a restart", zap.Int("ended_runs", len(pending)))
		return ctx.Err()
	}
}

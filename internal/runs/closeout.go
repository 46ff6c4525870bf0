package runs

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
)

// closeOutRetryPause is the wait between rounds of a close-out that failed
// for a reason that may pass (an outage, throttling). The client has
// already retried in place; this slower outer loop is bounded by
// finalize_timeout.
const closeOutRetryPause = 5 * time.Second

// retriesPoll is how often a close-out looks again whether the run's data
// still waits in the collector's retry.
const retriesPoll = 50 * time.Millisecond

// End starts the run's close-out after the grace period, in which data
// still travelling in the other signal's pipeline is accepted. The first
// end wins.
func (l Lease) End(end End) { l.g.requestEnd(l.r, end) }

func (g *Registry) requestEnd(r *run, end End) {
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
func (g *Registry) closeOut(r *run) {
	g.awaitRetries(r)
	if g.shared != nil && !g.claimCloseOut(r) {
		return
	}
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
	// The waits for data still being sent take at most half of
	// finalize_timeout, so that the terminal status always gets its turn:
	// a peer killed while holding the run would otherwise use up the whole
	// close-out, and the run would stay RUNNING for good.
	waitCtx, cancelWait := context.WithTimeout(ctx, g.cfg.FinalizeTimeout/2)
	defer cancelWait()
	if drained != nil {
		select {
		case <-drained:
		case <-waitCtx.Done():
			g.Logger.Warn("Closing out a run whose last data is still being sent", zap.Stringer("run", r.ident), zap.String("run_id", id))
		}
	}
	if g.shared != nil {
		g.awaitLeases(waitCtx, r)
	}
	defer func() {
		r.mu.Lock()
		r.state = stateClosed
		r.mu.Unlock()
		g.persist(context.WithoutCancel(ctx), r)
		r.dropState()
	}()
	if id == "" {
		g.Logger.Warn("Run ended before it could be created on the platform; nothing to close out", zap.Stringer("run", r.ident), zap.String("status", end.Status))
		return
	}
	if err := g.sendEndUntilDone(ctx, r, id, end); err != nil {
		g.Logger.Error("Could not close out run", zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.Status), zap.Error(err))
		return
	}
	g.Tel.RunEvent("closed")
	fields := append([]zap.Field{zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.Status),
		zap.String("reason", end.Reason), zap.Int("metric_values_sent", r.sent.total())}, r.stats.fields()...)
	g.Logger.Info("Closed out run", fields...)
}

// awaitRetries holds a close-out, while the run still accepts data, until
// none of the run's pushes is in flight and none of its data waits in the
// collector's retry (handBacks). During a platform outage the run's data
// sits in exporterhelper's back-off, out of the drain's sight, while its
// end needs no request and is accepted at once; closing then would refuse
// that data when its retry comes, and it would be lost. The wait ends by
// itself: a hand-back is forgotten once retry_on_failure's
// max_elapsed_time has passed, and in-flight pushes end with their
// in-place attempts. Collector shutdown stops the retries, so it stops the
// wait too.
func (g *Registry) awaitRetries(r *run) {
	logged := false
	poll := retriesPoll
	if g.shared != nil {
		poll = sharedPoll
	}
	for {
		r.mu.Lock()
		quiet := r.inflight == 0 && !g.retriesWaiting(r)
		r.mu.Unlock()
		if quiet && (g.shared == nil || g.fleetQuiet(r)) {
			return
		}
		if !logged {
			g.Logger.Info("Run ended; its close-out waits for its data still being sent or in the collector's retry",
				zap.Stringer("run", r.ident), zap.String("run_id", r.platformID()))
			logged = true
		}
		t := time.NewTimer(poll)
		select {
		case <-g.stop:
			t.Stop()
			return
		case <-g.Stopping:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// sendEndUntilDone sends the run's terminal status, trying again after a
// retryable failure until ctx ends. The prime.run.end record was
// acknowledged to the collector when the close-out was scheduled, so
// nothing else would ever retry it: giving up after one round of in-place
// attempts would leave the run RUNNING on the platform for good. Every
// request here is replayable (finalize and status are compare-and-set, a
// 409 counts as done).
func (g *Registry) sendEndUntilDone(ctx context.Context, r *run, id string, end End) error {
	for round := 1; ; round++ {
		err := g.sendEnd(ctx, r, id, end)
		if err == nil || platform.Permanent(err) {
			return err
		}
		if round == 1 {
			g.Logger.Warn("Closing out the run failed; trying again until finalize_timeout",
				zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.Status), zap.Error(err))
		}
		if g.pause(ctx, max(closeOutRetryPause, platform.RetryAfter(err))) != nil {
			return err
		}
	}
}

// sendEnd maps a status to the platform: completed → finalize (falling
// back to the status route on a permanent error); anything else → status
// failed. An attached run belongs to its launcher, which marks its
// failures.
func (g *Registry) sendEnd(ctx context.Context, r *run, id string, end End) error {
	if r.ident.eval {
		return g.sendEvalEnd(ctx, r, id, end)
	}
	if end.Status == StatusCompleted {
		return platform.Complete(ctx, g.API, id, 0, func(err error) {
			g.Logger.Warn("Finalize refused; marking the run completed through the status route", zap.String("run_id", id), zap.Error(err))
		})
	}
	if r.ident.attach {
		g.Logger.Info("Attached run ended without completing; its launcher marks the failure, so the exporter does not", zap.String("run_id", id), zap.String("status", end.Status), zap.String("reason", end.Reason))
		return nil
	}
	return g.API.SetStatus(ctx, id, rft.StatusFailed, end.statusMessage())
}

package runs

import (
	"context"
	"fmt"
	"slices"
	"sync"
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

// afterWaitQuiet is how long, past the sending queue's batch
// flush_timeout, a run's pushes must have been over before a close-out
// that had to wait for them or for retries goes on. The batch that ended
// is not the end of the run's data: the batches the trainer sent during an
// outage (or a slow push) wait in the queue behind it, and the consumer
// takes the next once it ends, batching it for up to flush_timeout. In
// between nothing of the run is in flight or in retry; a close-out looking
// then would refuse the rest when it comes.
const afterWaitQuiet = time.Second

// maxListedRuns bounds the run ids one log line lists.
const maxListedRuns = 20

// closeOutFleet is what a close-out asks of the fleet. claimCloseOut says
// whether this collector closes the run out now. shareEnd tells the fleet
// of an end found here (the idle janitor's). quiet says no other collector
// holds the run's data; poll is how often a close-out looks again.
// awaitLeases waits, within ctx, for the pushes other collectors had in
// flight when the run was marked closing. seenElsewhere says another
// collector took the run's data within idle_timeout. save writes the
// run's record (ending, closed).
type closeOutFleet interface {
	claimCloseOut(r *run) claim
	shareEnd(ctx context.Context, r *run)
	quiet(r *run) bool
	poll() time.Duration
	awaitLeases(ctx context.Context, r *run)
	seenElsewhere(r *run) bool
	save(ctx context.Context, r *run)
}

// closer closes runs out: the sequence a run's end starts (requestEnd, wait
// for its data, send the terminal status until it lands), the idle_timeout
// janitor, and the goroutines of both, which it starts and, at shutdown,
// stops or waits for.
type closer struct {
	cfg       Config
	api       platform.Runs
	evals     platform.Evals
	log       *zap.Logger
	tel       Telemetry
	stopping  <-chan struct{}
	now       func() time.Time
	pause     func(ctx context.Context, d time.Duration) error
	fleet     closeOutFleet
	handBacks *handBacks
	// runs lists the registry's runs, for the janitor and the shutdown.
	runs func() []*run

	// closeouts counts the close-outs scheduled (grace timers, later
	// rounds) and running at shutdown.
	closeouts sync.WaitGroup
	// stop ends the janitor and the scheduling of later rounds.
	stop    chan struct{}
	janitor sync.WaitGroup
}

// requestEnd starts the run's close-out after the grace period, in which
// data still travelling in the other signal's pipeline is accepted. The
// first end wins.
func (c *closer) requestEnd(r *run, end End) {
	r.mu.Lock()
	if r.state != stateOpen {
		r.mu.Unlock()
		return
	}
	r.state, r.end = stateEnding, end
	r.mu.Unlock()
	// Saved before the grace period: a restart then still closes the run.
	c.fleet.save(context.Background(), r)
	r.mu.Lock()
	defer r.mu.Unlock()
	c.closeouts.Add(1)
	r.endTimer = time.AfterFunc(c.cfg.FinalizeGrace, func() {
		defer c.closeouts.Done()
		c.closeOut(r)
	})
}

// closeOutLater tries the close-out again after a pause, unless the
// collector is shutting down.
func (c *closer) closeOutLater(r *run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-c.stop:
		return
	default:
	}
	if r.state >= stateClosing {
		return
	}
	c.closeouts.Add(1)
	r.endTimer = time.AfterFunc(closeOutRetryPause, func() {
		defer c.closeouts.Done()
		c.closeOut(r)
	})
}

// closeOut drains the run and sends its terminal status. It runs once per
// run: stateClosing is taken under the run's lock.
func (c *closer) closeOut(r *run) {
	c.awaitRetries(r)
	switch c.fleet.claimCloseOut(r) {
	case closeLater:
		c.closeOutLater(r)
		return
	case closeNone:
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

	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.FinalizeTimeout)
	defer cancel()
	// The waits for data still being sent take at most half of
	// finalize_timeout, so that the terminal status always gets its turn:
	// a peer killed while holding the run would otherwise use up the whole
	// close-out, and the run would stay RUNNING for good.
	waitCtx, cancelWait := context.WithTimeout(ctx, c.cfg.FinalizeTimeout/2)
	defer cancelWait()
	if drained != nil {
		select {
		case <-drained:
		case <-waitCtx.Done():
			c.log.Warn("Closing out a run whose last data is still being sent", zap.Stringer("run", r.ident), zap.String("run_id", id))
		}
	}
	c.fleet.awaitLeases(waitCtx, r)
	defer func() {
		r.mu.Lock()
		r.state = stateClosed
		r.mu.Unlock()
		c.fleet.save(context.WithoutCancel(ctx), r)
		r.dropState()
	}()
	if id == "" {
		c.log.Warn("Run ended before it could be created on the platform; nothing to close out", zap.Stringer("run", r.ident), zap.String("status", end.Status))
		return
	}
	if err := c.sendEndUntilDone(ctx, r, id, end); err != nil {
		c.log.Error("Could not close out run", zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.Status), zap.Error(err))
		return
	}
	c.tel.RunEvent("closed")
	fields := append([]zap.Field{zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.Status),
		zap.String("reason", end.Reason), zap.Int("metric_values_sent", r.sent.total())}, r.stats.fields()...)
	c.log.Info("Closed out run", fields...)
}

// awaitRetries holds a close-out, while the run still accepts data, until
// none of the run's pushes is in flight, none of its data waits in the
// collector's retry (handBacks), the fleet holds none either, and, when it
// had to wait, the queue's batches behind have had their turn
// (afterWaitQuiet). During a platform outage the run's data sits in
// exporterhelper's back-off, out of the drain's sight, while its end needs
// no request and is accepted at once; closing then would refuse that data
// when its retry comes, and it would be lost. The wait ends by itself: a
// hand-back is forgotten once retry_on_failure's max_elapsed_time has
// passed, and in-flight pushes end with their in-place attempts. Collector
// shutdown stops the retries, so it stops the wait too.
func (c *closer) awaitRetries(r *run) {
	logged, waited, start := false, false, c.now()
	for {
		r.mu.Lock()
		waiting := c.retriesWaiting(r)
		waited = waited || waiting || r.inflight > 0
		// The queue's turn is bounded by half of finalize_timeout, as the
		// drain is, for a trainer that keeps sending after its end.
		now := c.now()
		settled := !waited || now.Sub(r.lastDone) >= c.cfg.QueueFlush+afterWaitQuiet ||
			now.Sub(start) >= c.cfg.FinalizeTimeout/2
		quiet := r.inflight == 0 && !waiting && settled
		r.mu.Unlock()
		if quiet && c.fleet.quiet(r) {
			return
		}
		if !logged {
			c.log.Info("Run ended; its close-out waits for its data still being sent or in the collector's retry",
				zap.Stringer("run", r.ident), zap.String("run_id", r.platformID()))
			logged = true
		}
		t := time.NewTimer(c.fleet.poll())
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-c.stopping:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// retriesWaiting reports whether data of the run is in the collector's
// retry.
func (c *closer) retriesWaiting(r *run) bool {
	if !c.cfg.RetryEnabled {
		return false
	}
	return c.handBacks.waiting(r.ident.key(), c.now(), c.cfg.RetryMaxElapsed) > 0
}

// sendEndUntilDone sends the run's terminal status, trying again after a
// retryable failure until ctx ends. The prime.run.end record was
// acknowledged to the collector when the close-out was scheduled, so
// nothing else would ever retry it: giving up after one round of in-place
// attempts would leave the run RUNNING on the platform for good. Every
// request here is replayable (finalize and status are compare-and-set, a
// 409 counts as done).
func (c *closer) sendEndUntilDone(ctx context.Context, r *run, id string, end End) error {
	for round := 1; ; round++ {
		err := c.sendEnd(ctx, r, id, end)
		if err == nil || platform.Permanent(err) {
			return err
		}
		if round == 1 {
			c.log.Warn("Closing out the run failed; trying again until finalize_timeout",
				zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.Status), zap.Error(err))
		}
		if c.pause(ctx, max(closeOutRetryPause, platform.RetryAfter(err))) != nil {
			return err
		}
	}
}

// sendEnd maps a status to the platform: completed → finalize (falling
// back to the status route on a permanent error); anything else → status
// failed. An attached run belongs to its launcher, which marks its
// failures.
func (c *closer) sendEnd(ctx context.Context, r *run, id string, end End) error {
	if r.ident.eval {
		return c.sendEvalEnd(ctx, r, id, end)
	}
	if end.Status == StatusCompleted {
		return platform.Complete(ctx, c.api, id, 0, func(err error) {
			c.log.Warn("Finalize refused; marking the run completed through the status route", zap.String("run_id", id), zap.Error(err))
		})
	}
	if r.ident.attach {
		c.log.Info("Attached run ended without completing; its launcher marks the failure, so the exporter does not", zap.String("run_id", id), zap.String("status", end.Status), zap.String("reason", end.Reason))
		return nil
	}
	return c.api.SetStatus(ctx, id, rft.StatusFailed, end.statusMessage())
}

// start begins marking created runs crashed after idle_timeout without
// data.
func (c *closer) start() {
	if c.cfg.IdleTimeout <= 0 {
		return
	}
	every := min(max(c.cfg.IdleTimeout/10, 10*time.Millisecond), time.Minute)
	c.janitor.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				c.closeIdle()
			}
		}
	})
}

// closeIdle closes out, as crashed, the created runs that took no data
// for idle_timeout, here or (a fleet's) anywhere.
func (c *closer) closeIdle() {
	now := c.now()
	isIdle := func(r *run) bool {
		return r.state == stateOpen && !r.ident.attach && r.id != "" && r.inflight == 0 && now.Sub(r.lastSeen) >= c.cfg.IdleTimeout
	}
	var idle []*run
	for _, r := range c.runs() {
		r.mu.Lock()
		if isIdle(r) {
			idle = append(idle, r)
		}
		r.mu.Unlock()
	}
	for _, r := range idle {
		if c.fleet.seenElsewhere(r) {
			continue
		}
		r.mu.Lock()
		still := isIdle(r)
		if still {
			r.state, r.end = stateEnding, End{Status: StatusCrashed, Reason: "no telemetry for " + c.cfg.IdleTimeout.String()}
		}
		r.mu.Unlock()
		if !still {
			continue
		}
		c.log.Warn("Run sent no telemetry for idle_timeout; closing it out as crashed", zap.Stringer("run", r.ident), zap.Duration("idle_timeout", c.cfg.IdleTimeout))
		c.fleet.shareEnd(context.Background(), r)
		c.closeOut(r)
	}
}

// shutdown stops the janitor and finishes the close-outs the trainers
// asked for, skipping what is left of their grace periods, within ctx.
// Runs that did not end stay open: a collector restart is not the end of
// a training run.
func (c *closer) shutdown(ctx context.Context) error {
	close(c.stop)
	c.janitor.Wait()
	var pending []*run
	var open []string
	for _, r := range c.runs() {
		r.mu.Lock()
		switch {
		case r.endTimer != nil && r.endTimer.Stop():
			pending = append(pending, r)
		case r.state == stateOpen && r.id != "":
			open = append(open, r.id)
		}
		r.mu.Unlock()
	}
	slices.Sort(open)
	if len(open) > maxListedRuns {
		open = append(open[:maxListedRuns], fmt.Sprintf("… %d more", len(open)-maxListedRuns))
	}
	c.log.Info("Prime exporter shutting down: ended runs are closed out now; open runs stay open and continue after a restart",
		zap.Int("closing_out", len(pending)), zap.Int("open_runs", len(open)), zap.Strings("open_run_ids", open),
		zap.Bool("storage", c.cfg.Persistent))
	for _, r := range pending {
		go func() {
			defer c.closeouts.Done()
			c.closeOut(r)
		}()
	}
	done := make(chan struct{})
	go func() {
		c.closeouts.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		c.log.Warn("Shutdown deadline reached with run close-outs still in flight; with storage they are closed out after a restart", zap.Int("ended_runs", len(pending)))
		return ctx.Err()
	}
}

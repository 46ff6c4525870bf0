package primeexporter

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/rft"
)

// retriesPoll is how often a close-out looks again whether the run's data
// still waits in the collector's retry.
const retriesPoll = 50 * time.Millisecond

// awaitRetries holds a close-out, while the run still accepts data, until
// none of the run's pushes is in flight and none of its data waits in the
// collector's retry (handBacks). During a platform outage the run's data
// sits in exporterhelper's back-off, out of the drain's sight, while its
// end needs no request and is accepted at once; closing then would refuse
// that data when its retry comes, and it would be lost. The wait ends by
// itself: a hand-back is forgotten once retry_on_failure's
// max_elapsed_time has passed, and in-flight pushes end with their in-place
// attempts. Collector shutdown stops the retries, so it stops the wait too.
func (g *registry) awaitRetries(r *run) {
	logged := false
	for {
		r.mu.Lock()
		quiet := r.inflight == 0 && !g.retriesWaiting(r)
		r.mu.Unlock()
		if quiet {
			return
		}
		if !logged {
			g.logger.Info("Run ended; its close-out waits for its data still being sent or in the collector's retry",
				zap.Stringer("run", r.ident), zap.String("run_id", r.platformID()))
			logged = true
		}
		t := time.NewTimer(retriesPoll)
		select {
		case <-g.stop:
			t.Stop()
			return
		case <-g.stopping:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// closeOutRetryPause is the wait between rounds of a close-out that failed
// for a reason that may pass (an outage, throttling). The client has
// already retried in place; this slower outer loop is bounded by
// finalize_timeout.
const closeOutRetryPause = 5 * time.Second

// sendEndUntilDone sends the run's terminal status, trying again after a
// retryable failure until ctx ends. The prime.run.end record was
// acknowledged to the collector when the close-out was scheduled, so
// nothing else would ever retry it: giving up after one round of in-place
// attempts would leave the run RUNNING on the platform for good. Every
// request here is replayable (finalize and status are compare-and-set, a
// 409 counts as done).
func (g *registry) sendEndUntilDone(ctx context.Context, r *run, id string, end endRequest) error {
	for round := 1; ; round++ {
		err := g.sendEnd(ctx, r, id, end)
		if err == nil || isPermanent(err) {
			return err
		}
		wait := closeOutRetryPause
		if rerr, ok := rft.AsError(err); ok && rerr.RetryAfter > wait {
			wait = rerr.RetryAfter
		}
		if round == 1 {
			g.logger.Warn("Closing out the run failed; trying again until finalize_timeout",
				zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("status", end.status), zap.Error(err))
		}
		if g.wait(ctx, wait) != nil {
			return err
		}
	}
}

// wait is the registry's pause, a real timer unless a test replaced it.
func (g *registry) wait(ctx context.Context, d time.Duration) error {
	if g.pause != nil {
		return g.pause(ctx, d)
	}
	return sleepUnlessStopping(g.stopping)(ctx, d)
}

package runs

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/runstore"
)

// claimCloseOut says whether this collector closes the run out: the one
// holding the fleet's claim does. The others look again later, so that a
// closer that was killed (its claim expires) is replaced; a run closed
// meanwhile is kept as a tombstone.
func (f *redisFleet) claimCloseOut(r *run) claim {
	r.mu.Lock()
	done := r.state >= stateClosing
	r.mu.Unlock()
	if done {
		return closeNone
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	key := r.ident.key()
	won, err := f.shared.claims.Claim(ctx, "closeout:"+key, f.owner, f.cfg.FinalizeTimeout+closeOutClaimSlack)
	if err != nil {
		return closeLater
	}
	sr, found, _, err := f.shared.holds.Hold(ctx, key, "", 0)
	switch {
	case err != nil:
		if won {
			_ = f.shared.claims.Unclaim(ctx, "closeout:"+key, f.owner)
		}
		return closeLater
	case found && sr.State == runstore.StateClosed:
		r.closedElsewhere()
		return closeNone
	case !won:
		return closeLater
	}
	r.mu.Lock()
	r.closer = true
	if found {
		// The fleet's first end wins, as a single collector's does.
		if r.id == "" {
			r.id, r.team = sr.ID, sr.Team
		}
		if sr.EndState != "" {
			r.end = End{Status: sr.EndState, Reason: sr.EndWhy}
		}
	}
	r.mu.Unlock()
	// Marked closing before this collector stops taking data itself: from
	// this write on no push anywhere gets a hold, so the holds the
	// close-out waits for are all there are.
	closing := r.snapshot(runstore.StateClosing)
	closing.State = runstore.StateClosing
	if err := f.store.Save(ctx, closing); err != nil {
		r.mu.Lock()
		r.closer = false
		r.mu.Unlock()
		_ = f.shared.claims.Unclaim(ctx, "closeout:"+key, f.owner)
		return closeLater
	}
	return closeNow
}

// shareEnd records the run's end in the shared registry, so that the
// fleet sees it ending.
func (f *redisFleet) shareEnd(ctx context.Context, r *run) { f.save(ctx, r) }

// quiet reports whether no collector holds the run: no push in flight
// and no data in a retry. Not knowing counts as not quiet.
func (f *redisFleet) quiet(r *run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	leases, retries, err := f.shared.holds.Holds(ctx, r.ident.key())
	return err == nil && leases == 0 && retries == 0
}

func (*redisFleet) poll() time.Duration { return sharedPoll }

// awaitLeases waits, within the close-out's bound, for the pushes other
// collectors had in flight when the run was marked closing: their data
// lands before the terminal status. No push can start after that mark.
func (f *redisFleet) awaitLeases(ctx context.Context, r *run) {
	for {
		leases, _, err := f.shared.holds.Holds(ctx, r.ident.key())
		if err == nil && leases == 0 {
			return
		}
		t := time.NewTimer(sharedPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.log.Warn("Closing out a run whose last data is still being sent by another collector", zap.Stringer("run", r.ident), zap.String("run_id", r.platformID()))
			return
		case <-f.stopping:
			// A collector shutting down closes out now rather than wait
			// past its shutdown deadline for a peer that may be gone.
			t.Stop()
			f.log.Warn("Closing out a run at shutdown while another collector still holds some of its data", zap.Stringer("run", r.ident), zap.String("run_id", r.platformID()))
			return
		case <-t.C:
		}
	}
}

// seenElsewhere reports whether another collector of the fleet took data
// for the run within idle_timeout, so that the run is not idle.
func (f *redisFleet) seenElsewhere(r *run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	sr, found, _, err := f.shared.holds.Hold(ctx, r.ident.key(), "", 0)
	if err != nil {
		return true // unknown: look again next round
	}
	return found && time.Since(sr.SeenAt) < f.cfg.IdleTimeout
}

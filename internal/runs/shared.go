package runs

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// The shared registry's timings; the package doc says what each costs.
const (
	// holdTTL bounds a hold its collector never let go of (it was killed):
	// a close-out waits for it at most this long. A push lets go far
	// sooner, and data in a collector's retry renews its hold with every
	// attempt.
	holdTTL = 10 * time.Minute
	// heartbeatTTL is how long a collector's holds count after its last
	// heartbeat: a killed collector's holds delay a close-out by at most
	// this. heartbeatEvery renews it, well within; heartbeatRetry after a
	// failed renewal.
	heartbeatTTL   = 15 * time.Second
	heartbeatEvery = 5 * time.Second
	heartbeatRetry = time.Second
	// createClaimTTL is how long one collector may take to create a run
	// before another may try; a create's own attempts end well within it.
	createClaimTTL = 2 * time.Minute
	// createWait is how long a push waits for another collector's create
	// before its data goes back to the collector's retry.
	createWait = 30 * time.Second
	// sharedPoll is how often a collector looks again at a claim or at the
	// holds of a run it closes out.
	sharedPoll = 100 * time.Millisecond
	// closeOutClaimSlack is added to finalize_timeout for the close-out
	// claim, for the closer's last writes.
	closeOutClaimSlack = time.Minute
	// sharedCallTimeout bounds the Redis calls made outside a push's
	// context: letting go of holds and claims, close-outs.
	sharedCallTimeout = 5 * time.Second
	// fallbackRangeLow starts the ranges drawn at random for a step below
	// a run's range floor (maxRangeSteps), and when the shared
	// counter cannot be reached in the middle of a push: above every
	// counted range (a created run counts from 0, an attached one from
	// randomRangeLow, and neither gets near 2^19 objects in one step).
	fallbackRangeLow = randomRangeLow + randomRangeLow/2
)

func newOwner() string {
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// heartbeat renews this collector's heartbeat in the shared registry
// until the registry shuts down, so that the fleet counts its holds.
func (g *Registry) heartbeat() {
	// A renewal waiting on Redis does not hold up the shutdown.
	base, stop := context.WithCancel(context.Background())
	defer stop()
	g.beat.Go(func() {
		<-g.beatStop
		stop()
	})
	sleep := SleepUnless(g.beatStop)
	for wait := time.Duration(0); sleep(base, wait) == nil; {
		ctx, cancel := context.WithTimeout(base, sharedCallTimeout)
		err := g.shared.Alive(ctx, g.owner, heartbeatTTL)
		cancel()
		wait = heartbeatEvery
		if err != nil {
			wait = heartbeatRetry
		}
	}
}

func (g *Registry) holdName(kind rune, n int64) string {
	return string(kind) + ":" + g.owner + ":" + strconv.FormatInt(n, 10)
}

// holdShared registers a push's hold on the run in the shared registry and
// brings the run up to date with what the fleet knows of it. A run that is
// closing or closed anywhere comes back as errRunClosed.
func (g *Registry) holdShared(ctx context.Context, r *run) (string, error) {
	hold := g.holdName(HoldLease, g.holdSeq.Add(1))
	sr, found, held, err := g.shared.Hold(ctx, r.ident.key(), hold, holdTTL)
	if err != nil {
		return "", err
	}
	if found {
		g.adopt(r, sr)
	}
	if !held {
		r.closedElsewhere()
		return "", errRunClosed
	}
	if id := r.platformID(); id != "" && (!found || sr.ID == "") {
		// This collector knows the run but Redis does not: the record's
		// write failed or it expired. Writing it now keeps the fleet from
		// creating the run again.
		g.persist(ctx, r)
	}
	return hold, nil
}

// unhold lets a push's hold go; one that cannot be let go expires.
func (g *Registry) unhold(r *run, hold string) {
	if hold == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	_ = g.shared.Unhold(ctx, r.ident.key(), hold)
}

// holdRetry tells the fleet that data of the run waits in this
// collector's retry, so that its close-out, wherever it runs, waits for it.
func (g *Registry) holdRetry(runKey string, token int64) {
	if g.shared == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	_, _, _, _ = g.shared.Hold(ctx, runKey, g.holdName(HoldRetry, token), holdTTL)
}

func (g *Registry) releaseRetry(runKey string, token int64) {
	if g.shared == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	_ = g.shared.Unhold(ctx, runKey, g.holdName(HoldRetry, token))
}

// adopt takes what the fleet recorded of the run: its id, its Prime Traces
// routing, and its end, whose close-out this collector then schedules too
// (one collector claims it).
func (g *Registry) adopt(r *run, sr SavedRun) {
	r.mu.Lock()
	if r.id == "" && sr.ID != "" {
		r.id, r.team = sr.ID, sr.Team
	}
	r.traces.Committed = r.traces.Committed || sr.Traces.Committed
	r.traces.OnTable = r.traces.OnTable || sr.Traces.OnTable
	ending := sr.State == savedEnding && r.state == stateOpen
	r.mu.Unlock()
	if ending {
		g.requestEnd(r, End{Status: sr.EndState, Reason: sr.EndWhy})
	}
}

// closedElsewhere keeps only the tombstone of a run another collector
// closes out. A close-out scheduled here finds it closed and stops.
func (r *run) closedElsewhere() {
	r.mu.Lock()
	if r.state >= stateClosing || r.closer {
		r.mu.Unlock()
		return
	}
	r.state = stateClosed
	r.mu.Unlock()
	r.dropState()
}

// createShared creates the run once for the fleet: the collector that
// claims the identity creates it, the others wait for its id. The record
// is read again after the claim is won, since the creator before may have
// let its claim go between this collector's look and its claim.
func (g *Registry) createShared(ctx context.Context, r *run, c creation) (string, error) {
	key := r.ident.key()
	claim := "create:" + key
	wait, cancel := context.WithTimeout(ctx, createWait)
	defer cancel()
	sleep := SleepUnless(g.Stopping)
	for {
		won, err := g.shared.Claim(ctx, claim, g.owner, createClaimTTL)
		if err != nil {
			return "", err
		}
		sr, found, _, err := g.shared.Hold(ctx, key, "", 0)
		if err != nil {
			if won {
				g.unclaim(claim)
			}
			return "", err
		}
		if found && sr.ID != "" {
			if won {
				g.unclaim(claim)
			}
			g.adopt(r, sr)
			g.Logger.Info("Joined run created by another collector", zap.Stringer("run", r.ident), zap.String("run_id", sr.ID), g.cfg.Where(sr.ID))
			return sr.ID, nil
		}
		if won {
			return g.createClaimed(ctx, r, c, claim)
		}
		if err := sleep(wait, sharedPoll); err != nil {
			return "", fmt.Errorf("run %s: another collector is creating it and has not finished within %s, so the data is retried: %w", r.ident, createWait, err)
		}
	}
}

// createClaimed sends the create under the claim. The id is written before
// the claim goes, so that whoever claims next finds it.
func (g *Registry) createClaimed(ctx context.Context, r *run, c creation, claim string) (string, error) {
	id, err := c.send(ctx)
	if err != nil {
		// Letting the claim go lets the next push, here or elsewhere, try
		// at once; after an ambiguous failure that may make the duplicate
		// createFailed warns of.
		g.unclaim(claim)
		return "", g.createFailed(r, err)
	}
	r.setID(id, c.team)
	if err := g.Store.Save(ctx, r.snapshot(savedClosing)); err != nil {
		// The claim is kept until it expires: the fleet waits for the id,
		// which this collector's next push writes (holdShared).
		g.Logger.Warn("Created run but could not record it in the shared run registry; other collectors wait for it until the create claim expires",
			zap.Stringer("run", r.ident), zap.String("run_id", id), zap.Duration("claim_ttl", createClaimTTL), zap.Error(err))
		g.Tel.RunEvent("created")
		return id, nil
	}
	defer g.unclaim(claim)
	if sr, found, _, err := g.shared.Hold(ctx, r.ident.key(), "", 0); err == nil && found && sr.ID != "" && sr.ID != id {
		// The claim expired while the create took longer, and another
		// collector created the run too: the fleet uses the first, and
		// this one stays empty.
		g.Logger.Warn("Another collector created this run while this create took longer than its claim; the data goes to the first, and this one stays empty",
			zap.Stringer("run", r.ident), zap.String("run_id", sr.ID), zap.String("empty_run_id", id))
		r.setID(sr.ID, sr.Team)
		return sr.ID, nil
	}
	g.created(r, c, id)
	return id, nil
}

func (g *Registry) unclaim(claim string) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	_ = g.shared.Unclaim(ctx, claim, g.owner)
}

// sharedObject is Lease.Object on a shared store: an upload another
// collector started (and maybe PUT) is resumed from its record.
func (l Lease) sharedObject(ctx context.Context, fp uint64, step int64) platform.Object {
	g, r := l.g, l.r
	so, found, err := g.shared.Pending(ctx, r.ident.key(), fp)
	switch {
	case err == nil && found:
		obj := so.object()
		r.pending.cache().Add(fp, obj)
		return obj
	case err != nil:
		if obj, ok := r.pending.cache().Peek(fp); ok {
			return obj
		}
	}
	obj := platform.Object{Step: step, Range: g.sharedRange(ctx, r, step)}
	l.SaveObject(ctx, fp, obj)
	return obj
}

// sharedRange takes the run's next range of step from the fleet's counter.
// A created run counts from 0, as a single collector does; an attached run
// counts from randomRangeLow, since writers outside the fleet (the
// platform's own SDK) count from 0. Only when Redis fails between a push's
// first look and its upload is the range drawn at random, above both.
func (g *Registry) sharedRange(ctx context.Context, r *run, step int64) int64 {
	n, err := g.shared.Next(ctx, r.ident.key(), "range:"+strconv.FormatInt(step, 10))
	if err != nil {
		g.Warn.Warn("range\x00"+r.ident.key(), "Could not take a sample_id range from the shared run registry; this object's range is drawn at random instead",
			zap.Stringer("run", r.ident), zap.Int64("step", step), zap.Error(err))
		return fallbackRangeLow + rand.Int64N(randomRangeHigh-fallbackRangeLow)
	}
	if r.ident.attach {
		return randomRangeLow + n - 1
	}
	return n - 1
}

func (g *Registry) savePending(ctx context.Context, r *run, fp uint64, obj platform.Object) {
	if err := g.shared.SavePending(ctx, r.ident.key(), fp, savedObject(obj)); err != nil {
		g.Warn.Warn("pending\x00"+r.ident.key(), "Could not save an upload's progress to the shared run registry; another collector would upload it again",
			zap.Stringer("run", r.ident), zap.Error(err))
	}
}

// dropPending forgets a confirmed upload; one that cannot be forgotten
// expires, and its episodes are already marked delivered.
func (g *Registry) dropPending(ctx context.Context, r *run, fp uint64) {
	_ = g.shared.DropPending(ctx, r.ident.key(), fp)
}

// claimCloseOut reports whether this collector closes the run out: the one
// holding the fleet's claim does. The others look again later, so that a
// closer that was killed (its claim expires) is replaced; a run closed
// meanwhile is kept as a tombstone.
func (g *Registry) claimCloseOut(r *run) bool {
	r.mu.Lock()
	done := r.state >= stateClosing
	r.mu.Unlock()
	if done {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	key := r.ident.key()
	won, err := g.shared.Claim(ctx, "closeout:"+key, g.owner, g.cfg.FinalizeTimeout+closeOutClaimSlack)
	if err != nil {
		g.closeOutLater(r)
		return false
	}
	sr, found, _, err := g.shared.Hold(ctx, key, "", 0)
	switch {
	case err != nil:
		if won {
			_ = g.shared.Unclaim(ctx, "closeout:"+key, g.owner)
		}
		g.closeOutLater(r)
		return false
	case found && sr.State == savedClosed:
		r.closedElsewhere()
		return false
	case !won:
		g.closeOutLater(r)
		return false
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
	closing := r.snapshot(savedClosing)
	closing.State = savedClosing
	if err := g.Store.Save(ctx, closing); err != nil {
		r.mu.Lock()
		r.closer = false
		r.mu.Unlock()
		_ = g.shared.Unclaim(ctx, "closeout:"+key, g.owner)
		g.closeOutLater(r)
		return false
	}
	return true
}

// closeOutLater tries the close-out again after a pause, unless the
// collector is shutting down.
func (g *Registry) closeOutLater(r *run) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-g.stop:
		return
	default:
	}
	if r.state >= stateClosing {
		return
	}
	g.closeouts.Add(1)
	r.endTimer = time.AfterFunc(closeOutRetryPause, func() {
		defer g.closeouts.Done()
		g.closeOut(r)
	})
}

// fleetQuiet reports whether no collector holds the run: no push in flight
// and no data in a retry. Not knowing counts as not quiet.
func (g *Registry) fleetQuiet(r *run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	leases, retries, err := g.shared.Holds(ctx, r.ident.key())
	return err == nil && leases == 0 && retries == 0
}

// awaitLeases waits, within the close-out's bound, for the pushes other
// collectors had in flight when the run was marked closing: their data
// lands before the terminal status. No push can start after that mark.
func (g *Registry) awaitLeases(ctx context.Context, r *run) {
	for {
		leases, _, err := g.shared.Holds(ctx, r.ident.key())
		if err == nil && leases == 0 {
			return
		}
		t := time.NewTimer(sharedPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			g.Logger.Warn("Closing out a run whose last data is still being sent by another collector", zap.Stringer("run", r.ident), zap.String("run_id", r.platformID()))
			return
		case <-g.Stopping:
			// A collector shutting down closes out now rather than wait
			// past its shutdown deadline for a peer that may be gone.
			t.Stop()
			g.Logger.Warn("Closing out a run at shutdown while another collector still holds some of its data", zap.Stringer("run", r.ident), zap.String("run_id", r.platformID()))
			return
		case <-t.C:
		}
	}
}

// seenElsewhere reports whether another collector of the fleet took data
// for the run within idle_timeout, so that the run is not idle.
func (g *Registry) seenElsewhere(r *run) bool {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	sr, found, _, err := g.shared.Hold(ctx, r.ident.key(), "", 0)
	if err != nil {
		return true // unknown: look again next round
	}
	return found && time.Since(sr.SeenAt) < g.cfg.IdleTimeout
}

package runs

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/rft"
)

// create creates the run once for the fleet: the collector that claims
// the identity creates it, the others wait for its id. The record is read
// again after the claim is won, since the creator before may have let its
// claim go between this collector's look and its claim.
func (f *redisFleet) create(ctx context.Context, r *run, send func(context.Context) (string, error)) (string, bool, error) {
	key := r.ident.key()
	claim := "create:" + key
	wait, cancel := context.WithTimeout(ctx, createWait)
	defer cancel()
	sleep := rft.SleepUnless(f.stopping)
	for {
		won, err := f.shared.claims.Claim(ctx, claim, f.owner, createClaimTTL)
		if err != nil {
			return "", false, err
		}
		sr, found, _, err := f.shared.holds.Hold(ctx, key, "", 0)
		if err != nil {
			if won {
				f.unclaim(claim)
			}
			return "", false, err
		}
		if found && sr.ID != "" {
			if won {
				f.unclaim(claim)
			}
			f.adopt(r, sr)
			f.log.Info("Joined run created by another collector", zap.Stringer("run", r.ident), zap.String("run_id", sr.ID), f.cfg.Where(sr.ID))
			return sr.ID, false, nil
		}
		if won {
			return f.createClaimed(ctx, r, send, claim)
		}
		if err := sleep(wait, sharedPoll); err != nil {
			return "", false, fmt.Errorf("run %s: another collector is creating it and has not finished within %s, so the data is retried: %w", r.ident, createWait, err)
		}
	}
}

// createClaimed sends the create under the claim. The id is written before
// the claim goes, so that whoever claims next finds it.
func (f *redisFleet) createClaimed(ctx context.Context, r *run, send func(context.Context) (string, error), claim string) (string, bool, error) {
	id, err := send(ctx)
	if err != nil {
		// Letting the claim go lets the next push, here or elsewhere, try
		// at once; after an ambiguous failure that may make the duplicate
		// the creator warns of.
		f.unclaim(claim)
		return "", false, err
	}
	if err := f.store.Save(ctx, r.snapshot(runstore.StateClosing)); err != nil {
		// The claim is kept until it expires: the fleet waits for the id,
		// which this collector's next push writes (hold).
		f.log.Warn("Created run but could not record it in the shared run registry; other collectors wait for it until the create claim expires",
			zap.Stringer("run", r.ident), zap.String("run_id", id), zap.Duration("claim_ttl", createClaimTTL), zap.Error(err))
		f.tel.RunEvent("created")
		return id, false, nil
	}
	defer f.unclaim(claim)
	if sr, found, _, err := f.shared.holds.Hold(ctx, r.ident.key(), "", 0); err == nil && found && sr.ID != "" && sr.ID != id {
		// The claim expired while the create took longer, and another
		// collector created the run too: the fleet uses the first, and
		// this one stays empty.
		f.log.Warn("Another collector created this run while this create took longer than its claim; the data goes to the first, and this one stays empty",
			zap.Stringer("run", r.ident), zap.String("run_id", sr.ID), zap.String("empty_run_id", id))
		r.setID(sr.ID, sr.Team)
		return sr.ID, false, nil
	}
	return id, true, nil
}

func (f *redisFleet) unclaim(claim string) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	_ = f.shared.claims.Unclaim(ctx, claim, f.owner)
}

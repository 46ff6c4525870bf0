package runs

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/rft"
)

// The shared registry's timings; the package doc says what each costs.
const (
	// holdTTL bounds a hold its collector never let go of (it was killed):
	// a close-out waits for it at most this long. A push lets go far
	// sooner, and data in a collector's retry renews its hold with every
	// attempt.
	holdTTL = 10 * time.Minute
	// heartbeatTTL is how long a collector's holds count after its last
	// heartbeat (the store's): a killed collector's holds delay a close-out
	// by at most this. heartbeatEvery renews it, well within;
	// heartbeatRetry after a failed renewal.
	heartbeatTTL   = runstore.HeartbeatTTL
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
)

// The roles a store shared by a fleet (runstore.RedisStore) plays beyond
// a Store: what a fleet needs to agree on a run without a lock service.
// Its Save merges rather than replaces: a state only moves forward, an id
// or an end once written stays.

// holdStore keeps a run's holds: a run's data in flight anywhere, which
// its close-out waits for. Hold returns the run's record as the fleet left
// it (found is false before any collector saved one) and, unless hold is
// "" or the run is closing or closed, registers hold for ttl or until
// Unhold; held says whether it did. A hold's first letter is its kind:
// runstore.HoldLease or runstore.HoldRetry. Holds counts the run's live
// holds by kind: those not expired whose collector's heartbeat (Alive,
// which Hold renews too) has not lapsed.
type holdStore interface {
	Hold(ctx context.Context, runKey, hold string, ttl time.Duration) (sr runstore.SavedRun, found, held bool, err error)
	Unhold(ctx context.Context, runKey, hold string) error
	Holds(ctx context.Context, runKey string) (leases, retries int, err error)
	Alive(ctx context.Context, owner string, ttl time.Duration) error
}

// claimStore keeps claims that expire (one collector creates, one closes
// out). Claim takes name for owner until ttl passes or Unclaim, false
// when someone else holds it; Unclaim lets name go if owner still holds
// it.
type claimStore interface {
	Claim(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)
	Unclaim(ctx context.Context, name, owner string) error
}

// counterStore keeps the fleet's counters (sample_id ranges): Next adds
// one to one of the run's counters and returns it (1 first).
type counterStore interface {
	Next(ctx context.Context, runKey, counter string) (int64, error)
}

// sharedStore is a store's shared roles.
type sharedStore struct {
	holds    holdStore
	claims   claimStore
	counters counterStore
}

// sharedOf takes the shared roles a store plays: all of them, or it is not
// shared.
func sharedOf(s Store) (sharedStore, bool) {
	h, ok1 := s.(holdStore)
	c, ok2 := s.(claimStore)
	n, ok3 := s.(counterStore)
	return sharedStore{holds: h, claims: c, counters: n}, ok1 && ok2 && ok3
}

// redisFleet is the fleet of the collectors that share a store
// (runstore.RedisStore): claims decide who creates and who closes out a run, holds
// tell a close-out what data the fleet still has, ranges come from the
// shared counter. It owns the
// collector's heartbeat, from start until stop.
type redisFleet struct {
	records
	shared   sharedStore
	cfg      Config
	log      *zap.Logger
	tel      Telemetry
	stopping <-chan struct{}
	// ending schedules the close-out of a run whose end the fleet
	// recorded (the closer's requestEnd).
	ending func(r *run, end End)

	// owner names this collector in its claims and holds.
	owner   string
	holdSeq atomic.Int64

	// beatStop ends the heartbeat.
	beatStop chan struct{}
	beat     sync.WaitGroup
}

func newRedisFleet(s Store, shared sharedStore, cfg Config, deps Deps, ending func(r *run, end End)) *redisFleet {
	return &redisFleet{
		records: records{store: s, warn: deps.Warn, closing: runstore.StateClosing},
		shared:  shared, cfg: cfg, log: deps.Logger, tel: deps.Tel, stopping: deps.Stopping, ending: ending,
		owner: newOwner(), beatStop: make(chan struct{}),
	}
}

func newOwner() string {
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// start begins this collector's heartbeat.
func (f *redisFleet) start() { f.beat.Go(f.heartbeat) }

// stop ends the heartbeat, after a shutdown's close-outs, and closes the
// store.
func (f *redisFleet) stop(ctx context.Context) error {
	close(f.beatStop)
	f.beat.Wait()
	return f.store.Close(ctx)
}

// heartbeat renews this collector's heartbeat in the shared registry
// until stop, so that the fleet counts its holds.
func (f *redisFleet) heartbeat() {
	// A renewal waiting on Redis does not hold up the shutdown.
	base, stop := context.WithCancel(context.Background())
	defer stop()
	f.beat.Go(func() {
		<-f.beatStop
		stop()
	})
	sleep := rft.SleepUnless(f.beatStop)
	for wait := time.Duration(0); sleep(base, wait) == nil; {
		ctx, cancel := context.WithTimeout(base, sharedCallTimeout)
		err := f.shared.holds.Alive(ctx, f.owner, heartbeatTTL)
		cancel()
		wait = heartbeatEvery
		if err != nil {
			wait = heartbeatRetry
		}
	}
}

// load returns the runs that were ending. A fleet's registry being out of
// reach must not stop a collector: its pushes wait in the retry until it
// is back, and the runs that were ending are closed out by whichever
// collector sees them next.
func (f *redisFleet) load(ctx context.Context) ([]runstore.SavedRun, error) {
	saved, err := f.records.load(ctx)
	if err != nil {
		f.log.Warn("Could not read the runs that were ending from the shared run registry; starting without them", zap.Error(err))
		return nil, nil
	}
	return saved, nil
}

func (f *redisFleet) holdName(kind rune, n int64) string {
	return string(kind) + ":" + f.owner + ":" + strconv.FormatInt(n, 10)
}

// hold registers a push's hold on the run in the shared registry and
// brings the run up to date with what the fleet knows of it. A run that is
// closing or closed anywhere comes back as errRunClosed.
func (f *redisFleet) hold(ctx context.Context, r *run) (string, error) {
	hold := f.holdName(runstore.HoldLease, f.holdSeq.Add(1))
	sr, found, held, err := f.shared.holds.Hold(ctx, r.ident.key(), hold, holdTTL)
	if err != nil {
		return "", err
	}
	if found {
		f.adopt(r, sr)
	}
	if !held {
		r.closedElsewhere()
		return "", errRunClosed
	}
	if id := r.platformID(); id != "" && (!found || sr.ID == "") {
		// This collector knows the run but Redis does not: the record's
		// write failed or it expired. Writing it now keeps the fleet from
		// creating the run again.
		f.save(ctx, r)
	}
	return hold, nil
}

// record reads the fleet's record of a run without holding it; a
// registry out of reach knows nothing.
func (f *redisFleet) record(ctx context.Context, runKey string) (runstore.SavedRun, bool) {
	sr, found, _, err := f.shared.holds.Hold(ctx, runKey, "", 0)
	return sr, err == nil && found
}

// unhold lets a push's hold go; one that cannot be let go expires.
func (f *redisFleet) unhold(r *run, hold string) {
	if hold == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	_ = f.shared.holds.Unhold(ctx, r.ident.key(), hold)
}

// holdRetry tells the fleet that data of the run waits in this
// collector's retry, so that its close-out, wherever it runs, waits for it.
func (f *redisFleet) holdRetry(runKey string, token int64) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	_, _, _, _ = f.shared.holds.Hold(ctx, runKey, f.holdName(runstore.HoldRetry, token), holdTTL)
}

func (f *redisFleet) releaseRetry(runKey string, token int64) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedCallTimeout)
	defer cancel()
	_ = f.shared.holds.Unhold(ctx, runKey, f.holdName(runstore.HoldRetry, token))
}

// adopt takes what the fleet recorded of the run: its id, its Prime Traces
// routing, and its end, whose close-out this collector then schedules too
// (one collector claims it).
func (f *redisFleet) adopt(r *run, sr runstore.SavedRun) {
	r.mu.Lock()
	if r.id == "" && sr.ID != "" {
		r.id, r.team = sr.ID, sr.Team
	}
	r.traces.Committed = r.traces.Committed || sr.Traces.Committed
	r.traces.OnTable = r.traces.OnTable || sr.Traces.OnTable
	ending := sr.State == runstore.StateEnding && r.state == stateOpen
	r.mu.Unlock()
	if ending {
		f.ending(r, End{Status: sr.EndState, Reason: sr.EndWhy})
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

// nextRange takes the run's next range of step from the fleet's counter.
// A created run counts from 0, as a single collector does; an attached run
// counts from randomRangeLow, since writers outside the fleet (the
// platform's own SDK) count from 0. Only when Redis fails between a push's
// first look and its upload is the range drawn at random, above both.
func (f *redisFleet) nextRange(ctx context.Context, r *run, step int64) int64 {
	n, err := f.shared.counters.Next(ctx, r.ident.key(), "range:"+strconv.FormatInt(step, 10))
	if err != nil {
		f.warn.Warn("range\x00"+r.ident.key(), "Could not take a sample_id range from the shared run registry; this object's range is drawn at random instead",
			zap.Stringer("run", r.ident), zap.Int64("step", step), zap.Error(err))
		return fallbackRangeLow + rand.Int64N(randomRangeHigh-fallbackRangeLow)
	}
	if r.ident.attach {
		return randomRangeLow + n - 1
	}
	return n - 1
}

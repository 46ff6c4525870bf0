package runs

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/rft"
)

// ErrSkipped tells a push that the data was dealt with (counted, logged)
// and must be neither sent nor retried.
var ErrSkipped = errors.New("skipped")

// Config is what the lifecycle takes from the exporter's configuration.
type Config struct {
	Defaults Defaults
	TeamID   string
	// RequireTeam refuses to create a run without a team, as the platform
	// does; offline runs may leave it to whoever uploads them.
	RequireTeam     bool
	FinalizeGrace   time.Duration
	FinalizeTimeout time.Duration
	IdleTimeout     time.Duration
	// RetryEnabled and RetryMaxElapsed are retry_on_failure's: whether
	// handed-back data ever comes back, and how long exporterhelper tries.
	RetryEnabled    bool
	RetryMaxElapsed time.Duration
	// QueueFlush is sending_queue's batch flush_timeout: how long the
	// queue may take to hand on the batch after one that ended.
	QueueFlush time.Duration
	// Directory, offline, is where runs are written; FrontendURL, online,
	// the platform's web app: log lines say where a run can be seen
	// (Where, WhereEval). Neither: the lines say nothing of it.
	Directory   string
	FrontendURL string
	// EvalID attaches every evaluation to this one (eval.id, a hosted
	// evaluation's ${env:EVALUATION_ID}).
	EvalID string

	// Persistent says the store outlives the process, for the shutdown line.
	Persistent bool
	// MaxOpenRuns bounds the runs not yet closed out; data that would open
	// one more is refused (run_limit). 0 is no bound. A multi-tenant
	// gateway gives each tenant its registry and this bound, so that one
	// tenant cannot fill memory or the store.
	MaxOpenRuns int
	// AmbientMaxKeys bounds a run's distinct ambient keys (ambient::max_keys);
	// 0 is no bound.
	AmbientMaxKeys int
}

// Telemetry is the self-telemetry the lifecycle counts into.
type Telemetry interface {
	Reject(signal string, reason reject.Reason, n int)
	Skip(signal string, reason reject.Reason, n int)
	RunEvent(event string)
	Post(outcome string)
}

// Deps are the lifecycle's collaborators, chosen once at start.
type Deps struct {
	API    platform.Runs
	Evals  platform.Evals
	Store  Store
	Logger *zap.Logger
	Warn   *logonce.Logger
	Tel    Telemetry
	// Refused, when set, is the platform's refusal of the API key: once it
	// returns an error, every push is dropped without a request.
	Refused func() error
	// Stopping closes when the collector begins to shut down, before
	// exporterhelper drains its queue: from then on nothing waits in place
	// (close-out rounds, waits for retries), so the drain ends within the
	// shutdown deadline and what is unsent stays in the persistent queue.
	Stopping <-chan struct{}
}

// Option adjusts a Registry for tests.
type Option func(*Registry)

// WithClock replaces time.Now for idle timeouts and retry ages.
func WithClock(now func() time.Time) Option { return func(g *Registry) { g.now = now } }

// WithPause replaces the wait between close-out rounds.
func WithPause(pause func(ctx context.Context, d time.Duration) error) Option {
	return func(g *Registry) { g.pause = pause }
}

// presence is this collector's place in its fleet: start begins it (the
// heartbeat); stop ends it, once the close-outs are done, and closes the
// store.
type presence interface {
	start()
	stop(ctx context.Context) error
}

// pushHolds are the holds a push and the collector's retry take on a run.
// hold registers a push's hold and brings the run up to date with the
// fleet; a run closing or closed anywhere comes back as errRunClosed.
// unhold lets the hold go. holdRetry and releaseRetry do the same for data
// in the collector's retry (handBacks).
type pushHolds interface {
	hold(ctx context.Context, r *run) (string, error)
	unhold(r *run, hold string)
	holdRetry(runKey string, token int64)
	releaseRetry(runKey string, token int64)
}

// Registry maps resources to runs. One registry serves the metrics and
// logs exporters built from one config. It keeps the run map and wires
// the parts: the fleet (chosen once, here), the creator and the closer.
type Registry struct {
	cfg Config
	Deps
	now   func() time.Time
	pause func(ctx context.Context, d time.Duration) error

	fleet     fleetRoles
	creator   *creator
	closer    *closer
	handBacks handBacks

	mu   sync.Mutex
	runs map[string]*run
}

// New builds a registry; Restore and Start bring it to life.
func New(cfg Config, deps Deps, opts ...Option) *Registry {
	g := &Registry{cfg: cfg, Deps: deps, now: time.Now, runs: map[string]*run{}}
	g.pause = rft.SleepUnless(deps.Stopping)
	for _, o := range opts {
		o(g)
	}
	// The fleet schedules the close-out of an end another collector
	// recorded; the closer is built next, before any push.
	g.fleet = newFleet(cfg, deps, func(r *run, end End) { g.closer.requestEnd(r, end) })
	g.creator = &creator{cfg: cfg, api: deps.API, evals: deps.Evals, log: deps.Logger, tel: deps.Tel, now: g.now, fleet: g.fleet.creates}
	g.closer = &closer{cfg: cfg, api: deps.API, evals: deps.Evals, log: deps.Logger, tel: deps.Tel, stopping: deps.Stopping,
		now: g.now, pause: g.pause, fleet: g.fleet.closeOuts, handBacks: &g.handBacks, runs: g.all, stop: make(chan struct{})}
	return g
}

// Acquire resolves the resource's run, creating it on its first data, and
// holds it open until Release. Data that can never be sent (no identity, a
// closed run, a refused create, no team) is counted and logged here, once
// per run and reason, and comes back as ErrSkipped; any other error is
// retryable.
func (g *Registry) Acquire(ctx context.Context, res pcommon.Resource, signal string, records int) (Lease, error) {
	if g.Refused != nil && g.Refused() != nil {
		g.Tel.Reject(signal, reject.Unauthorized, records)
		return Lease{}, ErrSkipped
	}
	ident, err := resolveIdentity(res, g.cfg.Defaults, g.cfg.EvalID)
	if err != nil {
		g.Tel.Reject(signal, reject.NoIdentity, records)
		g.Warn.Warn("no_identity", "Rejected data without a run identity: it is dropped", zap.String("signal", signal), zap.Int("records", records), zap.Error(err))
		return Lease{}, ErrSkipped
	}
	if kind := runKind(res); kind != KindTrain && kind != KindEval {
		g.Tel.Skip(signal, reject.RunKind, records)
		g.Warn.Warn("kind\x00"+ident.key(), "Skipped data of a run kind other than train and eval", zap.Stringer("run", ident), zap.String("prime.run.kind", kind))
		return Lease{}, ErrSkipped
	}
	r, err := g.lookup(ident)
	if err != nil {
		g.Tel.Reject(signal, reject.RunLimit, records)
		g.Warn.Warn("run_limit", "Refused data that would open a run past the limit of open runs: it is dropped until a run closes", zap.Stringer("run", ident), zap.String("signal", signal), zap.Int("max_open_runs", g.cfg.MaxOpenRuns))
		return Lease{}, ErrSkipped
	}
	if err := r.hold(g.now()); err != nil {
		return Lease{}, g.refuseClosed(r, signal, records)
	}
	hold, err := g.fleet.holds.hold(ctx, r)
	if err != nil {
		r.release(g.now())
		if errors.Is(err, errRunClosed) {
			return Lease{}, g.refuseClosed(r, signal, records)
		}
		return Lease{}, err
	}
	id, err := g.creator.ensure(ctx, r, res)
	if err != nil {
		g.fleet.holds.unhold(r, hold)
		r.release(g.now())
		if rej, ok := errors.AsType[*reject.Rejection](err); ok {
			r.refused(rej)
			g.Tel.Reject(signal, rej.Reason, records)
			g.Warn.Warn(string(rej.Reason)+"\x00"+ident.key(), "Rejected data: the run cannot be created, so it is dropped", zap.Stringer("run", ident), zap.String("signal", signal), zap.Error(err))
			return Lease{}, ErrSkipped
		}
		return Lease{}, err
	}
	return Lease{g: g, r: r, id: id, hold: hold}, nil
}

// refuseClosed counts and logs data for a run that was closed out, here or
// by another collector of the fleet.
func (g *Registry) refuseClosed(r *run, signal string, records int) error {
	g.Tel.Reject(signal, reject.RunClosed, records)
	// One line per signal: the two pipelines refuse apart, and a user
	// chasing lost metrics must not find only the line about logs.
	g.Warn.Warn("closed\x00"+r.ident.key()+"\x00"+signal,
		"Refused data for a run that is already closed out: it is not sent. Data arriving after the close-out usually means the trainer emitted prime.run.end before its last metrics left: flush the meter provider (Python: meter_provider.force_flush()) before emitting prime.run.end, or raise finalize_grace",
		zap.Stringer("run", r.ident), zap.String("run_id", r.platformID()), zap.String("signal", signal), zap.Int("records", records), zap.Duration("finalize_grace", g.cfg.FinalizeGrace))
	return ErrSkipped
}

// errRunLimit refuses a run past Config.MaxOpenRuns.
var errRunLimit = errors.New("too many open runs")

func (g *Registry) lookup(ident identity) (*run, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := ident.key()
	r, ok := g.runs[key]
	if !ok {
		if g.cfg.MaxOpenRuns > 0 {
			if g.openLocked() >= g.cfg.MaxOpenRuns {
				return nil, errRunLimit
			}
			g.forgetClosedLocked(closedKept * g.cfg.MaxOpenRuns)
		}
		r = newRun(ident)
		g.runs[key] = r
	}
	return r, nil
}

// closedKept × MaxOpenRuns is how many closed runs a bounded registry
// remembers, to refuse their late data (run_closed).
const closedKept = 4

// forgetClosedLocked drops the closed runs that were seen last longest ago
// until at most keep remain: with MaxOpenRuns a tenant can still open and
// close runs without end, and each closed one would stay in memory. A
// forgotten run's late data makes a run of its own again.
func (g *Registry) forgetClosedLocked(keep int) {
	type seen struct {
		key string
		at  time.Time
	}
	var closed []seen
	for key, r := range g.runs {
		r.mu.Lock()
		if r.state == stateClosed {
			closed = append(closed, seen{key, r.lastSeen})
		}
		r.mu.Unlock()
	}
	if len(closed) <= keep {
		return
	}
	slices.SortFunc(closed, func(a, b seen) int { return a.at.Compare(b.at) })
	for _, c := range closed[:len(closed)-keep] {
		delete(g.runs, c.key)
	}
}

// openLocked counts the runs not closed out. A closed run's entry stays
// (it refuses late data), and costs nothing against the bound.
// full says the registry holds Config.MaxOpenRuns open runs.
func (g *Registry) full() bool {
	if g.cfg.MaxOpenRuns <= 0 {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.openLocked() >= g.cfg.MaxOpenRuns
}

func (g *Registry) openLocked() int {
	n := 0
	for _, r := range g.runs {
		r.mu.Lock()
		if r.state != stateClosed {
			n++
		}
		r.mu.Unlock()
	}
	return n
}

// all lists the registry's runs.
func (g *Registry) all() []*run {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Collect(maps.Values(g.runs))
}

// Start begins this collector's presence in its fleet (a shared
// registry's heartbeat) and marking created runs crashed after
// idle_timeout without data.
func (g *Registry) Start() {
	g.fleet.presence.start()
	g.closer.start()
}

// Shutdown stops the janitor, finishes the close-outs the trainers asked
// for, skipping what is left of their grace periods, and then leaves the
// fleet and closes the store. Runs that did not end stay open: a
// collector restart is not the end of a training run.
func (g *Registry) Shutdown(ctx context.Context) error {
	err := g.closer.shutdown(ctx)
	return errors.Join(err, g.fleet.presence.stop(ctx))
}

// Open counts the runs that have a platform id and are not closed out,
// and how long the idlest of them has gone without data: the exporter's
// gauges, where a run stuck open shows.
func (g *Registry) Open() (n int, idlest time.Duration) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range g.runs {
		r.mu.Lock()
		if r.id != "" && r.state != stateClosed {
			n++
			if d := now.Sub(r.lastSeen); r.inflight == 0 && d > idlest {
				idlest = d
			}
		}
		r.mu.Unlock()
	}
	return n, idlest
}

package primeexporter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/rft"
)

// refusalBackoff is how long a create the platform refused for good (403:
// the team is not allow-listed) is remembered before it is asked again, so
// that every batch of that run does not repeat the request.
const refusalBackoff = 10 * time.Minute

// errRunClosed marks data for a run that was already closed out.
var errRunClosed = errors.New("run is closed")

type runState int

const (
	stateOpen    runState = iota
	stateEnding           // prime.run.end received; the grace period runs
	stateClosing          // no new data; draining, then the close-out requests
	stateClosed
)

// run is one entry of the registry: one platform run, whichever signal,
// pipeline or process its data comes from.
type run struct {
	ident identity

	// createMu serialises the first create, so that concurrent first data
	// from both signals makes one request and the others wait for its id.
	createMu sync.Mutex

	mu        sync.Mutex
	id        string
	refusal   error
	refusedAt time.Time
	state     runState
	end       endRequest
	endTimer  *time.Timer
	inflight  int
	drained   chan struct{} // closed when inflight reaches 0 while closing
	lastSeen  time.Time

	sent    *sentValues
	ranges  *sampleRanges
	pending pendingObjects
	stats   runStats
}

// registry maps resources to runs. One registry serves the metrics and logs
// exporters built from one config.
type registry struct {
	cfg    *Config
	logger *zap.Logger
	warn   *logOnce
	tel    *telemetry
	p      platform
	auth   *authGuard // online only: trips on the first 401
	store  runStore
	now    func() time.Time

	// pause waits between rounds of a failing close-out; nil is a real
	// timer (tests make it instant).
	pause func(ctx context.Context, d time.Duration) error
	// handBacks is the data of each run waiting in the collector's retry.
	handBacks handBacks

	mu   sync.Mutex
	runs map[string]*run

	closeouts sync.WaitGroup
	stop      chan struct{}
	// stopping closes when the collector begins to shut down, before
	// exporterhelper drains its queue: from then on nothing waits in place
	// (client backoff, close-out rounds, retries of the run's data), so the
	// drain ends within the shutdown deadline and what is unsent stays in
	// the persistent queue.
	stopping     chan struct{}
	stoppingOnce sync.Once
	janitor      sync.WaitGroup
}

func newRegistry(cfg *Config, p platform, store runStore, logger *zap.Logger, tel *telemetry) *registry {
	return &registry{
		cfg: cfg, p: p, store: store, logger: logger, warn: newLogOnce(logger), tel: tel,
		now: time.Now, runs: map[string]*run{}, stop: make(chan struct{}), stopping: make(chan struct{}),
	}
}

// beginStop is the first signal of a shutdown.
func (g *registry) beginStop() {
	g.stoppingOnce.Do(func() { close(g.stopping) })
}

// sleep waits d unless ctx ends or the collector starts shutting down.
func sleepUnlessStopping(stopping <-chan struct{}) func(ctx context.Context, d time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-stopping:
			return errStopping
		case <-t.C:
			return nil
		}
	}
}

var errStopping = errors.New("the collector is shutting down")

// lease is a push's hold on a run: while any lease is out, a close-out
// waits, so that everything received before the end is sent before it.
type lease struct {
	r  *run
	id string
}

func (l lease) release() { l.r.release() }

// acquire resolves the resource's run, creating it on its first data, and
// holds it open until release. Data that can never be sent (no identity, a
// closed run, a refused create) is counted and logged here, once per run and
// reason, and comes back as errSkipped; any other error is retryable.
func (g *registry) acquire(ctx context.Context, res pcommon.Resource, signal string, records int) (lease, error) {
	if g.auth != nil && g.auth.err() != nil {
		g.tel.reject(signal, "unauthorized", records)
		return lease{}, errSkipped
	}
	ident, err := resolveIdentity(res, g.cfg.Run)
	if err != nil {
		g.tel.reject(signal, "no_identity", records)
		g.warn.Warn("no_identity", "Rejected data without a run identity: it is dropped", zap.String("signal", signal), zap.Int("records", records), zap.Error(err))
		return lease{}, errSkipped
	}
	if kind := runKind(res); kind != "train" {
		g.tel.skip(signal, "run_kind", records)
		g.warn.Warn("kind\x00"+ident.registryKey(), "Skipped data of a run kind that is not handled yet", zap.Stringer("run", ident), zap.String("prime.run.kind", kind))
		return lease{}, errSkipped
	}
	r := g.lookup(ident)
	if err := r.hold(g.now()); err != nil {
		g.tel.reject(signal, "run_closed", records)
		g.warn.Warn("closed\x00"+ident.registryKey(), "Refused data for a run that is already closed out: it is not sent", zap.Stringer("run", ident), zap.String("run_id", r.platformID()), zap.String("signal", signal))
		return lease{}, errSkipped
	}
	id, err := g.ensure(ctx, r, res)
	if err != nil {
		r.release()
		if consumererror.IsPermanent(err) {
			g.tel.reject(signal, "run_refused", records)
			g.warn.Warn("refused\x00"+ident.registryKey(), "Rejected data: the run cannot be created, so it is dropped", zap.Stringer("run", ident), zap.String("signal", signal), zap.Error(err))
			return lease{}, errSkipped
		}
		return lease{}, err
	}
	return lease{r: r, id: id}, nil
}

// errSkipped tells a push that the data was dealt with (counted, logged)
// and must be neither sent nor retried.
var errSkipped = errors.New("skipped")

func newRun(ident identity) *run {
	// Only the process that creates a run can count its sample ranges from
	// 0; an attached run may have had another writer.
	return &run{ident: ident, sent: newSentValues(maxSentValuesPerRun), ranges: newSampleRanges(!ident.attach)}
}

func (g *registry) lookup(ident identity) *run {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := ident.registryKey()
	r, ok := g.runs[key]
	if !ok {
		r = newRun(ident)
		g.runs[key] = r
	}
	return r
}

// ensure returns the run's platform id, attaching or creating it once.
func (g *registry) ensure(ctx context.Context, r *run, res pcommon.Resource) (string, error) {
	if id := r.platformID(); id != "" {
		return id, nil
	}
	r.createMu.Lock()
	defer r.createMu.Unlock()
	r.mu.Lock()
	id, refusal, refusedAt := r.id, r.refusal, r.refusedAt
	r.mu.Unlock()
	if id != "" {
		return id, nil
	}
	if refusal != nil && g.now().Sub(refusedAt) < refusalBackoff {
		return "", consumererror.NewPermanent(refusal)
	}

	if r.ident.attach {
		if a, ok := g.p.(attacher); ok {
			if err := a.AttachRun(ctx, r.ident.value); err != nil {
				return "", consumererror.NewPermanent(fmt.Errorf("attach to run %s: %w", r.ident, err))
			}
		}
		r.setID(r.ident.value)
		g.persist(ctx, r)
		g.tel.runEvent("attached")
		g.logger.Info("Attached to run", zap.Stringer("run", r.ident), zap.String("run_id", r.ident.value), g.whereField(r.ident.value))
		return r.ident.value, nil
	}

	req, err := buildCreateRequest(res, g.cfg)
	if err != nil {
		return "", consumererror.NewPermanent(fmt.Errorf("run %s: %w", r.ident, err))
	}
	created, err := g.p.CreateRun(ctx, req)
	if err != nil {
		return "", g.createFailed(r, err)
	}
	r.setID(created.ID)
	// Saved at once: the window in which a crash costs a second run is
	// the time between the platform's answer and this write.
	g.persist(ctx, r)
	g.tel.runEvent("created")
	g.logger.Info("Created run", zap.Stringer("run", r.ident), zap.String("run_id", created.ID), zap.String("model", req.BaseModel), g.whereField(created.ID))
	return created.ID, nil
}

// createFailed classifies a failed create. Create is not replayable: after
// an ambiguous failure the data stays queued and the next attempt creates
// again, since losing a run's telemetry is worse than an orphaned empty run.
func (g *registry) createFailed(r *run, err error) error {
	err = fmt.Errorf("run %s: %w", r.ident, err)
	rerr, ok := rft.AsError(err)
	switch {
	case isPermanent(err):
		if ok && rerr.Class == rft.ClassForbidden {
			r.mu.Lock()
			r.refusal, r.refusedAt = err, g.now()
			r.mu.Unlock()
		}
		return consumererror.NewPermanent(err)
	case ok && rerr.Ambiguous():
		g.logger.Warn("Create run failed after the request may have reached the platform; it will be created again, so a duplicate, empty run may exist",
			zap.Stringer("run", r.ident), zap.Error(err))
	}
	return retryable(err)
}

// whereField says where a new run can be seen: its dashboard, or its
// offline directory.
func (g *registry) whereField(id string) zap.Field {
	if g.cfg.Mode == ModeOffline {
		return zap.String("directory", runDirectory(g.cfg.Directory, id))
	}
	return zap.String("dashboard", dashboardURL(g.cfg.FrontendURL, id))
}

func (r *run) platformID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

func (r *run) setID(id string) {
	r.mu.Lock()
	r.id = id
	r.mu.Unlock()
}

// hold counts a push in; a closing or closed run takes no more data.
func (r *run) hold(now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state >= stateClosing {
		return errRunClosed
	}
	r.inflight++
	r.lastSeen = now
	return nil
}

func (r *run) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight--
	if r.inflight == 0 && r.drained != nil {
		close(r.drained)
		r.drained = nil
	}
}

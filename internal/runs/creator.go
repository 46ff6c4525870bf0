package runs

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/rft"
)

// refusalBackoff is how long a create the platform refused for good (403:
// the team is not allow-listed) is remembered before it is asked again, so
// that every batch of that run does not repeat the request.
const refusalBackoff = 10 * time.Minute

// creator gives a run its platform id once, whichever its kind (a training
// run, an evaluation): it attaches to an existing one or creates it, once
// for the fleet, and remembers a refusal.
type creator struct {
	cfg   Config
	api   platform.Runs
	evals platform.Evals
	log   *zap.Logger
	tel   Telemetry
	now   func() time.Time
	fleet createFleet
}

// createFleet is what the creator asks of the fleet. create sends a run's
// create once for the fleet, through send (which records the id on the
// run), or finds the id another collector got; created says the create
// was this collector's own, to be counted and logged. save writes the
// run's record once it has its id.
type createFleet interface {
	create(ctx context.Context, r *run, send func(context.Context) (string, error)) (id string, created bool, err error)
	save(ctx context.Context, r *run)
}

// ensure returns the run's platform id, attaching or creating it once. A
// run that can never be created comes back as a *reject.Rejection.
func (c *creator) ensure(ctx context.Context, r *run, res pcommon.Resource) (string, error) {
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
	if refusal != nil && c.now().Sub(refusedAt) < refusalBackoff {
		return "", refused(r.ident, refusal)
	}
	if r.ident.attach {
		return c.attach(ctx, r, res)
	}

	cr, err := c.creation(r, res)
	if err != nil {
		return "", err
	}
	id, created, err := c.fleet.create(ctx, r, func(ctx context.Context) (string, error) {
		id, err := cr.send(ctx)
		if err != nil {
			return "", c.failed(r, err)
		}
		r.setID(id, cr.team)
		return id, nil
	})
	if created {
		c.created(r, cr, id)
	}
	return id, err
}

// attach takes the run's own id: an existing run, which needs no create.
func (c *creator) attach(ctx context.Context, r *run, res pcommon.Resource) (string, error) {
	team, _, _ := stringAttr(res.Attributes(), AttrRunTeamID)
	team = cmp.Or(team, c.cfg.TeamID)
	where, msg := c.cfg.Where, "Attached to run"
	if r.ident.eval {
		// Attaching to an evaluation makes no request, online or off.
		where, msg = c.cfg.WhereEval, "Attached to evaluation"
	} else if err := c.api.AttachRun(ctx, r.ident.value, platform.Origin{Identity: r.ident.String(), TeamID: team}); err != nil {
		err = fmt.Errorf("attach to run %s: %w", r.ident, err)
		if _, fromPlatform := rft.AsError(err); fromPlatform && !platform.Permanent(err) {
			return "", platform.Retryable(err)
		}
		// A run the key does not reach stays refused for a while: asking
		// again per batch changes nothing.
		r.mu.Lock()
		r.refusal, r.refusedAt = err, c.now()
		r.mu.Unlock()
		return "", refused(r.ident, err)
	}
	r.setID(r.ident.value, team)
	c.fleet.save(ctx, r)
	c.tel.RunEvent("attached")
	c.log.Info(msg, zap.Stringer("run", r.ident), zap.String("run_id", r.ident.value), where(r.ident.value))
	return r.ident.value, nil
}

// creation is a run's create, whichever its kind: the request to send
// once, and what its log line says.
type creation struct {
	team  string
	model string
	// send makes the request and returns the new id; where says where the
	// run can be seen, once send has returned.
	send  func(ctx context.Context) (string, error)
	where func(id string) zap.Field
}

// creation builds the run's create from its resource; a run that can
// never be created comes back as a *reject.Rejection.
func (c *creator) creation(r *run, res pcommon.Resource) (creation, error) {
	if r.ident.eval {
		return c.evalCreation(r, res)
	}
	req, err := buildCreateRequest(res, c.cfg.Defaults, c.cfg.TeamID)
	if err != nil {
		return creation{}, refused(r.ident, fmt.Errorf("run %s: %w", r.ident, err))
	}
	if req.TeamID == "" && c.cfg.RequireTeam {
		// The platform's own SDK refuses to create a run without a team;
		// sending the create anyway would only earn a refusal per batch.
		return creation{}, reject.New(reject.NoTeam, AttrRunTeamID, "run %s has no team: set the resource attribute %s or the exporter's team_id", r.ident, AttrRunTeamID)
	}
	return creation{
		team: req.TeamID, model: req.BaseModel, where: c.cfg.Where,
		send: func(ctx context.Context) (string, error) {
			created, err := c.api.CreateRun(ctx, req, platform.Origin{Identity: r.ident.String(), TeamID: req.TeamID})
			return created.ID, err
		},
	}, nil
}

// created counts and logs a create that landed.
func (c *creator) created(r *run, cr creation, id string) {
	c.tel.RunEvent("created")
	msg := "Created run"
	if r.ident.eval {
		msg = "Created evaluation"
	}
	c.log.Info(msg, zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("model", cr.model), cr.where(id))
}

// failed classifies a failed create. Create is not replayable: after an
// ambiguous failure the data stays queued and the next attempt creates
// again, since losing a run's telemetry is worse than an orphaned empty
// run.
func (c *creator) failed(r *run, err error) error {
	err = fmt.Errorf("run %s: %w", r.ident, err)
	rerr, ok := rft.AsError(err)
	switch {
	case platform.Permanent(err):
		// A refused team, or an evaluation environment the hub does not
		// know, stays refused: asking again per batch changes nothing.
		if ok && (rerr.Class == rft.ClassForbidden || r.ident.eval) {
			r.mu.Lock()
			r.refusal, r.refusedAt = err, c.now()
			r.mu.Unlock()
		}
		return refused(r.ident, err)
	case ok && rerr.Ambiguous():
		c.log.Warn("Create run failed after the request may have reached the platform; it will be created again, so a duplicate, empty run may exist",
			zap.Stringer("run", r.ident), zap.Error(err))
	}
	return platform.Retryable(err)
}

// refused is a create that can never succeed: its data is dropped as
// run_refused.
func refused(ident identity, err error) error {
	return &reject.Rejection{Reason: reject.RunRefused, Field: ident.source, Err: err}
}

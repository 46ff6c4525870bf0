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

// ensure returns the run's platform id, attaching or creating it once. A
// run that can never be created comes back as a *reject.Rejection.
func (g *Registry) ensure(ctx context.Context, r *run, res pcommon.Resource) (string, error) {
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
		return "", refused(r.ident, refusal)
	}

	if r.ident.attach {
		team, _, _ := stringAttr(res.Attributes(), AttrRunTeamID)
		team = cmp.Or(team, g.cfg.TeamID)
		where, msg := g.cfg.Where, "Attached to run"
		if r.ident.eval {
			// Attaching to an evaluation makes no request, online or off.
			where, msg = g.cfg.WhereEval, "Attached to evaluation"
		} else if err := g.API.AttachRun(ctx, r.ident.value, platform.Origin{Identity: r.ident.String(), TeamID: team}); err != nil {
			return "", refused(r.ident, fmt.Errorf("attach to run %s: %w", r.ident, err))
		}
		r.setID(r.ident.value, team)
		g.persist(ctx, r)
		g.Tel.RunEvent("attached")
		g.Logger.Info(msg, zap.Stringer("run", r.ident), zap.String("run_id", r.ident.value), where(r.ident.value))
		return r.ident.value, nil
	}

	c, err := g.creation(r, res)
	if err != nil {
		return "", err
	}
	if g.shared != nil {
		return g.createShared(ctx, r, c)
	}
	created, err := c.send(ctx)
	if err != nil {
		return "", g.createFailed(r, err)
	}
	r.setID(created, c.team)
	// Saved at once: the window in which a crash costs a second run is
	// the time between the platform's answer and this write.
	g.persist(ctx, r)
	g.created(r, c, created)
	return created, nil
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
func (g *Registry) creation(r *run, res pcommon.Resource) (creation, error) {
	if r.ident.eval {
		return g.evalCreation(r, res)
	}
	req, err := buildCreateRequest(res, g.cfg.Defaults, g.cfg.TeamID)
	if err != nil {
		return creation{}, refused(r.ident, fmt.Errorf("run %s: %w", r.ident, err))
	}
	if req.TeamID == "" && g.cfg.RequireTeam {
		// The platform's own SDK refuses to create a run without a team;
		// sending the create anyway would only earn a refusal per batch.
		return creation{}, reject.New(reject.NoTeam, AttrRunTeamID, "run %s has no team: set the resource attribute %s or the exporter's team_id", r.ident, AttrRunTeamID)
	}
	return creation{
		team: req.TeamID, model: req.BaseModel, where: g.cfg.Where,
		send: func(ctx context.Context) (string, error) {
			created, err := g.API.CreateRun(ctx, req, platform.Origin{Identity: r.ident.String(), TeamID: req.TeamID})
			return created.ID, err
		},
	}, nil
}

// created counts and logs a create that landed.
func (g *Registry) created(r *run, c creation, id string) {
	g.Tel.RunEvent("created")
	msg := "Created run"
	if r.ident.eval {
		msg = "Created evaluation"
	}
	g.Logger.Info(msg, zap.Stringer("run", r.ident), zap.String("run_id", id), zap.String("model", c.model), c.where(id))
}

// createFailed classifies a failed create. Create is not replayable: after
// an ambiguous failure the data stays queued and the next attempt creates
// again, since losing a run's telemetry is worse than an orphaned empty
// run.
func (g *Registry) createFailed(r *run, err error) error {
	err = fmt.Errorf("run %s: %w", r.ident, err)
	rerr, ok := rft.AsError(err)
	switch {
	case platform.Permanent(err):
		// A refused team, or an evaluation environment the hub does not
		// know, stays refused: asking again per batch changes nothing.
		if ok && (rerr.Class == rft.ClassForbidden || r.ident.eval) {
			r.mu.Lock()
			r.refusal, r.refusedAt = err, g.now()
			r.mu.Unlock()
		}
		return refused(r.ident, err)
	case ok && rerr.Ambiguous():
		g.Logger.Warn("Create run failed after the request may have reached the platform; it will be created again, so a duplicate, empty run may exist",
			zap.Stringer("run", r.ident), zap.Error(err))
	}
	return platform.Retryable(err)
}

// refused is a create that can never succeed: its data is dropped as
// run_refused.
func refused(ident identity, err error) error {
	return &reject.Rejection{Reason: reject.RunRefused, Field: ident.source, Err: err}
}

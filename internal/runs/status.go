package runs

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/consumer/consumererror"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/rft"
)

// States of a run as a status query finds it, in the order a run goes
// through them (refused aside).
const (
	StateUnknown = "unknown" // no run for this identity here
	StatePending = "pending" // known; its create not answered yet
	StateRunning = "running" // created or attached
	StateClosing = "closing" // its end received; the close-out under way
	StateClosed  = "closed"
	StateRefused = "refused" // its create was refused for good
)

// Why a run was refused, in a status answer: the rejection reason codes
// the exporter counts its data under, except that a team the platform
// does not allow (a 403 on the create) is told apart from the other
// refusals (run_refused).
const (
	RefusedUnauthorized = string(reject.Unauthorized) // the platform refused the API key
	RefusedNoTeam       = string(reject.NoTeam)       // no team to create the run for
	RefusedForbidden    = "forbidden"                 // the platform refused the run's team (403)
	RefusedOther        = string(reject.RunRefused)   // any other permanent refusal of the create
	RefusedRunLimit     = string(reject.RunLimit)     // max_open_runs are open: a new run is not taken
)

// StatusQuery names a run as its trainer knows it: by key (prime.run.key)
// or by platform id (prime.run.id), a training run or an evaluation.
type StatusQuery struct {
	Eval bool
	Key  string
	ID   string
}

// RunStatus is what the registry knows of a run.
type RunStatus struct {
	State string
	// ID is the run's platform id (or offline id), once known.
	ID string
	// End is a closed run's status: completed, failed, cancelled, crashed.
	End string
	// Reason and Message say why a run was refused. Message is the
	// exporter's explanation with the platform's message; never the key.
	Reason  string
	Message string
}

// Status answers a status query without acquiring, holding or creating
// anything: from this collector's runs and, in a fleet, from the shared
// registry, which knows the runs every collector of the fleet created.
func (g *Registry) Status(ctx context.Context, q StatusQuery) RunStatus {
	ident := identity{source: AttrRunKey, value: q.Key, eval: q.Eval}
	if q.Key == "" {
		ident = identity{source: AttrRunID, value: q.ID, attach: true, eval: q.Eval}
	}
	local := g.localStatus(ident, q)
	if local.State != StateClosed {
		if g.Refused != nil {
			if err := g.Refused(); err != nil {
				return RunStatus{State: StateRefused, ID: local.ID, Reason: RefusedUnauthorized, Message: permanentCause(err).Error()}
			}
		}
		if local.State == StateRefused {
			return local
		}
	}
	sr, found := g.fleet.records.record(ctx, ident.key())
	if !found || sr.ID == "" {
		if local.State == StateUnknown && g.full() {
			// Its data would open one run too many, and is dropped
			// (run_limit): the trainer is told now rather than left to
			// wait for a run that does not come.
			return RunStatus{State: StateRefused, Reason: RefusedRunLimit,
				Message: fmt.Sprintf("the collector already serves max_open_runs (%d) open runs: a new run is not taken until one closes", g.cfg.MaxOpenRuns)}
		}
		return local
	}
	shared := RunStatus{State: StateRunning, ID: sr.ID}
	switch sr.State {
	case runstore.StateEnding, runstore.StateClosing:
		shared.State = StateClosing
	case runstore.StateClosed:
		shared.State, shared.End = StateClosed, sr.EndState
	}
	if stateRank(local.State) > stateRank(shared.State) {
		return local
	}
	if local.State == StateClosed && shared.End == "" {
		// A run closed here by another collector's close-out, whose
		// record lost its end (it expired): what this one knows.
		shared.End = local.End
	}
	return shared
}

// localStatus is what this collector's run map says: the run of ident,
// or, asked by id, a run this collector created under that id.
func (g *Registry) localStatus(ident identity, q StatusQuery) RunStatus {
	g.mu.Lock()
	r, ok := g.runs[ident.key()]
	g.mu.Unlock()
	if !ok && q.ID != "" {
		for _, c := range g.all() {
			if c.ident.eval == q.Eval && c.platformID() == q.ID {
				r, ok = c, true
				break
			}
		}
	}
	if !ok {
		return RunStatus{State: StateUnknown}
	}
	return r.status()
}

// status is the run's own state.
func (r *run) status() RunStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.state == stateClosed:
		return RunStatus{State: StateClosed, ID: r.id, End: r.end.Status}
	case r.id == "" && r.rejection != nil:
		reason, msg := refusalOf(r.rejection)
		return RunStatus{State: StateRefused, Reason: reason, Message: msg}
	case r.id == "":
		return RunStatus{State: StatePending}
	case r.state == stateEnding || r.state == stateClosing:
		return RunStatus{State: StateClosing, ID: r.id}
	}
	return RunStatus{State: StateRunning, ID: r.id}
}

// refused records why the run's create was refused, for status queries.
func (r *run) refused(rej *reject.Rejection) {
	r.mu.Lock()
	r.rejection = rej
	r.mu.Unlock()
}

// refusalOf tells a create's rejection apart for a status answer.
func refusalOf(rej *reject.Rejection) (reason, message string) {
	if rej.Reason == reject.NoTeam {
		return RefusedNoTeam, rej.Error()
	}
	if rerr, ok := rft.AsError(rej.Err); ok {
		switch rerr.Class {
		case rft.ClassUnauthorized:
			return RefusedUnauthorized, rej.Error()
		case rft.ClassForbidden:
			return RefusedForbidden, rej.Error()
		}
	}
	return RefusedOther, rej.Error()
}

// permanentCause is err without consumererror's "Permanent error: "
// wrapping, which says nothing to a trainer.
func permanentCause(err error) error {
	if consumererror.IsPermanent(err) {
		if inner := errors.Unwrap(err); inner != nil {
			return inner
		}
	}
	return err
}

func stateRank(s string) int {
	switch s {
	case StatePending:
		return 1
	case StateRunning:
		return 2
	case StateClosing:
		return 3
	case StateClosed:
		return 4
	}
	return 0
}

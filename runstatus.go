package primeexporter

import (
	"context"
	"path/filepath"

	"go.opentelemetry.io/collector/component"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/primestatusextension"
	"github.com/primeintellect/primeexporter/rft"
)

// runStatusRegistry is the prime_status extension as the exporter uses it:
// the exporter answers its status route for the runs it serves.
type runStatusRegistry interface {
	RegisterRunStatusSource(primestatusextension.Source) (unregister func())
}

// registerStatus makes the exporter a source of every status extension
// the collector has; unregisterStatus undoes it at the last shutdown.
func (e *primeExporter) registerStatus(host component.Host) {
	for _, ext := range host.GetExtensions() {
		if r, ok := ext.(runStatusRegistry); ok {
			e.unregister = append(e.unregister, r.RegisterRunStatusSource(e))
		}
	}
}

func (e *primeExporter) unregisterStatus() {
	for _, u := range e.unregister {
		u()
	}
	e.unregister = nil
}

// RunStatus answers the status route from the run registry, acquiring
// nothing: the run's state, its id and where it can be seen.
func (e *primeExporter) RunStatus(ctx context.Context, q primestatusextension.Query) primestatusextension.Status {
	if e.cfg.Mode == ModeDisabled {
		return primestatusextension.Status{State: primestatusextension.StateDisabled}
	}
	b := e.backend()
	if b == nil {
		return primestatusextension.Status{State: primestatusextension.StateUnknown}
	}
	eval := q.Kind == primestatusextension.KindEval
	rs := b.reg.Status(ctx, runs.StatusQuery{Eval: eval, Key: q.Key, ID: q.ID})
	st := primestatusextension.Status{State: rs.State, ID: rs.ID, Status: rs.End, Reason: rs.Reason, Error: rs.Message}
	if rs.ID != "" {
		st.URL, st.Directory = e.where(eval, rs.ID)
	}
	return st
}

// where is the run's dashboard online, and offline its directory, as the
// exporter's log lines give them.
func (e *primeExporter) where(eval bool, id string) (url, directory string) {
	if e.cfg.Mode == ModeOffline {
		dir := platform.RunDirectory(e.cfg.Directory, id)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		return dir, dir
	}
	if eval {
		return rft.Evaluation{ID: id}.DashboardURL(e.cfg.FrontendURL), ""
	}
	return rft.TrainingDashboardURL(e.cfg.FrontendURL, id), ""
}

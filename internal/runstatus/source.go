package runstatus

import (
	"context"
	"path/filepath"

	"go.opentelemetry.io/collector/client"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/tenant"
	"github.com/primeintellect/primeexporter/primestatusextension"
	"github.com/primeintellect/primeexporter/rft"
)

// Registry is what a Source asks of the run registry.
type Registry interface {
	Status(ctx context.Context, q runs.StatusQuery) runs.RunStatus
}

// Where says where a run can be seen: its url, and its directory offline.
type Where func(eval bool, id string) (url, directory string)

// Dashboards is Where online: the run's or the evaluation's dashboard on
// frontend.
func Dashboards(frontend string) Where {
	return func(eval bool, id string) (string, string) {
		if eval {
			return rft.Evaluation{ID: id}.DashboardURL(frontend), ""
		}
		return rft.TrainingDashboardURL(frontend, id), ""
	}
}

// Directories is Where offline: the run's directory under root, absolute,
// as both its url and its directory.
func Directories(root string) Where {
	return func(_ bool, id string) (string, string) {
		dir := platform.RunDirectory(root, id)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		return dir, dir
	}
}

// Source answers the route for one exporter.
type Source struct {
	// Disabled says the exporter drops everything.
	Disabled bool
	// Registry is the registry serving the caller of ctx now: the
	// exporter's, or on a multi-tenant gateway the caller's tenant's (ByUser);
	// nil when none does.
	Registry func(ctx context.Context) Registry
	Where    Where
}

// ByUser picks the registry of the tenant the caller's key belongs to, as
// prime_auth put it into the request's client.Info (tenant.UserIDAttribute):
// a caller is told only about its own tenant's runs, and another
// tenant's run key answers as an unknown run. A caller the route did not
// authenticate gets no registry.
func ByUser(registry func(user string) Registry) func(ctx context.Context) Registry {
	return func(ctx context.Context) Registry {
		auth := client.FromContext(ctx).Auth
		if auth == nil {
			return nil
		}
		user, _ := auth.GetAttribute(tenant.UserIDAttribute).(string)
		if user == "" {
			return nil
		}
		return registry(user)
	}
}

// RunStatus answers from the registry: the run's state, its id and where
// it can be seen.
func (s Source) RunStatus(ctx context.Context, q primestatusextension.Query) primestatusextension.Status {
	if s.Disabled {
		return primestatusextension.Status{State: primestatusextension.StateDisabled}
	}
	reg := s.Registry(ctx)
	if reg == nil {
		return primestatusextension.Status{State: primestatusextension.StateUnknown}
	}
	eval := q.Kind == primestatusextension.KindEval
	rs := reg.Status(ctx, runs.StatusQuery{Eval: eval, Key: q.Key, ID: q.ID})
	st := primestatusextension.Status{State: rs.State, ID: rs.ID, Status: rs.End, Reason: rs.Reason, Error: rs.Message}
	if rs.ID != "" {
		st.URL, st.Directory = s.Where(eval, rs.ID)
	}
	return st
}

var _ primestatusextension.Source = Source{}

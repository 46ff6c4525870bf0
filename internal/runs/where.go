package runs

import (
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
)

// Where says where a run can be seen, for log lines: its offline
// directory, or its dashboard. The registry formats it from settings
// rather than asking the exporter, so that nothing it calls runs code of
// the package above it.
func (c Config) Where(runID string) zap.Field {
	switch {
	case c.Directory != "":
		return zap.String("directory", platform.RunDirectory(c.Directory, runID))
	case c.FrontendURL != "":
		return zap.String("dashboard", rft.TrainingDashboardURL(c.FrontendURL, runID))
	}
	return zap.Skip()
}

// WhereEval is Where for an evaluation, whose dashboard has a route of
// its own; offline it is a run directory like any other.
func (c Config) WhereEval(evalID string) zap.Field {
	if c.Directory == "" && c.FrontendURL != "" {
		return zap.String("dashboard", rft.Evaluation{ID: evalID}.DashboardURL(c.FrontendURL))
	}
	return c.Where(evalID)
}

package primeexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Every path that logs or returns an error, driven once, and the key
// appears in none of it.
func TestTheAPIKeyAppearsInNoLogLineOrError(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	var errs []error
	h.platform.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 401}, rfttest.Fault{Status: 502, AfterProcessing: true}, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	for i := 0; i < 4; i++ {
		errs = append(errs, h.exp.pushMetrics(ctx, gauges(trainRun("k"), map[int64]map[string]float64{1: {"loss": 1}})))
	}
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 400}, rfttest.Fault{Status: 429, RetryAfter: "1"}, rfttest.Fault{Status: 429, RetryAfter: "1"})
	errs = append(errs, h.exp.pushMetrics(ctx, gauges(trainRun("k"), map[int64]map[string]float64{2: {"loss": 1}, 3: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteFinalize, rfttest.Fault{Status: 401})
	h.platform.Inject(rfttest.RouteStatus, rfttest.Fault{Status: 401})
	errs = append(errs, h.exp.pushLogs(ctx, events(trainRun("k"), runEnd("completed", ""))))
	h.shutdown()

	require.NotEmpty(t, h.logs.All())
	assert.NotContains(t, h.logText(), testAPIKey)
	for _, err := range errs {
		if err != nil {
			assert.NotContains(t, err.Error(), testAPIKey)
		}
	}
	cfg := h.exp.cfg
	assert.NotContains(t, cfg.APIKey.String(), testAPIKey)
}

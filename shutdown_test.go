package primeexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"

	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// A push waiting out the platform's Retry-After must not hold the
// collector's queue drain past the shutdown deadline.
func TestAShutdownEndsThePushesWaitingInPlace(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "team-1"
	// Real in-place waits: only the shutdown notice may cut them short.
	h := newHarnessWithOptions(t, srv, cfg, componenttest.NewNopHost(), withClientOptions(func(o *rft.Options) { o.MaxAttempts = 5 }))
	srv.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 429, RetryAfter: "60"}, rfttest.Fault{Status: 429, RetryAfter: "60"})

	done := make(chan error, 1)
	go func() {
		done <- h.exp.pushMetrics(context.Background(), gauges(trainRun("slow"), map[int64]map[string]float64{1: {"loss": 1}}))
	}()
	require.Eventually(t, func() bool { return len(srv.Requests()) == 1 }, 5*time.Second, time.Millisecond, "the push is waiting out Retry-After")
	h.exp.beginShutdown()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.False(t, consumererror.IsPermanent(err), "the data stays for the next start")
	case <-time.After(20 * time.Second):
		t.Fatal("the push still waits in place after the shutdown notice")
	}
	assert.Len(t, srv.Requests(), 1, "no attempt after the notice")
}

func TestShutdownLogsWhatItLeavesOpen(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(trainRun("open"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.shutdown()
	text := h.logText()
	assert.Contains(t, text, "open runs stay open and continue after a restart")
	assert.Contains(t, text, "open_run_ids=["+h.onlyRun().ID+"]")
}

package primeexporter

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// statusHost records the component statuses reported to it, as a health
// check extension would see them.
type statusHost struct {
	component.Host
	mu     sync.Mutex
	events []*componentstatus.Event
}

func (h *statusHost) Report(e *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func TestABadKeyStopsEverySendAndReportsAPermanentErrorStatus(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: "the-real-key"})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.APIKey = testAPIKey // not the platform's
	cfg.TeamID = "team-1"
	cfg.FinalizeTimeout = time.Second
	h := newHarnessWithHost(t, srv, cfg, &statusHost{Host: componenttest.NewNopHost()})
	ctx := context.Background()

	for i := 0; i < 5; i++ {
		assert.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("k"), map[int64]map[string]float64{int64(i): {"loss": 1}})), "a bad key is not retried batch after batch")
		assert.NoError(t, h.exp.pushLogs(ctx, events(trainRun("k"), episode(10, "x"))))
	}
	var paths []string
	for _, r := range srv.Requests() {
		paths = append(paths, r.Path)
	}
	assert.Equal(t, []string{"/api/v1/rft/external-runs", "/api/v1/user/whoami"}, paths, "one refused request, confirmed by whoami, then none")
	assert.Equal(t, int64(9), h.count(metricRejected, map[string]string{"reason": "unauthorized"}))

	host := h.host.(*statusHost)
	host.mu.Lock()
	defer host.mu.Unlock()
	require.Len(t, host.events, 1)
	assert.Equal(t, componentstatus.StatusPermanentError, host.events[0].Status())
	assert.Contains(t, host.events[0].Err().Error(), "set a valid api_key and restart the collector")
	assert.NotContains(t, h.logText(), testAPIKey)
}

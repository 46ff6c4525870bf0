package primeexporter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The component status through the whole exporter. How the status fans
// out to every pipeline's host and keeps sources apart is
// internal/sharedcomponent's status_test.go.

// --- the 401 guard ---

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

// --- outages ---

// Through the real exporterhelper and its queue: a platform outage of over
// a minute (on the exporter's clock) gets one warning that names the
// failing route and the queue's fill, however many retries fail, and its
// end one line with its length.
func TestAnOutageOfOverAMinuteIsLoggedOnceWithTheRouteAndTheQueueAndItsEndOnce(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	defer srv.Close()
	var now atomic.Int64
	now.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	f := newFactory(withClientOptions(instantRetries), withOutageOptions(platform.WithOutageClock(clock)))
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.APIKey = configopaque.String(testAPIKey)
	cfg.TeamID = "team-1"
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.NumConsumers = 1
	cfg.QueueConfig = configoptional.Some(queue)
	cfg.RetryConfig.InitialInterval, cfg.RetryConfig.MaxInterval = time.Millisecond, 5*time.Millisecond

	core, logs := observer.New(zapcore.InfoLevel)
	set := exportertest.NewNopSettings(f.Type())
	set.Logger = zap.New(core)
	ctx := context.Background()
	le, err := f.CreateLogs(ctx, set, cfg)
	require.NoError(t, err)
	require.NoError(t, le.Start(ctx, componenttest.NewNopHost()))
	defer func() { require.NoError(t, le.Shutdown(ctx)) }()
	require.NoError(t, le.ConsumeLogs(ctx, events(trainRun("down"), metricsEvent(1, map[string]float64{"loss": 1}))))
	require.Eventually(t, func() bool { return len(srv.Runs()) == 1 && len(srv.Runs()[0].Metrics) == 1 }, 5*time.Second, time.Millisecond)

	srv.SetOutage(&rfttest.Fault{Status: 503})
	for step := int64(2); step <= 3; step++ {
		require.NoError(t, le.ConsumeLogs(ctx, events(trainRun("down"), metricsEvent(step, map[string]float64{"loss": 1}))))
	}
	failed := func() int { return srv.Outages()[0].Refused }
	require.Eventually(t, func() bool { return failed() >= 5 }, 5*time.Second, time.Millisecond)
	downLines := func() []observer.LoggedEntry { return logs.FilterMessageSnippet("Outage: ").All() }
	assert.Empty(t, downLines(), "under a minute: exporterhelper's own lines only")

	now.Add(int64(61 * time.Second))
	require.Eventually(t, func() bool { return len(downLines()) == 1 }, 5*time.Second, time.Millisecond)
	seen := failed()
	require.Eventually(t, func() bool { return failed() >= seen+20 }, 5*time.Second, time.Millisecond)
	require.Len(t, downLines(), 1, "one warning per outage, not one per failure")
	warning := downLines()[0]
	assert.Equal(t, zapcore.WarnLevel, warning.Level)
	fields := warning.ContextMap()
	assert.Equal(t, "platform API", fields["service"])
	assert.Equal(t, "post metrics", fields["routes"])
	// The request in the retry counts until it is done, and the other
	// waits behind it.
	assert.Equal(t, "logs 2/1000 requests", fields["queue"])
	assert.Equal(t, "1m1s", fields["down_for"])

	now.Add(int64(9 * time.Second))
	srv.SetOutage(nil)
	require.Eventually(t, func() bool { return len(srv.Runs()[0].Metrics) == 3 }, 5*time.Second, time.Millisecond)
	over := logs.FilterMessage("Outage over: the service answers again").All()
	require.Len(t, over, 1)
	assert.Equal(t, "platform API", over[0].ContextMap()["service"])
	assert.Equal(t, "1m10s", over[0].ContextMap()["lasted"])
	assert.Len(t, downLines(), 1)
}

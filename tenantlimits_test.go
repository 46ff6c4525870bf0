package primeexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/primeintellect/primeexporter/internal/metadata"
	"github.com/primeintellect/primeexporter/internal/tenants"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Through the real factory, exporterhelper and its sending queue, as the
// receiver hands a request over: a tenant's request over its ingest limit
// is refused before the queue, with the status the OTLP receiver turns
// into 429 / RESOURCE_EXHAUSTED and its retry delay, and nothing of it
// reaches the platform; another tenant's request is taken meanwhile.
func TestARequestOverItsTenantsLimitIsRefusedBeforeTheQueueAndAnotherTenantsIsTaken(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{{Key: aliceKey, ID: "alice"}, {Key: bobKey, ID: "bob"}}})
	defer srv.Close()
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.Tenants.Enabled = true
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.Tenants.Limits.Limit = tenants.Limit{BytesPerSecond: 15e6, RecordsPerSecond: 1, BurstSeconds: 1}
	require.NoError(t, cfg.Validate())

	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	s := newExporters(withClientOptions(instantRetries))
	ctx := context.Background()
	le, err := s.createLogs(ctx, set, cfg)
	require.NoError(t, err)
	me, err := s.createMetrics(ctx, set, cfg)
	require.NoError(t, err)
	require.NoError(t, le.Start(ctx, componenttest.NewNopHost()))
	require.NoError(t, me.Start(ctx, componenttest.NewNopHost()))

	loss := map[string]float64{"loss": 1}
	require.NoError(t, le.ConsumeLogs(as(aliceKey), events(trainRun("alice-taken"), metricsEvent(1, loss), metricsEvent(2, loss), metricsEvent(3, loss))),
		"a full bucket takes the request, and 2 records of debt")
	err = le.ConsumeLogs(as(aliceKey), events(trainRun("alice-throttled"), metricsEvent(1, loss)))
	st, ok := status.FromError(err)
	require.True(t, ok, "err = %v", err)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	require.Len(t, st.Details(), 1)
	delay := st.Details()[0].(*errdetails.RetryInfo).GetRetryDelay().AsDuration()
	assert.True(t, delay >= time.Second && delay <= 2*time.Second, "the debt's repayment in whole seconds: %s", delay)
	assert.NotContains(t, st.Message(), aliceKey)
	require.Error(t, me.ConsumeMetrics(as(aliceKey), gauges(trainRun("alice-throttled"), map[int64]map[string]float64{1: loss, 2: loss})),
		"her metrics share her limit")

	require.NoError(t, le.ConsumeLogs(as(bobKey), events(trainRun("bob-taken"), metricsEvent(1, loss))), "bob's bucket is his own")

	require.NoError(t, le.Shutdown(ctx)) // drains the queue
	require.NoError(t, me.Shutdown(ctx))
	steps := map[string]int{}
	for _, r := range srv.Runs() {
		steps[r.Owner] += len(r.Metrics)
	}
	assert.Equal(t, map[string]int{"alice": 3, "bob": 1}, steps, "one run each, and alice's refused requests made none: they were never queued")
	assert.Equal(t, int64(4), sumOf(t, tel, "otelcol_exporter_sent_log_records"), "the queue sent alice's 3 records and bob's 1, no more")
	h := &harness{t: t, tel: tel}
	assert.Equal(t, int64(1), h.count(metricThrottled, map[string]string{"tenant": "alice", "signal": "logs"}))
	assert.Equal(t, int64(2), h.count(metricThrottled, map[string]string{"tenant": "alice", "signal": "metrics"}))
}

// A single-key exporter's signals ask nothing before the queue.
func TestASingleKeyExporterAsksNoAdmission(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.APIKey = "k"
	e, err := newExporters().get(cfg, exportertest.NewNopSettings(metadata.Type))
	require.NoError(t, err)
	assert.Nil(t, e.Unwrap().admission())
	cfg.Tenants.Enabled = true
	assert.NotNil(t, e.Unwrap().admission(), "a gateway's does")
}

// Gateways of one shared registry share each tenant's limit on its Redis:
// what one admitted, the other counts.
func TestGatewaysOfOneSharedRegistryShareEachTenantsLimit(t *testing.T) {
	r := redistest.New(t)
	shared := func(c *Config) {
		c.SharedRegistry.GetOrInsertDefault().Redis.Endpoint = r.Addr()
		c.Tenants.Limits.Limit = tenants.Limit{RecordsPerSecond: 1, BurstSeconds: 3}
	}
	a, b := newTenantHarness(t, shared), newTenantHarness(t, shared)
	admit := func(h *harness, records int) error { return h.exp.admission()(as(aliceKey), "logs", 100, records) }
	require.NoError(t, admit(a, 3), "gateway a empties alice's bucket of 3")
	require.NoError(t, admit(b, 1), "at 0 gateway b admits one more: alice is in debt")
	err := admit(a, 1)
	require.Error(t, err, "gateway a sees the debt gateway b made")
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.NoError(t, b.exp.admission()(as(bobKey), "logs", 100, 3), "bob's limit is his own")
}

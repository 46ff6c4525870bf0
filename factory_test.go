package primeexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pipeline"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestTheFactoryMakesMetricsAndLogsExportersButNoTraces(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, component.MustNewType("prime"), f.Type())
	assert.NoError(t, componenttest.CheckConfigStruct(f.CreateDefaultConfig()))
	assert.Equal(t, component.StabilityLevelAlpha, f.MetricsStability())
	assert.Equal(t, component.StabilityLevelAlpha, f.LogsStability())
	_, err := f.CreateTraces(context.Background(), exportertest.NewNopSettings(f.Type()), f.CreateDefaultConfig())
	assert.ErrorIs(t, err, pipeline.ErrSignalNotSupported)
}

// Through the real exporterhelper with its queue: both signals of one config
// share one registry, so a run's metrics and logs land on one platform run.
func TestBothSignalsOfOneConfigShareOneRunThroughTheCollectorsQueue(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	defer srv.Close()
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.APIKey = configopaque.String(testAPIKey)
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 50 * time.Millisecond
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.NumConsumers = 4
	cfg.QueueConfig = configoptional.Some(queue)

	set := exportertest.NewNopSettings(f.Type())
	ctx := context.Background()
	me, err := f.CreateMetrics(ctx, set, cfg)
	require.NoError(t, err)
	le, err := f.CreateLogs(ctx, set, cfg)
	require.NoError(t, err)
	host := componenttest.NewNopHost()
	require.NoError(t, me.Start(ctx, host))
	require.NoError(t, le.Start(ctx, host))

	concurrently(
		func() {
			require.NoError(t, me.ConsumeMetrics(ctx, gauges(trainRun("shared"), map[int64]map[string]float64{1: {"loss": 1}})))
		},
		func() {
			require.NoError(t, le.ConsumeLogs(ctx, events(trainRun("shared"), metricsEvent(1, map[string]float64{"lr": 0.1}))))
		},
	)
	require.NoError(t, le.ConsumeLogs(ctx, events(trainRun("shared"), runEnd("completed", ""))))

	require.Eventually(t, func() bool {
		runs := srv.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	}, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1, "lr": 0.1}}, srv.Runs()[0].Metrics)

	require.NoError(t, me.Shutdown(ctx))
	require.NoError(t, le.Shutdown(ctx))
}

func TestAStorageExtensionThatIsNotConfiguredFailsTheStart(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig().(*Config)
	cfg.Mode = ModeOffline
	cfg.Directory = t.TempDir()
	id := component.MustNewID("file_storage")
	cfg.Storage = &id
	exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	require.NoError(t, err)
	err = exp.Start(context.Background(), componenttest.NewNopHost())
	require.ErrorContains(t, err, `storage: no extension "file_storage" is configured`)
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestTheDefaultAPIClientKeepsAnIdleConnectionForEveryRunAPushSendsAtOnce(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	ka := cfg.ClientConfig.Keepalive.Get()
	require.NotNil(t, ka, "keep-alive on")
	// Four queue consumers (the default), each sending maxRunsAtOnce runs.
	assert.GreaterOrEqual(t, ka.MaxIdleConnsPerHost, 4*maxRunsAtOnce)
}

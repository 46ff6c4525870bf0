package primeexporter

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pipeline"

	"github.com/primeintellect/primeexporter/rft"
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

// The default retry_on_failure never gives up on a failure that may pass
// (max_elapsed_time 0, where exporterhelper's own default drops the data
// after 5 minutes), and never retries the platform's refusals.
func TestTheDefaultRetryOutlastsAnOutageAndNeverRetriesARefusal(t *testing.T) {
	def := createDefaultConfig().(*Config).RetryConfig
	assert.Zero(t, def.MaxElapsedTime, "no limit: the queue bounds memory")
	assert.Equal(t, 5*time.Minute, configretry.NewDefaultBackOffConfig().MaxElapsedTime, "the helper's default the exporter departs from")

	for _, tt := range []struct {
		status int
		posts  int // metrics posts of the step
		landed bool
	}{
		{503, 4, true}, // three failed pushes, then the retry lands
		{400, 1, false},
		{403, 1, false},
		{422, 1, false},
	} {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
			defer srv.Close()
			// One attempt per push: every retry is exporterhelper's.
			f := newFactory(withClientOptions(func(o *rft.Options) { o.MaxAttempts = 1 }))
			cfg := f.CreateDefaultConfig().(*Config)
			cfg.ClientConfig.Endpoint = srv.BaseURL()
			cfg.APIKey = configopaque.String(testAPIKey)
			cfg.TeamID = "team-1"
			// No queue, so that ConsumeMetrics returns once the retry is
			// done; only the intervals are shortened.
			cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
			cfg.RetryConfig.InitialInterval, cfg.RetryConfig.MaxInterval = time.Millisecond, time.Millisecond
			ctx := context.Background()
			me, err := f.CreateMetrics(ctx, exportertest.NewNopSettings(f.Type()), cfg)
			require.NoError(t, err)
			require.NoError(t, me.Start(ctx, componenttest.NewNopHost()))
			defer func() { require.NoError(t, me.Shutdown(ctx)) }()
			require.NoError(t, me.ConsumeMetrics(ctx, gauges(trainRun("retry"), map[int64]map[string]float64{1: {"loss": 1}})))

			srv.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: tt.status}, rfttest.Fault{Status: tt.status}, rfttest.Fault{Status: tt.status})
			_ = me.ConsumeMetrics(ctx, gauges(trainRun("retry"), map[int64]map[string]float64{2: {"loss": 0.5}}))

			posts := 0
			for _, r := range srv.Requests() {
				if strings.HasSuffix(r.Path, "/rft/metrics") {
					posts++
				}
			}
			assert.Equal(t, 1+tt.posts, posts, "step 1's post, then step 2's")
			_, landed := srv.Runs()[0].Metrics[2]
			assert.Equal(t, tt.landed, landed)
		})
	}
}

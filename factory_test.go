package primeexporter

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/primeintellect/primeexporter/internal/metadata"
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

// --- the sending queue ---

// livenessGuard bounds a wait that only a stalled exporter would reach; it
// is not a speed assertion.
const livenessGuard = 10 * time.Second

// The collector's standard answer to a full queue: new data is refused at
// once (exporterhelper.ErrQueueIsFull, the receiver tells the trainer) and
// counted by exporterhelper, so a platform that hangs or is down never
// stalls the trainer.
func TestAFullQueueRefusesNewDataAtOnceInsteadOfStallingTheTrainer(t *testing.T) {
	platforms := []struct {
		name string
		// endpoint gives the API base: a platform that hangs, or nothing.
		endpoint func(t *testing.T, srv *rfttest.Server) string
	}{
		{"the platform hangs", func(_ *testing.T, srv *rfttest.Server) string {
			hang := make([]rfttest.Fault, 10)
			for i := range hang {
				hang[i] = rfttest.Fault{Delay: time.Hour}
			}
			srv.Inject(rfttest.RouteCreate, hang...)
			return srv.BaseURL()
		}},
		{"the platform is down", func(t *testing.T, _ *rfttest.Server) string {
			return "http://" + freeport.Addr(t)
		}},
	}
	signals := []struct {
		name        string
		enqueueFail string // exporterhelper's counter of refused records
		create      func(s *exporters, set exporter.Settings, cfg *Config) (component.Component, func(i int) error, error)
		records     int64 // records per request
	}{
		{
			name: "metrics", enqueueFail: "otelcol_exporter_enqueue_failed_metric_points", records: 1,
			create: func(s *exporters, set exporter.Settings, cfg *Config) (component.Component, func(int) error, error) {
				exp, err := s.createMetrics(context.Background(), set, cfg)
				if err != nil {
					return nil, nil, err
				}
				return exp, func(i int) error {
					return exp.ConsumeMetrics(context.Background(), gauges(trainRun("full"), map[int64]map[string]float64{int64(i): {"loss": 1}}))
				}, nil
			},
		},
		{
			name: "logs", enqueueFail: "otelcol_exporter_enqueue_failed_log_records", records: 1,
			create: func(s *exporters, set exporter.Settings, cfg *Config) (component.Component, func(int) error, error) {
				exp, err := s.createLogs(context.Background(), set, cfg)
				if err != nil {
					return nil, nil, err
				}
				return exp, func(i int) error {
					return exp.ConsumeLogs(context.Background(), events(trainRun("full"), episode(int64(i)*10, "x")))
				}, nil
			},
		},
	}
	for _, p := range platforms {
		for _, sig := range signals {
			t.Run(p.name+"/"+sig.name, func(t *testing.T) {
				t.Parallel()
				srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
				cfg := createDefaultConfig().(*Config)
				cfg.ClientConfig.Endpoint = p.endpoint(t, srv)
				cfg.ClientConfig.Timeout = time.Hour // a hang is a hang
				cfg.APIKey = configopaque.String(testAPIKey)
				cfg.TeamID = "team-1"
				queue := exporterhelper.NewDefaultQueueConfig()
				queue.QueueSize = 2
				queue.NumConsumers = 1
				cfg.QueueConfig = configoptional.Some(queue)

				tel := componenttest.NewTelemetry()
				t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
				set := exportertest.NewNopSettings(metadata.Type)
				set.TelemetrySettings = tel.NewTelemetrySettings()
				s := newExporters(withClientOptions(func(o *rft.Options) {
					o.MaxAttempts = 1
					o.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
				}))
				exp, consume, err := sig.create(s, set, cfg)
				require.NoError(t, err)
				require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))

				const calls = 6
				results := make(chan error, calls)
				go func() {
					for i := 1; i <= calls; i++ {
						results <- consume(i)
					}
				}()
				full := 0
				for i := 0; i < calls; i++ {
					select {
					case err := <-results:
						if errors.Is(err, exporterhelper.ErrQueueIsFull) {
							full++
						} else {
							assert.NoError(t, err, "accepted into the queue")
						}
					case <-time.After(livenessGuard):
						t.Fatalf("a push was still blocked after %s: the trainer would stall", livenessGuard)
					}
				}
				// The queue holds two requests, the one being sent included.
				assert.Equal(t, calls-2, full, "every request past the queue's size is refused")
				assert.Equal(t, int64(calls-2)*sig.records, sumOf(t, tel, sig.enqueueFail), "and counted by exporterhelper")

				// Ending the hang fails the held request; the retry and the
				// queue's drain then end with the shutdown.
				srv.Close()
				ctx, cancel := context.WithTimeout(context.Background(), livenessGuard)
				defer cancel()
				require.NoError(t, exp.Shutdown(ctx))
			})
		}
	}
}

// sumOf reads an int64 counter of the collector's own telemetry.
func sumOf(t *testing.T, tel *componenttest.Telemetry, name string) int64 {
	t.Helper()
	m, err := tel.GetMetric(name)
	require.NoError(t, err, "metric %s", name)
	var total int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		total += dp.Value
	}
	return total
}

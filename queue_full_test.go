package primeexporter

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/primeintellect/primeexporter/internal/metadata"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

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
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			addr := l.Addr().String()
			require.NoError(t, l.Close())
			return "http://" + addr
		}},
	}
	signals := []struct {
		name        string
		enqueueFail string // exporterhelper's counter of refused records
		create      func(s *share, set exporter.Settings, cfg *Config) (component.Component, func(i int) error, error)
		records     int64 // records per request
	}{
		{
			name: "metrics", enqueueFail: "otelcol_exporter_enqueue_failed_metric_points", records: 1,
			create: func(s *share, set exporter.Settings, cfg *Config) (component.Component, func(int) error, error) {
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
			create: func(s *share, set exporter.Settings, cfg *Config) (component.Component, func(int) error, error) {
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
				s := &share{exporters: map[component.ID]*primeExporter{}, opts: []option{withClientOptions(func(o *rft.Options) {
					o.MaxAttempts = 1
					o.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
				})}}
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

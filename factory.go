package primeexporter

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/primeintellect/primeexporter/internal/ambient"
	"github.com/primeintellect/primeexporter/internal/metadata"
	"github.com/primeintellect/primeexporter/internal/tenant"
)

const (
	defaultEndpoint       = "https://api.primeintellect.ai"
	defaultFrontendURL    = "https://app.primeintellect.ai"
	defaultTracesEndpoint = "https://prime-traces.pintel.dev"
)

// NewFactory returns the prime exporter's factory. The factory owns the
// share that lets the metrics and logs exporters of one config use one run
// registry.
func NewFactory() exporter.Factory {
	return newFactory()
}

// newFactory is NewFactory with test seams for every exporter it builds.
func newFactory(opts ...option) exporter.Factory {
	s := &share{exporters: map[component.ID]*primeExporter{}, opts: opts}
	return exporter.NewFactory(
		metadata.Type,
		createDefaultConfig,
		exporter.WithMetrics(s.createMetrics, metadata.MetricsStability),
		exporter.WithLogs(s.createLogs, metadata.LogsStability),
	)
}

func createDefaultConfig() component.Config {
	client := confighttp.NewDefaultClientConfig()
	client.Endpoint = defaultEndpoint
	// The platform answers within seconds; a hung request should fail the
	// attempt, not hold a queue consumer.
	client.Timeout = 30 * time.Second
	// A push sends up to maxRunsAtOnce runs side by side on each queue
	// consumer; with Go's default of two idle connections per host every
	// further request dialled (and, against the platform, handshook TLS)
	// anew.
	keepalive := confighttp.NewDefaultKeepaliveClientConfig()
	keepalive.MaxIdleConnsPerHost = maxIdleConnsPerHost
	client.Keepalive = configoptional.Some(keepalive)
	// Never give up on a retryable failure (exporterhelper's default gives
	// up after 5 minutes, dropping data the trainer was told is accepted):
	// the sending queue bounds memory, since a full queue refuses at the
	// receiver and the trainer's SDK retries at the source. Permanent
	// refusals are dropped at once all the same.
	retry := configretry.NewDefaultBackOffConfig()
	retry.MaxElapsedTime = 0
	return &Config{
		ClientConfig: client,
		QueueConfig:  configoptional.Some(defaultQueueConfig()),
		RetryConfig:  retry,
		FrontendURL:  defaultFrontendURL,
		Mode:         ModeOnline,
		Directory:    "prime-runs",
		Samples: SamplesConfig{
			StepInterval:    10,
			MaxEpisodeBytes: 32 << 20,
			// An object being encoded holds about twice its text (its
			// rows, then its Parquet bytes): with one encode per core this
			// bounds encoding to ~64 MiB a core.
			MaxObjectBytes: 32 << 20,
		},
		Metrics: MetricsConfig{StepMetric: "step"},
		// Off until asked for; when on, documents go where the platform's
		// newest SDK sends them.
		Traces: TracesConfig{Endpoint: defaultTracesEndpoint, Routing: RoutingExclusive},
		// Ambient data waits for a trainer that starts a few minutes after
		// its node's collector; 256 keys hold a node's host, process and 8
		// GPUs' charts and an inference server's with room to spare.
		Ambient: ambient.Config{Wait: 5 * time.Minute, MaxWaitingPoints: 100_000, MaxKeys: 256, MaxPods: 4096},
		// Metrics and logs travel in separate pipelines: give the other
		// signal time to deliver what was sent just before the end.
		FinalizeGrace:   10 * time.Second,
		FinalizeTimeout: 2 * time.Minute,
		// Off until configured; a configured block gets these defaults.
		SharedRegistry: configoptional.Default(SharedRegistryConfig{Redis: RedisConfig{Prefix: "prime"}}),
		Tenants:        TenantsConfig{MaxOpenRuns: 32, MaxTenants: 1000, KeyTTL: tenant.DefaultTTL},
	}
}

// defaultQueueConfig batches inside the collector's queue: a step's episodes
// arrive spread over many small OTLP requests, and one object per request
// would litter the step with tiny objects. A batch closes at 4 MiB or after
// 5 s, whichever comes first, so a step's episodes make a few objects and
// reach the viewer within seconds; nothing is acknowledged to the queue
// before it is uploaded. The flush timeout stays below finalize_grace so
// that data batched when a run ends is still accepted.
//
// What is in flight is bounded by consumers × max_size: each consumer
// holds one batch (in memory about twice its OTLP size) while it is mapped,
// encoded and uploaded. Four consumers of 16 MiB batches keep a core or two
// encoding while others wait on uploads, within ~150 MiB.
func defaultQueueConfig() exporterhelper.QueueBatchConfig {
	q := exporterhelper.NewDefaultQueueConfig()
	q.NumConsumers = 4
	batch := exporterhelper.NewDefaultBatchConfig()
	batch.FlushTimeout = 5 * time.Second
	batch.Sizer = exporterhelper.RequestSizerTypeBytes
	batch.MinSize = 4 << 20
	batch.MaxSize = 16 << 20
	q.Batch = configoptional.Some(batch)
	return q
}

// share hands out one primeExporter per component ID, the pattern the
// otlp receiver uses for its signals.
type share struct {
	opts []option

	mu        sync.Mutex
	exporters map[component.ID]*primeExporter
}

func (s *share) get(cfg *Config, set exporter.Settings) (*primeExporter, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.exporters[set.ID]; ok && e.cfg == cfg {
		return e, nil
	}
	e, err := newPrimeExporter(cfg, set, s.opts...)
	if err != nil {
		return nil, err
	}
	e.onLastShutdown = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.exporters[set.ID] == e {
			delete(s.exporters, set.ID)
		}
	}
	s.exporters[set.ID] = e
	return e, nil
}

func (s *share) createMetrics(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Metrics, error) {
	return buildSignal(s, set, c, func(e *primeExporter) (exporter.Metrics, error) {
		return exporterhelper.NewMetrics(ctx, e.tapQueue(set, "metrics"), c, e.pushMetrics, helperOptions(e)...)
	}, func(m exporter.Metrics, n stopNotifier) exporter.Metrics { return stoppingMetrics{m, n} })
}

func (s *share) createLogs(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Logs, error) {
	return buildSignal(s, set, c, func(e *primeExporter) (exporter.Logs, error) {
		return exporterhelper.NewLogs(ctx, e.tapQueue(set, "logs"), c, e.pushLogs, helperOptions(e)...)
	}, func(l exporter.Logs, n stopNotifier) exporter.Logs { return stoppingLogs{l, n} })
}

// buildSignal builds one signal's exporterhelper exporter on the config's
// shared exporter, and gives it the shutdown notice of stopNotifier.
func buildSignal[X component.Component](s *share, set exporter.Settings, c component.Config,
	build func(*primeExporter) (X, error), notify func(X, stopNotifier) X,
) (X, error) {
	var none X
	e, err := s.get(c.(*Config), set)
	if err != nil {
		return none, err
	}
	x, err := build(e)
	if err != nil {
		return none, err
	}
	return notify(x, stopNotifier{x, e}), nil
}

// stoppingMetrics and stoppingLogs are the helpers' exporters with the
// shutdown notice of stopNotifier, started on a host whose queue storage
// does not drop requests on a full disk (exporter.queueHost).
type stoppingMetrics struct {
	exporter.Metrics
	stop stopNotifier
}

func (s stoppingMetrics) Start(ctx context.Context, host component.Host) error {
	return s.Metrics.Start(ctx, s.stop.e.queueHost(host, "metrics"))
}

func (s stoppingMetrics) Shutdown(ctx context.Context) error { return s.stop.Shutdown(ctx) }

type stoppingLogs struct {
	exporter.Logs
	stop stopNotifier
}

func (s stoppingLogs) Start(ctx context.Context, host component.Host) error {
	return s.Logs.Start(ctx, s.stop.e.queueHost(host, "logs"))
}

func (s stoppingLogs) Shutdown(ctx context.Context) error { return s.stop.Shutdown(ctx) }

// helperOptions wire both signals' exporterhelper to the shared exporter.
func helperOptions(e *primeExporter) []exporterhelper.Option {
	return []exporterhelper.Option{
		exporterhelper.WithStart(e.start),
		exporterhelper.WithShutdown(e.shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		// The HTTP client times out each request; a push as a whole is
		// bounded by the client's brief in-place retries.
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithRetry(e.cfg.RetryConfig),
		exporterhelper.WithQueue(e.cfg.queueConfig()),
	}
}

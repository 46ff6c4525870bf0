package primeexporter

import (
	"context"
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
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/sharedcomponent"
	"github.com/primeintellect/primeexporter/internal/tenant"
	"github.com/primeintellect/primeexporter/internal/tenants"
	"github.com/primeintellect/primeexporter/rft"
)

const (
	defaultEndpoint       = "https://api.primeintellect.ai"
	defaultFrontendURL    = "https://app.primeintellect.ai"
	defaultTracesEndpoint = "https://prime-traces.pintel.dev"
)

// NewFactory returns the prime exporter's factory. The factory keeps one
// exporter per config, which its metrics and logs exporters share so that
// a run's two signals use one run registry.
func NewFactory() exporter.Factory {
	return newFactory()
}

// newFactory is NewFactory with test seams for every exporter it builds.
func newFactory(opts ...option) exporter.Factory {
	s := newExporters(opts...)
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
		Tenants: tenants.Config{
			MaxOpenRuns: 32, MaxTenants: 1000, KeyTTL: tenant.DefaultTTL, NamedInMetrics: 20,
			Limits: tenants.LimitsConfig{
				// A tenant's ingest: Tempo's and Elastic's managed OTLP's
				// 15 MB/s, Mimir's 10,000 samples/s, and a burst of two
				// seconds of either (Elastic's 30 MB on 15 MB/s). The
				// overrides file is read again this often.
				Limit:          tenants.Limit{BytesPerSecond: 15_000_000, RecordsPerSecond: 10_000, BurstSeconds: 2},
				ReloadInterval: 10 * time.Second,
			},
		},
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

// exporters hands out the one exporter of each config
// (internal/sharedcomponent), keyed by its id and config so that a reload's
// new config builds a fresh one.
type exporters struct {
	opts []option
	m    *sharedcomponent.Map[exporterKey, *primeExporter]
}

type exporterKey struct {
	id  component.ID
	cfg *Config
}

func newExporters(opts ...option) *exporters {
	return &exporters{opts: opts, m: sharedcomponent.NewMap[exporterKey, *primeExporter]()}
}

// get is the shared exporter of cfg.
func (s *exporters) get(cfg *Config, set exporter.Settings) (*sharedcomponent.Component[*primeExporter], error) {
	return s.m.LoadOrStore(exporterKey{set.ID, cfg}, func(status *sharedcomponent.Status) (*primeExporter, error) {
		return newPrimeExporter(cfg, set, status, s.opts...)
	})
}

func (s *exporters) createMetrics(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Metrics, error) {
	return buildSignal(s, set, c, "metrics", func(e *primeExporter, tapped exporter.Settings, opts []exporterhelper.Option) (exporter.Metrics, error) {
		m, err := exporterhelper.NewMetrics(ctx, tapped, c, e.pushMetrics, opts...)
		return tenants.AdmitMetrics(m, e.admission()), err
	}, sharedcomponent.Metrics[*primeExporter])
}

func (s *exporters) createLogs(ctx context.Context, set exporter.Settings, c component.Config) (exporter.Logs, error) {
	return buildSignal(s, set, c, "logs", func(e *primeExporter, tapped exporter.Settings, opts []exporterhelper.Option) (exporter.Logs, error) {
		l, err := exporterhelper.NewLogs(ctx, tapped, c, e.pushLogs, opts...)
		return tenants.AdmitLogs(l, e.admission()), err
	}, sharedcomponent.Logs[*primeExporter])
}

// admission is what a multi-tenant gateway's signals ask before a request
// goes into the sending queue (its tenant's ingest limit,
// tenants.Gateway.Admit); nil on a single-key exporter, whose signals ask
// nothing.
func (e *primeExporter) admission() tenants.Admit {
	if !e.cfg.Tenants.Enabled {
		return nil
	}
	return func(ctx context.Context, signal string, bytes, records int) error {
		e.mu.Lock()
		g := e.tenants
		e.mu.Unlock()
		if g == nil {
			return nil // not started, or shut down: exporterhelper refuses
		}
		return g.Admit(ctx, signal, bytes, records)
	}
}

// buildSignal builds one signal's exporterhelper exporter on the config's
// shared exporter, and wraps it (sharedcomponent.Metrics or Logs) so that
// its queue starts on a host whose storage client does not drop requests
// on a full disk (exporter.queueHost).
func buildSignal[X component.Component](s *exporters, set exporter.Settings, c component.Config, signal string,
	build func(*primeExporter, exporter.Settings, []exporterhelper.Option) (X, error),
	wrap func(*sharedcomponent.Component[*primeExporter], X, func(component.Host) component.Host) X,
) (X, error) {
	var none X
	shared, err := s.get(c.(*Config), set)
	if err != nil {
		return none, err
	}
	e := shared.Unwrap()
	x, err := build(e, e.tapQueue(set, signal), helperOptions(shared, e.cfg))
	if err != nil {
		return none, err
	}
	return wrap(shared, x, func(host component.Host) component.Host { return e.queueHost(host, signal) }), nil
}

// helperOptions wire both signals' exporterhelper to the shared exporter,
// which starts with the first and shuts down after the last.
func helperOptions(shared *sharedcomponent.Component[*primeExporter], cfg *Config) []exporterhelper.Option {
	return []exporterhelper.Option{
		exporterhelper.WithStart(shared.Start),
		exporterhelper.WithShutdown(shared.Shutdown),
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		// The HTTP client times out each request; a push as a whole is
		// bounded by the client's brief in-place retries.
		exporterhelper.WithTimeout(exporterhelper.TimeoutConfig{Timeout: 0}),
		exporterhelper.WithRetry(cfg.RetryConfig),
		exporterhelper.WithQueue(cfg.queueConfig()),
	}
}

// option is a test seam, given at construction.
type option func(*options)

type options struct {
	client []func(*rft.Options)
	runs   []runs.Option
	outage []platform.OutageOption
}

// withClientOptions adjusts the platform client's options before it is
// built (e.g. instant in-place retries).
func withClientOptions(f func(*rft.Options)) option {
	return func(o *options) { o.client = append(o.client, f) }
}

// withOutageOptions passes options to the outage watches (e.g. a clock).
func withOutageOptions(opts ...platform.OutageOption) option {
	return func(o *options) { o.outage = append(o.outage, opts...) }
}

// withCloseOutPause replaces the run registry's wait between close-out
// rounds (e.g. none at all).
func withCloseOutPause(pause func(ctx context.Context, d time.Duration) error) option {
	return func(o *options) { o.runs = append(o.runs, runs.WithPause(pause)) }
}

package trainerlib

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
)

// NewResource is a resource of exactly attrs and the SDK's own. There is no
// resource.WithFromEnv: the run must be what the flags say, whatever
// OTEL_RESOURCE_ATTRIBUTES the shell happens to hold.
func NewResource(ctx context.Context, attrs ...attribute.KeyValue) (*resource.Resource, error) {
	return resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
}

// RetrySettings has the shape of the OTLP/HTTP exporters' RetryConfig, which
// are distinct types over the same fields: convert it to either.
type RetrySettings struct {
	Enabled         bool
	InitialInterval time.Duration
	MaxInterval     time.Duration
	MaxElapsedTime  time.Duration
}

// Retry rides out a collector that answers 429/503 for a moment (a memory
// limiter), but gives up within the export timeout so a dead endpoint fails
// the run quickly. Connection refused is never retried by the exporters.
func Retry(exportTimeout time.Duration) RetrySettings {
	return RetrySettings{
		Enabled:         true,
		InitialInterval: 100 * time.Millisecond,
		MaxInterval:     time.Second,
		MaxElapsedTime:  exportTimeout,
	}
}

// Logs is a run's logger provider, exporting to one endpoint, and the count
// of what it delivered.
type Logs struct {
	Provider *sdklog.LoggerProvider
	// records counts the log records the collector accepted.
	records atomic.Int64
}

// NewLogs builds the logger provider against ep. Nothing is sent until the
// first flush: the processor's own interval never fires within a run, so a
// step's or batch's records go out with its flush and their errors are
// returned to it. opts add to the processor's settings (the queue size must
// hold more than what one flush sends, so that no record is dropped).
func NewLogs(ctx context.Context, ep Endpoint, exportTimeout time.Duration, res *resource.Resource, opts ...sdklog.BatchProcessorOption) (*Logs, error) {
	exporterOpts := []otlploghttp.Option{
		otlploghttp.WithEndpoint(ep.HostPort),
		otlploghttp.WithURLPath(ep.BasePath + "/v1/logs"),
		otlploghttp.WithTimeout(exportTimeout),
		otlploghttp.WithRetry(otlploghttp.RetryConfig(Retry(exportTimeout))),
	}
	if ep.Insecure {
		exporterOpts = append(exporterOpts, otlploghttp.WithInsecure())
	}
	exp, err := otlploghttp.New(ctx, exporterOpts...)
	if err != nil {
		return nil, err
	}
	l := &Logs{}
	processorOpts := append([]sdklog.BatchProcessorOption{
		sdklog.WithExportInterval(24 * time.Hour),
		sdklog.WithExportTimeout(2 * exportTimeout),
	}, opts...)
	processor := sdklog.NewBatchProcessor(countingLogExporter{Exporter: exp, records: &l.records}, processorOpts...)
	l.Provider = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(processor))
	return l, nil
}

// Records is how many log records the collector has accepted.
func (l *Logs) Records() int64 { return l.records.Load() }

// countingLogExporter counts the log records the collector accepted.
type countingLogExporter struct {
	sdklog.Exporter
	records *atomic.Int64
}

func (e countingLogExporter) Export(ctx context.Context, records []sdklog.Record) error {
	if err := e.Exporter.Export(ctx, records); err != nil {
		return err
	}
	e.records.Add(int64(len(records)))
	return nil
}

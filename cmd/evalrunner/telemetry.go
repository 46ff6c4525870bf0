package main

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
)

// instrumentationScope names the logger.
const instrumentationScope = "github.com/primeintellect/primeexporter/cmd/evalrunner"

// Sampling of the simulated model, part of the evaluation's config.
const (
	temperature = 1.0
	maxTokens   = 512
)

// maxRequestBytes keeps one OTLP request well under the collector receiver's
// default max_request_body_size (20 MiB) when episodes are large.
const maxRequestBytes = 16 << 20

// telemetry owns the run's logger provider and what it exported.
type telemetry struct {
	loggers *sdklog.LoggerProvider
	// reported holds the errors of exports the processor started on its
	// own (a request's worth of records was queued); flush returns them.
	reported *errorSink
	// logRecords counts the records the collector accepted.
	logRecords atomic.Int64
}

// newResource describes the evaluation the way the exporter reads it
// (docs/evals.md, "What to send"; docs/telemetry.md section 1).
func newResource(ctx context.Context, cfg config) (*resource.Resource, error) {
	evalConfig, err := json.Marshal(map[string]any{
		"seed":                 cfg.seed,
		"num_examples":         (cfg.episodes + cfg.rolloutsPerExample - 1) / cfg.rolloutsPerExample,
		"rollouts_per_example": cfg.rolloutsPerExample,
		"environments":         cfg.environments,
		"sampling":             map[string]any{"temperature": temperature, "max_tokens": maxTokens},
	})
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", "evalrunner"),
		attribute.String("prime.run.kind", "eval"),
		attribute.String("prime.run.model", cfg.model),
		attribute.StringSlice("prime.run.environments", cfg.environments),
		attribute.String("prime.run.config", string(evalConfig)),
		attribute.StringSlice("prime.eval.tags", cfg.tags),
	}
	optional := []struct{ key, value string }{
		{"prime.run.key", cfg.runKey},
		{"prime.run.id", cfg.runID},
		{"prime.run.name", cfg.name},
		{"prime.run.team_id", cfg.teamID},
		{"prime.eval.framework", cfg.framework},
		{"prime.eval.description", cfg.description},
	}
	for _, a := range optional {
		if a.value != "" {
			attrs = append(attrs, attribute.String(a.key, a.value))
		}
	}
	// No resource.WithFromEnv: the evaluation must be what the flags say,
	// whatever OTEL_RESOURCE_ATTRIBUTES the shell happens to hold.
	return resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
}

// recordsPerRequest bounds one export so that a request of large episodes
// stays under maxRequestBytes; small ones go out a whole batch at a time.
func recordsPerRequest(cfg config) int {
	perEpisode := cfg.episodeBytes + 8<<10 // the document around the messages
	return max(1, min(cfg.batch, maxRequestBytes/perEpisode))
}

// newTelemetry builds the logger provider against cfg.endpoint. Nothing is
// sent until the first flush, or until a request's worth of records waits.
func newTelemetry(ctx context.Context, cfg config, reported *errorSink) (*telemetry, error) {
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	opts := []otlploghttp.Option{
		otlploghttp.WithEndpoint(cfg.endpoint.hostPort),
		otlploghttp.WithURLPath(cfg.endpoint.basePath + "/v1/logs"),
		otlploghttp.WithTimeout(cfg.exportTimeout),
		otlploghttp.WithRetry(retryConfig(cfg)),
	}
	if cfg.endpoint.insecure {
		opts = append(opts, otlploghttp.WithInsecure())
	}
	exp, err := otlploghttp.New(ctx, opts...)
	if err != nil {
		return nil, err
	}

	t := &telemetry{reported: reported}
	// The processor's own interval never fires within a run: a batch's
	// records are flushed with the batch, and the queue holds more than a
	// batch so that none is ever dropped.
	processor := sdklog.NewBatchProcessor(
		countingLogExporter{Exporter: exp, records: &t.logRecords},
		sdklog.WithExportInterval(24*time.Hour),
		sdklog.WithExportTimeout(2*cfg.exportTimeout),
		sdklog.WithMaxQueueSize(max(2048, 2*(cfg.batch+2))),
		sdklog.WithExportMaxBatchSize(recordsPerRequest(cfg)),
	)
	t.loggers = sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(processor))
	return t, nil
}

// flush exports everything recorded so far. It also fails when an export
// the processor started since the last flush failed: with large episodes a
// batch goes out in several requests, and only the last is the flush's own.
func (t *telemetry) flush(ctx context.Context) error {
	if err := t.loggers.ForceFlush(ctx); err != nil {
		return err
	}
	return t.reported.takeNew()
}

// shutdown flushes and stops the provider.
func (t *telemetry) shutdown(ctx context.Context) error {
	return t.loggers.Shutdown(ctx)
}

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

// errorSink collects the errors the SDK reports asynchronously through the
// OTel error handler, so that none of them can go unnoticed.
type errorSink struct {
	mu   sync.Mutex
	errs []error
	// taken counts the errors takeNew has returned.
	taken int
}

func (s *errorSink) Handle(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

// err joins every error reported.
func (s *errorSink) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// takeNew joins the errors reported since its last call.
func (s *errorSink) takeNew() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := errors.Join(s.errs[s.taken:]...)
	s.taken = len(s.errs)
	return err
}

// retryConfig rides out a collector that answers 429/503 for a moment (a
// memory limiter), but gives up within the export timeout so a dead endpoint
// fails the run quickly. Connection refused is never retried by the exporter.
func retryConfig(cfg config) otlploghttp.RetryConfig {
	return otlploghttp.RetryConfig{
		Enabled:         true,
		InitialInterval: 100 * time.Millisecond,
		MaxInterval:     time.Second,
		MaxElapsedTime:  cfg.exportTimeout,
	}
}

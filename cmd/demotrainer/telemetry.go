package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// instrumentationScope names the meter and logger.
const instrumentationScope = "github.com/primeintellect/primeexporter/cmd/demotrainer"

// seqLen is the simulated context length, sent as prime.training.seq_len.
const seqLen = 2048

// learningRate is the simulated optimizer's constant learning rate.
const learningRate = 1e-6

// telemetry owns the two SDK providers of a run and what they exported.
type telemetry struct {
	meters *sdkmetric.MeterProvider
	logs   *trainerlib.Logs
	// metricPoints counts the points the exporter delivered, for the
	// summary line.
	metricPoints atomic.Int64
}

// newResource describes the run the way telemetry.md section 1 reads it.
func newResource(ctx context.Context, cfg config) (*resource.Resource, error) {
	runConfig, err := json.Marshal(map[string]any{
		"seed": cfg.Seed,
		"trainer": map[string]any{
			"lr":                   learningRate,
			"batch_size":           cfg.episodesPerStep,
			"rollouts_per_example": cfg.rolloutsPerExample,
		},
	})
	if err != nil {
		return nil, err
	}
	attrs := []attribute.KeyValue{
		attribute.String("service.name", "demotrainer"),
		attribute.String("prime.run.name", cfg.runName),
		attribute.String("prime.run.model", cfg.model),
		attribute.StringSlice("prime.run.environments", cfg.environments),
		attribute.Int("prime.training.max_steps", cfg.steps),
		attribute.Int("prime.training.batch_size", cfg.episodesPerStep),
		attribute.Int("prime.training.rollouts_per_example", cfg.rolloutsPerExample),
		attribute.Int("prime.training.seq_len", seqLen),
		attribute.String("prime.run.config", string(runConfig)),
	}
	if cfg.runKey != "" {
		attrs = append(attrs, attribute.String("prime.run.key", cfg.runKey))
	}
	if cfg.runID != "" {
		attrs = append(attrs, attribute.String("prime.run.id", cfg.runID))
	}
	if cfg.teamID != "" {
		attrs = append(attrs, attribute.String("prime.run.team_id", cfg.teamID))
	}
	if ns, name, ok := strings.Cut(cfg.pod, "/"); ok {
		attrs = append(attrs, attribute.String("k8s.namespace.name", ns), attribute.String("k8s.pod.name", name))
	}
	return trainerlib.NewResource(ctx, attrs...)
}

// newTelemetry builds both providers against cfg.Endpoint. Nothing is sent
// until the first flush.
func newTelemetry(ctx context.Context, cfg config) (*telemetry, error) {
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	metricOpts := []otlpmetrichttp.Option{
		otlpmetrichttp.WithEndpoint(cfg.Endpoint.HostPort),
		otlpmetrichttp.WithURLPath(cfg.Endpoint.BasePath + "/v1/metrics"),
		otlpmetrichttp.WithTimeout(cfg.ExportTimeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig(trainerlib.Retry(cfg.ExportTimeout))),
		otlpmetrichttp.WithTemporalitySelector(deltaTemporality),
	}
	if cfg.Endpoint.Insecure {
		metricOpts = append(metricOpts, otlpmetrichttp.WithInsecure())
	}
	metricExp, err := otlpmetrichttp.New(ctx, metricOpts...)
	if err != nil {
		return nil, err
	}
	// A step's records are flushed with the step, and the queue holds more
	// than one step so that none is ever dropped.
	logs, err := trainerlib.NewLogs(ctx, cfg.Endpoint, cfg.ExportTimeout, res,
		sdklog.WithMaxQueueSize(max(2048, 2*(cfg.episodesPerStep+3))))
	if err != nil {
		return nil, errors.Join(err, metricExp.Shutdown(ctx))
	}

	t := &telemetry{logs: logs}
	// The reader's own interval never fires within a run: every export comes
	// from the flush after each step, so each step's points go out once, in
	// order, and their errors are returned to the step that made them.
	reader := sdkmetric.NewPeriodicReader(
		countingMetricExporter{Exporter: metricExp, points: &t.metricPoints},
		sdkmetric.WithInterval(24*time.Hour),
		sdkmetric.WithTimeout(2*cfg.ExportTimeout),
	)
	t.meters = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader))
	return t, nil
}

// deltaTemporality makes every collection carry only what was recorded since
// the previous one, as telemetry.md asks of trainers.
func deltaTemporality(sdkmetric.InstrumentKind) metricdata.Temporality {
	return metricdata.DeltaTemporality
}

// flush exports everything recorded so far: metrics first, then logs, so the
// step's metrics reach the collector before the step's events.
func (t *telemetry) flush(ctx context.Context) error {
	if err := t.meters.ForceFlush(ctx); err != nil {
		return err
	}
	return t.logs.Provider.ForceFlush(ctx)
}

// shutdown flushes and stops both providers, reporting every failure.
func (t *telemetry) shutdown(ctx context.Context) error {
	return errors.Join(t.meters.Shutdown(ctx), t.logs.Provider.Shutdown(ctx))
}

// countingMetricExporter counts the data points the collector accepted.
type countingMetricExporter struct {
	sdkmetric.Exporter
	points *atomic.Int64
}

func (e countingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := e.Exporter.Export(ctx, rm); err != nil {
		return err
	}
	e.points.Add(int64(countPoints(rm)))
	return nil
}

func countPoints(rm *metricdata.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			n += countPointsOf[float64](m.Data) + countPointsOf[int64](m.Data)
		}
	}
	return n
}

// countPointsOf counts the points of a gauge, sum or histogram over N; any
// other aggregation, or one over the other number type, counts 0.
func countPointsOf[N int64 | float64](data metricdata.Aggregation) int {
	switch d := data.(type) {
	case metricdata.Gauge[N]:
		return len(d.DataPoints)
	case metricdata.Sum[N]:
		return len(d.DataPoints)
	case metricdata.Histogram[N]:
		return len(d.DataPoints)
	}
	return 0
}

package primeexporter

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/metadata"
)

// The counters' exported names. metadata.yaml declares them and mdatagen
// builds the instruments; these copies are what tests read the counters by,
// and the README's table lists them.
const (
	metricRejected      = "otelcol_exporter_prime_records_rejected"
	metricSkipped       = "otelcol_exporter_prime_records_skipped"
	metricPosts         = "otelcol_exporter_prime_metric_posts"
	metricRuns          = "otelcol_exporter_prime_runs"
	metricSampleRows    = "otelcol_exporter_prime_sample_rows_uploaded"
	metricSampleObjects = "otelcol_exporter_prime_sample_objects_uploaded"
	metricSampleBytes   = "otelcol_exporter_prime_sample_bytes_uploaded"
)

// Signals, as the counters' "signal" attribute.
const (
	signalMetrics = "metrics"
	signalLogs    = "logs"
)

// telemetry counts loss (rejected) apart from non-loss (skipped), as the SDK
// did, so that a dashboard can alert on the first without noise from the
// second. Its methods set the attributes, which mdatagen's telemetry section
// documents but cannot bind to the generated instruments.
type telemetry struct {
	b *metadata.TelemetryBuilder
}

// newTelemetry takes the meter provider alone because the generated builder
// reads nothing else from the telemetry settings.
func newTelemetry(set component.TelemetrySettings) (*telemetry, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	return &telemetry{b: b}, nil
}

func (t *telemetry) reject(signal, reason string, n int) {
	if n > 0 {
		t.b.ExporterPrimeRecordsRejected.Add(context.Background(), int64(n), metric.WithAttributes(
			attribute.String("signal", signal), attribute.String("reason", reason)))
	}
}

func (t *telemetry) skip(signal, reason string, n int) {
	if n > 0 {
		t.b.ExporterPrimeRecordsSkipped.Add(context.Background(), int64(n), metric.WithAttributes(
			attribute.String("signal", signal), attribute.String("reason", reason)))
	}
}

func (t *telemetry) post(outcome string) {
	t.b.ExporterPrimeMetricPosts.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

func (t *telemetry) runEvent(event string) {
	t.b.ExporterPrimeRuns.Add(context.Background(), 1, metric.WithAttributes(attribute.String("event", event)))
}

// samplesUploaded counts what reached the platform's sample table (or the
// offline directory): rows and bytes say how much, objects how many
// presign → PUT → confirm rounds it took.
func (t *telemetry) samplesUploaded(rows, objects, bytes int) {
	ctx := context.Background()
	if rows > 0 {
		t.b.ExporterPrimeSampleRowsUploaded.Add(ctx, int64(rows))
	}
	if objects > 0 {
		t.b.ExporterPrimeSampleObjectsUploaded.Add(ctx, int64(objects))
	}
	if bytes > 0 {
		t.b.ExporterPrimeSampleBytesUploaded.Add(ctx, int64(bytes))
	}
}

// maxLogOnceKeys bounds the memory of logOnce; past it every line is logged
// at debug level instead, which is the safe side.
const maxLogOnceKeys = 10000

// logOnce keeps bad input from flooding the log: one warning per key (run
// and reason), then debug lines.
type logOnce struct {
	logger *zap.Logger
	mu     sync.Mutex
	seen   map[string]struct{}
}

func newLogOnce(logger *zap.Logger) *logOnce {
	return &logOnce{logger: logger, seen: map[string]struct{}{}}
}

func (l *logOnce) Warn(key, msg string, fields ...zap.Field) {
	l.mu.Lock()
	_, seen := l.seen[key]
	if !seen && len(l.seen) < maxLogOnceKeys {
		l.seen[key] = struct{}{}
	} else {
		seen = true
	}
	l.mu.Unlock()
	if seen {
		l.logger.Debug(msg, fields...)
		return
	}
	l.logger.Warn(msg, fields...)
}

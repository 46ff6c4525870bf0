package primeexporter

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
)

const scopeName = "github.com/primeintellect/primeexporter"

// Self-telemetry names: the collector's own metrics show what the exporter
// dropped and why, next to exporterhelper's sent/failed counts.
const (
	metricRejected = "otelcol_exporter_prime_records_rejected"
	metricSkipped  = "otelcol_exporter_prime_records_skipped"
	metricPosts    = "otelcol_exporter_prime_metric_posts"
	metricRuns     = "otelcol_exporter_prime_runs"
)

// Signals, as the counters' "signal" attribute.
const (
	signalMetrics = "metrics"
	signalLogs    = "logs"
)

// telemetry counts loss (rejected) apart from non-loss (skipped), as the SDK
// did, so that a dashboard can alert on the first without noise from the
// second.
type telemetry struct {
	rejected metric.Int64Counter
	skipped  metric.Int64Counter
	posts    metric.Int64Counter
	runs     metric.Int64Counter
}

func newTelemetry(mp metric.MeterProvider) (*telemetry, error) {
	m := mp.Meter(scopeName)
	var t telemetry
	var err error
	if t.rejected, err = m.Int64Counter(metricRejected, metric.WithUnit("{record}"),
		metric.WithDescription("Data points and log records the prime exporter refused, by reason: they are lost.")); err != nil {
		return nil, err
	}
	if t.skipped, err = m.Int64Counter(metricSkipped, metric.WithUnit("{record}"),
		metric.WithDescription("Records the prime exporter left out on purpose, by reason (ordinary log lines, eval work, off-cadence episodes, already-sent points).")); err != nil {
		return nil, err
	}
	if t.posts, err = m.Int64Counter(metricPosts, metric.WithUnit("{request}"),
		metric.WithDescription("Step metrics posts, by outcome.")); err != nil {
		return nil, err
	}
	if t.runs, err = m.Int64Counter(metricRuns, metric.WithUnit("{run}"),
		metric.WithDescription("Runs created, attached and closed out, by event.")); err != nil {
		return nil, err
	}
	return &t, nil
}

func (t *telemetry) reject(signal, reason string, n int) {
	if n > 0 {
		t.rejected.Add(context.Background(), int64(n), metric.WithAttributes(
			attribute.String("signal", signal), attribute.String("reason", reason)))
	}
}

func (t *telemetry) skip(signal, reason string, n int) {
	if n > 0 {
		t.skipped.Add(context.Background(), int64(n), metric.WithAttributes(
			attribute.String("signal", signal), attribute.String("reason", reason)))
	}
}

func (t *telemetry) post(outcome string) {
	t.posts.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

func (t *telemetry) runEvent(event string) {
	t.runs.Add(context.Background(), 1, metric.WithAttributes(attribute.String("event", event)))
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

package primeexporter

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/primeintellect/primeexporter/internal/metadata"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/tenants"
	"github.com/primeintellect/primeexporter/internal/upload"
)

// The counters' exported names. metadata.yaml declares them and mdatagen
// builds the instruments; these copies are what tests read the counters by,
// and docs/telemetry.md §4 lists them.
const (
	metricRejected      = "otelcol_exporter_prime_records_rejected"
	metricSkipped       = "otelcol_exporter_prime_records_skipped"
	metricThrottled     = "otelcol_exporter_prime_records_throttled"
	metricCoerced       = "otelcol_exporter_prime_records_coerced"
	metricTraceBatches  = "otelcol_exporter_prime_trace_batches_uploaded"
	metricTraceDocs     = "otelcol_exporter_prime_trace_documents_uploaded"
	metricPosts         = "otelcol_exporter_prime_metric_posts"
	metricRuns          = "otelcol_exporter_prime_runs"
	metricSampleRows    = "otelcol_exporter_prime_sample_rows_uploaded"
	metricSampleObjects = "otelcol_exporter_prime_sample_objects_uploaded"
	metricSampleBytes   = "otelcol_exporter_prime_sample_bytes_uploaded"
	metricRunsOpen      = "otelcol_exporter_prime_runs_open"
	metricRunIdleMax    = "otelcol_exporter_prime_run_idle_seconds_max"
)

// telemetry counts loss (rejected) apart from non-loss (skipped), as the SDK
// did, so that a dashboard can alert on the first without noise from the
// second. Its methods set the attributes, which mdatagen's telemetry section
// documents but cannot bind to the generated instruments.
type telemetry struct {
	b *metadata.TelemetryBuilder
	// tenant, on a multi-tenant gateway, names the tenant a rejection is
	// counted under (internal/tenants' Labels); nil otherwise.
	tenant func(records int) string
}

// forTenant counts user's rejections under its label in labels ("" for
// data no tenant could be told for); the other counters are the
// exporter's.
func (t *telemetry) forTenant(user string, labels *tenants.Labels) *telemetry {
	return &telemetry{b: t.b, tenant: func(records int) string { return labels.Of(user, records) }}
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

// observeRuns makes the open-run gauges read open at each collection.
func (t *telemetry) observeRuns(open func() (int, time.Duration)) error {
	if err := t.b.RegisterExporterPrimeRunsOpenCallback(func(_ context.Context, o metric.Int64Observer) error {
		n, _ := open()
		o.Observe(int64(n))
		return nil
	}); err != nil {
		return err
	}
	return t.b.RegisterExporterPrimeRunIdleSecondsMaxCallback(func(_ context.Context, o metric.Float64Observer) error {
		_, idlest := open()
		o.Observe(idlest.Seconds())
		return nil
	})
}

// stopObserving unregisters the gauges' callbacks at the last shutdown.
func (t *telemetry) stopObserving() { t.b.Shutdown() }

// Reject counts records lost, by reason, and on a multi-tenant gateway by
// tenant.
func (t *telemetry) Reject(signal string, reason reject.Reason, n int) {
	if n <= 0 {
		return
	}
	if t.tenant == nil {
		t.bySignal(t.b.ExporterPrimeRecordsRejected, signal, reason, n)
		return
	}
	t.b.ExporterPrimeRecordsRejected.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String("signal", signal), attribute.String("reason", string(reason)), attribute.String("tenant", t.tenant(n))))
}

// throttle counts records a multi-tenant gateway refused at the receiver
// for being over their tenant's ingest limit, under the tenant's label
// (tenants.Settings.Throttled).
func (t *telemetry) throttle(signal, tenant string, n int) {
	t.b.ExporterPrimeRecordsThrottled.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String("signal", signal), attribute.String("tenant", tenant)))
}

// Skip counts records left out on purpose, by reason.
func (t *telemetry) Skip(signal string, reason reject.Reason, n int) {
	t.bySignal(t.b.ExporterPrimeRecordsSkipped, signal, reason, n)
}

// Coerce counts values taken as a Python user means them, by reason.
func (t *telemetry) Coerce(signal string, reason reject.Reason, n int) {
	t.bySignal(t.b.ExporterPrimeRecordsCoerced, signal, reason, n)
}

func (t *telemetry) bySignal(c metric.Int64Counter, signal string, reason reject.Reason, n int) {
	if n > 0 {
		c.Add(context.Background(), int64(n), metric.WithAttributes(attribute.String("signal", signal), attribute.String("reason", string(reason))))
	}
}

func (t *telemetry) Post(outcome string) {
	t.b.ExporterPrimeMetricPosts.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

func (t *telemetry) RunEvent(event string) {
	t.b.ExporterPrimeRuns.Add(context.Background(), 1, metric.WithAttributes(attribute.String("event", event)))
}

// TracesUploaded counts what Prime Traces committed.
func (t *telemetry) TracesUploaded(batches, documents int) {
	ctx := context.Background()
	if batches > 0 {
		t.b.ExporterPrimeTraceBatchesUploaded.Add(ctx, int64(batches))
	}
	if documents > 0 {
		t.b.ExporterPrimeTraceDocumentsUploaded.Add(ctx, int64(documents))
	}
}

// SamplesUploaded counts what reached the platform's sample table (or the
// offline directory): rows and bytes say how much, objects how many
// presign → PUT → confirm rounds it took.
func (t *telemetry) SamplesUploaded(rows, objects, bytes int) {
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

var (
	_ runs.Telemetry   = (*telemetry)(nil)
	_ upload.Telemetry = (*telemetry)(nil)
)

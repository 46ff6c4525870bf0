package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/primeintellect/primeexporter/internal/metadata"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// Counters counts loss (rejected) apart from non-loss (skipped), as the
// SDK did, so that a dashboard can alert on the first without noise from
// the second.
type Counters struct {
	b *metadata.TelemetryBuilder
	// labels and user, on a multi-tenant gateway, name the tenant a
	// rejection is counted under; labels is nil otherwise.
	labels *Labels
	user   string
}

// New takes the meter provider alone because the generated builder reads
// nothing else from the telemetry settings.
func New(set component.TelemetrySettings) (*Counters, error) {
	b, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	return &Counters{b: b}, nil
}

// ForTenant counts user's rejections under its label in labels ("" for
// data no tenant could be told for); the other counters are the
// exporter's.
func (c *Counters) ForTenant(user string, labels *Labels) *Counters {
	return &Counters{b: c.b, labels: labels, user: user}
}

// ObserveRuns makes the open-run gauges read open at each collection.
func (c *Counters) ObserveRuns(open func() (int, time.Duration)) error {
	if err := c.b.RegisterExporterPrimeRunsOpenCallback(func(_ context.Context, o metric.Int64Observer) error {
		n, _ := open()
		o.Observe(int64(n))
		return nil
	}); err != nil {
		return err
	}
	return c.b.RegisterExporterPrimeRunIdleSecondsMaxCallback(func(_ context.Context, o metric.Float64Observer) error {
		_, idlest := open()
		o.Observe(idlest.Seconds())
		return nil
	})
}

// StopObserving unregisters the gauges' callbacks at the last shutdown.
func (c *Counters) StopObserving() { c.b.Shutdown() }

// Reject counts records lost, by reason, and on a multi-tenant gateway by
// tenant.
func (c *Counters) Reject(signal string, reason reject.Reason, n int) {
	if n <= 0 {
		return
	}
	if c.labels == nil {
		c.bySignal(c.b.ExporterPrimeRecordsRejected, signal, reason, n)
		return
	}
	c.b.ExporterPrimeRecordsRejected.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String("signal", signal), attribute.String("reason", string(reason)), attribute.String("tenant", c.labels.Of(c.user, n))))
}

// Throttle counts records a multi-tenant gateway refused at the receiver
// for being over their tenant's ingest limit, under the tenant's label.
func (c *Counters) Throttle(signal, tenant string, n int) {
	c.b.ExporterPrimeRecordsThrottled.Add(context.Background(), int64(n), metric.WithAttributes(
		attribute.String("signal", signal), attribute.String("tenant", tenant)))
}

// Skip counts records left out on purpose, by reason.
func (c *Counters) Skip(signal string, reason reject.Reason, n int) {
	c.bySignal(c.b.ExporterPrimeRecordsSkipped, signal, reason, n)
}

// Coerce counts values taken as a Python user means them, by reason.
func (c *Counters) Coerce(signal string, reason reject.Reason, n int) {
	c.bySignal(c.b.ExporterPrimeRecordsCoerced, signal, reason, n)
}

func (c *Counters) bySignal(ctr metric.Int64Counter, signal string, reason reject.Reason, n int) {
	if n > 0 {
		ctr.Add(context.Background(), int64(n), metric.WithAttributes(attribute.String("signal", signal), attribute.String("reason", string(reason))))
	}
}

// Post counts a metrics post by outcome.
func (c *Counters) Post(outcome string) {
	c.b.ExporterPrimeMetricPosts.Add(context.Background(), 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

// RunEvent counts a run's lifecycle event (created, attached, finished…).
func (c *Counters) RunEvent(event string) {
	c.b.ExporterPrimeRuns.Add(context.Background(), 1, metric.WithAttributes(attribute.String("event", event)))
}

// TracesUploaded counts what Prime Traces committed.
func (c *Counters) TracesUploaded(batches, documents int) {
	ctx := context.Background()
	if batches > 0 {
		c.b.ExporterPrimeTraceBatchesUploaded.Add(ctx, int64(batches))
	}
	if documents > 0 {
		c.b.ExporterPrimeTraceDocumentsUploaded.Add(ctx, int64(documents))
	}
}

// SamplesUploaded counts what reached the platform's sample table (or the
// offline directory): rows and bytes say how much, objects how many
// presign → PUT → confirm rounds it took.
func (c *Counters) SamplesUploaded(rows, objects, bytes int) {
	ctx := context.Background()
	if rows > 0 {
		c.b.ExporterPrimeSampleRowsUploaded.Add(ctx, int64(rows))
	}
	if objects > 0 {
		c.b.ExporterPrimeSampleObjectsUploaded.Add(ctx, int64(objects))
	}
	if bytes > 0 {
		c.b.ExporterPrimeSampleBytesUploaded.Add(ctx, int64(bytes))
	}
}

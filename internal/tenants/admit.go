package tenants

import (
	"context"

	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// Admit is Gateway.Admit as a signal's exporter asks it: nil when the
// request may go into the sending queue, else the refusal its sender
// hears.
type Admit func(ctx context.Context, signal string, bytes, records int) error

// AdmitLogs is l asking admit before each request goes into its sending
// queue: the refusal goes back through the pipeline's processors to the
// receiver at once, and nothing of the request is queued. A nil admit (a
// single-key exporter) leaves l as it is.
func AdmitLogs(l exporter.Logs, admit Admit) exporter.Logs {
	if admit == nil || l == nil {
		return l
	}
	return admittedLogs{Logs: l, admit: admit}
}

// AdmitMetrics is AdmitLogs for metrics; a request's records are its data
// points.
func AdmitMetrics(m exporter.Metrics, admit Admit) exporter.Metrics {
	if admit == nil || m == nil {
		return m
	}
	return admittedMetrics{Metrics: m, admit: admit}
}

type admittedLogs struct {
	exporter.Logs
	admit Admit
}

func (a admittedLogs) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	if err := a.admit(ctx, "logs", (&plog.ProtoMarshaler{}).LogsSize(ld), ld.LogRecordCount()); err != nil {
		return err
	}
	return a.Logs.ConsumeLogs(ctx, ld)
}

type admittedMetrics struct {
	exporter.Metrics
	admit Admit
}

func (a admittedMetrics) ConsumeMetrics(ctx context.Context, md pmetric.Metrics) error {
	if err := a.admit(ctx, "metrics", (&pmetric.ProtoMarshaler{}).MetricsSize(md), md.DataPointCount()); err != nil {
		return err
	}
	return a.Metrics.ConsumeMetrics(ctx, md)
}

package primeexporter

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

// Event names the exporter reads (telemetry.md §3).
const (
	eventEpisode = "prime.episode"
	eventMetrics = "prime.metrics"
	eventRunEnd  = "prime.run.end"

	attrEventName = "event.name"
	attrStep      = "prime.step"
)

// eventName is the record's event_name field, or its event.name attribute
// for SDKs that predate the field.
func eventName(lr plog.LogRecord) string {
	if n := lr.EventName(); n != "" {
		return n
	}
	if v, ok := lr.Attributes().Get(attrEventName); ok {
		if s, isStr := pvalue.String(v); isStr {
			return s
		}
	}
	return ""
}

// pushLogs routes each record by event name. prime.metrics events take the
// step-metrics path; prime.run.end starts the run's close-out after the rest
// of the batch is sent; records with no known event are ignored and counted.
func (e *primeExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	g := e.registry()
	if g == nil {
		return nil
	}
	retry := plog.NewLogs()
	var errs []error
	for _, rl := range ld.ResourceLogs().All() {
		if err := e.pushResourceLogs(ctx, g, rl, retry); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return consumererror.NewLogs(firstRetryError(errs), retry)
}

func (e *primeExporter) pushResourceLogs(ctx context.Context, g *registry, rl plog.ResourceLogs, retry plog.Logs) error {
	l, err := g.acquire(ctx, rl.Resource(), signalLogs, logRecordCount(rl))
	if errors.Is(err, errSkipped) {
		return nil
	}
	if err != nil {
		rl.CopyTo(retry.ResourceLogs().AppendEmpty())
		return err
	}
	defer l.release()

	b := stepBatch{}
	var end *endRequest
	for _, sl := range rl.ScopeLogs().All() {
		for _, lr := range sl.LogRecords().All() {
			switch name := eventName(lr); name {
			case eventMetrics:
				entries, rejected := stepmetrics.FromEvent(lr.Attributes(), lr.Body())
				g.rejectPoints(l, signalLogs, rejected)
				b.add(entries)
			case eventEpisode:
				e.samples.accept(l, lr)
			case eventRunEnd:
				req, err := parseEnd(lr.Attributes())
				if err != nil {
					g.warn.Warn("end\x00"+l.id, "prime.run.end has a bad status; the run is closed out as failed", zap.String("run_id", l.id), zap.Error(err))
				}
				if end == nil {
					end = &req
				}
			default:
				g.tel.skip(signalLogs, "not_an_event", 1)
				if strings.HasPrefix(name, "prime.") {
					g.warn.Warn("event\x00"+name, "Ignored a log record with an unknown prime.* event name", zap.String("event_name", name), zap.String("run_id", l.id))
				}
			}
		}
	}

	failed, err := g.sendSteps(ctx, l, signalLogs, b)
	if err != nil {
		copyFailedMetricEvents(retry, rl, failed)
	}
	if end != nil {
		g.requestEnd(l.r, *end)
	}
	return err
}

// copyFailedMetricEvents hands back to the collector only the prime.metrics
// events of the steps whose post failed.
func copyFailedMetricEvents(dst plog.Logs, rl plog.ResourceLogs, failed map[int64]bool) {
	var out plog.ResourceLogs
	for _, sl := range rl.ScopeLogs().All() {
		var outScope plog.ScopeLogs
		for _, lr := range sl.LogRecords().All() {
			if eventName(lr) != eventMetrics {
				continue
			}
			entries, _ := stepmetrics.FromEvent(lr.Attributes(), lr.Body())
			if len(entries) == 0 || !failed[entries[0].Step] {
				continue
			}
			if out == (plog.ResourceLogs{}) {
				out = dst.ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(out.Resource())
				out.SetSchemaUrl(rl.SchemaUrl())
			}
			if outScope == (plog.ScopeLogs{}) {
				outScope = out.ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(outScope.Scope())
				outScope.SetSchemaUrl(sl.SchemaUrl())
			}
			lr.CopyTo(outScope.LogRecords().AppendEmpty())
		}
	}
}

func logRecordCount(rl plog.ResourceLogs) int {
	n := 0
	for _, sl := range rl.ScopeLogs().All() {
		n += sl.LogRecords().Len()
	}
	return n
}

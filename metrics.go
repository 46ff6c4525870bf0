package primeexporter

import (
	"context"
	"errors"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

// pushMetrics sends every resource's points as step posts. exporterhelper
// replays a whole push on a retryable error, so only what failed goes back:
// the resources whose run could not be resolved and the steps whose post
// failed. Steps that were sent are never sent again.
func (e *primeExporter) pushMetrics(ctx context.Context, md pmetric.Metrics) error {
	g := e.registry()
	if g == nil {
		return nil
	}
	opts := stepmetrics.Options{StepMetric: e.cfg.Metrics.StepMetric}
	retry := pmetric.NewMetrics()
	var errs []error
	for _, rm := range md.ResourceMetrics().All() {
		l, err := g.acquire(ctx, rm.Resource(), signalMetrics, dataPointCount(rm))
		if errors.Is(err, errSkipped) {
			continue
		}
		if err != nil {
			rm.CopyTo(retry.ResourceMetrics().AppendEmpty())
			errs = append(errs, err)
			continue
		}
		entries, rejected := stepmetrics.FromResource(rm, opts)
		g.rejectPoints(l, signalMetrics, rejected)
		b := stepBatch{}
		b.add(entries)
		failed, err := g.sendSteps(ctx, l, signalMetrics, b)
		l.release()
		if err != nil {
			stepmetrics.FilterSteps(retry, rm, opts, func(step int64) bool { return failed[step] })
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return consumererror.NewMetrics(firstRetryError(errs), retry)
}

// rejectPoints counts and logs points that cannot be sent, once per run,
// reason and metric.
func (g *registry) rejectPoints(l lease, signal string, rejected []stepmetrics.Rejection) {
	for _, rej := range rejected {
		g.tel.reject(signal, rej.Reason, 1)
		g.warn.Warn("point\x00"+l.id+"\x00"+rej.Reason+"\x00"+rej.Metric, "Rejected a value that cannot be sent",
			zap.String("run_id", l.id), zap.String("reason", rej.Reason), zap.String("metric", rej.Metric), zap.Error(rej.Err))
	}
}

// firstRetryError picks the error a partial retry carries: a permanent one
// would make exporterhelper drop the retry data, so the first retryable
// (throttling first) wins.
func firstRetryError(errs []error) error {
	for _, err := range errs {
		if !consumererror.IsPermanent(err) && isThrottle(err) {
			return err
		}
	}
	for _, err := range errs {
		if !consumererror.IsPermanent(err) {
			return err
		}
	}
	return errs[0]
}

func dataPointCount(rm pmetric.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics().All() {
		for _, m := range sm.Metrics().All() {
			switch m.Type() {
			case pmetric.MetricTypeGauge:
				n += m.Gauge().DataPoints().Len()
			case pmetric.MetricTypeSum:
				n += m.Sum().DataPoints().Len()
			case pmetric.MetricTypeHistogram:
				n += m.Histogram().DataPoints().Len()
			case pmetric.MetricTypeExponentialHistogram:
				n += m.ExponentialHistogram().DataPoints().Len()
			case pmetric.MetricTypeSummary:
				n += m.Summary().DataPoints().Len()
			}
		}
	}
	return n
}

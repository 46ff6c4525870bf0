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
// failed. Steps that were sent are never sent again. Once the platform is
// down, the rest of the push goes back unsent: a batch holds many
// resources of one run, and sending their later steps would put the run's
// steps out of order.
func (e *primeExporter) pushMetrics(ctx context.Context, md pmetric.Metrics) error {
	g := e.registry()
	if g == nil {
		return nil
	}
	opts := stepmetrics.Options{StepMetric: e.cfg.Metrics.StepMetric}
	retry := pmetric.NewMetrics()
	var errs []error
	var down error // see platformDown
	for _, rm := range md.ResourceMetrics().All() {
		before := retry.ResourceMetrics().Len()
		err := down
		if down != nil {
			rm.CopyTo(retry.ResourceMetrics().AppendEmpty())
		} else {
			err = g.pushResourceMetrics(ctx, rm, opts, retry)
		}
		if err != nil {
			errs = append(errs, err)
			if platformDown(err) {
				down = err
			}
		}
		g.markHandedBack(rm.Resource(), metricResourcesFrom(retry, before))
		// Settled only now: until this push is done with it, its data is
		// still owed to a close-out waiting for the run's retries.
		g.handBacks.settle(rm.Resource())
	}
	if len(errs) == 0 {
		return nil
	}
	return consumererror.NewMetrics(firstRetryError(errs), retry)
}

// pushResourceMetrics sends one resource's steps, appending to retry what
// failed.
func (g *registry) pushResourceMetrics(ctx context.Context, rm pmetric.ResourceMetrics, opts stepmetrics.Options, retry pmetric.Metrics) error {
	l, err := g.acquire(ctx, rm.Resource(), signalMetrics, dataPointCount(rm))
	if errors.Is(err, errSkipped) {
		return nil
	}
	if err != nil {
		rm.CopyTo(retry.ResourceMetrics().AppendEmpty())
		return err
	}
	entries, rejected := stepmetrics.FromResource(rm, opts)
	g.rejectPoints(l, signalMetrics, rejected)
	b := stepBatch{}
	b.add(entries)
	failed, err := g.sendSteps(ctx, l, signalMetrics, b)
	l.release()
	if err != nil {
		stepmetrics.FilterSteps(retry, rm, opts, func(step int64) bool { return failed[step] })
	}
	return err
}

// rejectPoints counts and logs points that cannot be sent: one warning per
// run and reason, naming the first metric; the rest go to debug.
func (g *registry) rejectPoints(l lease, signal string, rejected []stepmetrics.Rejection) {
	for _, rej := range rejected {
		g.tel.reject(signal, rej.Reason, 1)
		g.warn.Warn("point\x00"+l.id+"\x00"+rej.Reason, "Rejected a value that cannot be sent",
			zap.String("run_id", l.id), zap.String("reason", rej.Reason), zap.String("metric", rej.Metric), zap.Error(rej.Err))
	}
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

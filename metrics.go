package primeexporter

import (
	"context"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/ambient"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

// pushMetrics sends every resource's points as row posts (a step's, or a
// time's for points with no step). exporterhelper replays a whole push on
// a retryable error, so only what failed goes back: the resources whose run
// could not be resolved and the rows whose post failed. Steps that were
// sent are never sent again. Once the platform is down, the rest of the
// push goes back unsent: a batch holds many resources of one run, and
// sending their later steps would put the run's steps out of order.
func (e *primeExporter) pushMetrics(ctx context.Context, md pmetric.Metrics) error {
	b, err := e.backendFor(ctx, reject.SignalMetrics, md.DataPointCount())
	if b == nil {
		return err
	}
	opts := stepmetrics.Options{StepMetric: e.cfg.Metrics.StepMetric}
	retry := pmetric.NewMetrics()
	var ambientRMs []pmetric.ResourceMetrics
	for _, rm := range md.ResourceMetrics().All() {
		if ambient.Is(rm) {
			ambientRMs = append(ambientRMs, rm)
		}
	}
	errs := pushEach(b.reg, md.ResourceMetrics(), retry.ResourceMetrics(), pmetric.NewMetrics, pmetric.Metrics.ResourceMetrics, nil, func(rms []pmetric.ResourceMetrics, retry pmetric.Metrics) error {
		if len(ambientRMs) > 0 && ambient.Is(rms[0]) {
			return nil // after the trainers' data, which may open their runs
		}
		return e.pushResourceMetrics(ctx, b, rms[0], opts, retry)
	})
	if len(ambientRMs) > 0 {
		errs = append(errs, e.pushAmbient(ctx, b, ambientRMs, retry)...)
	}
	if len(errs) == 0 {
		return nil
	}
	return consumererror.NewMetrics(platform.FirstRetryError(errs), retry)
}

// pushResourceMetrics sends one resource's rows, appending to retry what
// failed.
func (e *primeExporter) pushResourceMetrics(ctx context.Context, b *backend, rm pmetric.ResourceMetrics, opts stepmetrics.Options, retry pmetric.Metrics) error {
	l, ok, err := acquire(ctx, b.reg, []pmetric.ResourceMetrics{rm}, retry.ResourceMetrics(), reject.SignalMetrics, dataPointCount(rm))
	if !ok {
		return err
	}
	defer l.Release()
	learnPod(b, rm.Resource())
	if l.IsEval() {
		e.pushEvalMetrics(b, l, rm, opts)
		return nil
	}
	return e.postPoints(ctx, b, l, rm, opts, retry)
}

// stepPoster is what posting a run's metric rows needs of its lease
// (runs.Lease is one): the run's id, for log lines, and the posts.
type stepPoster interface {
	ID() string
	PostSteps(ctx context.Context, signal string, b runs.StepBatch) (map[stepmetrics.Row]bool, error)
}

// postPoints posts a training run's points as rows, appending to retry the
// points of the rows that failed.
func (e *primeExporter) postPoints(ctx context.Context, b *backend, p stepPoster, rm pmetric.ResourceMetrics, opts stepmetrics.Options, retry pmetric.Metrics) error {
	entries, rejected, coerced := stepmetrics.FromResource(rm, opts)
	e.rejectPoints(b, p, reject.SignalMetrics, rejected)
	e.coercePoints(reject.SignalMetrics, coerced)
	batch := runs.StepBatch{}
	batch.Add(entries)
	failed, err := p.PostSteps(ctx, reject.SignalMetrics, batch)
	if err != nil {
		stepmetrics.FilterRows(retry, rm, opts, func(row stepmetrics.Row) bool { return failed[row] })
	}
	return err
}

// rejectPoints counts and logs points that cannot be sent: one warning per
// run and reason, naming the first metric; the rest go to debug.
func (e *primeExporter) rejectPoints(b *backend, run interface{ ID() string }, signal string, rejected []*reject.Rejection) {
	for _, rej := range rejected {
		e.tel.Reject(signal, rej.Reason, 1)
		b.warn.Warn("point\x00"+run.ID()+"\x00"+string(rej.Reason), "Rejected a value that cannot be sent",
			zap.String("run_id", run.ID()), zap.String("reason", string(rej.Reason)), zap.String("metric", rej.Field), zap.Error(rej.Err))
	}
}

// coercePoints counts the values that became entries only by being read as
// a Python user means them, by reason, so a trainer can find and fix them.
// They are not logged: nothing was lost, and the counter already names the
// reason.
func (e *primeExporter) coercePoints(signal string, coerced []reject.Reason) {
	if len(coerced) == 0 {
		return
	}
	byReason := map[reject.Reason]int{}
	for _, reason := range coerced {
		byReason[reason]++
	}
	for reason, n := range byReason {
		e.tel.Coerce(signal, reason, n)
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

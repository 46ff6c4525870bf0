package stepmetrics

import (
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// FilterRows appends to dst a copy of rm holding only the data points whose
// row satisfies keep, resolved exactly as FromResource resolves it (a
// prime.step number string included; a point with no step at all in the
// row of its timestamp). It hands only the failed rows back to the
// collector's retry (consumererror.NewMetrics), so a retry does not resend
// the rows that went through. Points are copied as they came, a string step
// still a string and a timestamp unchanged: the retry is the same input,
// mapped the same way, so a time row comes back as the same row.
//
// A step metric point's own step is its value, so the step gauge points of a
// kept step are kept too and the retried points still find their step.
// Points that FromResource turns into nothing but rejections or nothing at
// all (neither a step nor a time, a bad step, no recorded value) are
// dropped: retrying cannot fix them. Scopes and metrics left empty are not
// copied; if nothing is kept, nothing is appended.
func FilterRows(dst pmetric.Metrics, rm pmetric.ResourceMetrics, opts Options, keep func(Row) bool) {
	steps := newStepResolver(rm, opts)
	out := pmetric.NewResourceMetrics()
	sms := rm.ScopeMetrics()
	for i := 0; i < sms.Len(); i++ {
		sm := sms.At(i)
		kept := pmetric.NewScopeMetrics()
		ms := sm.Metrics()
		for j := 0; j < ms.Len(); j++ {
			m := pmetric.NewMetric()
			ms.At(j).CopyTo(m)
			if steps.filter(m, keep) > 0 {
				m.MoveTo(kept.Metrics().AppendEmpty())
			}
		}
		if kept.Metrics().Len() == 0 {
			continue
		}
		sm.Scope().CopyTo(kept.Scope())
		kept.SetSchemaUrl(sm.SchemaUrl())
		kept.MoveTo(out.ScopeMetrics().AppendEmpty())
	}
	if out.ScopeMetrics().Len() == 0 {
		return
	}
	rm.Resource().CopyTo(out.Resource())
	out.SetSchemaUrl(rm.SchemaUrl())
	out.MoveTo(dst.ResourceMetrics().AppendEmpty())
}

// filter removes from m the points whose row is unknown or not kept and
// returns how many are left.
func (r stepResolver) filter(m pmetric.Metric, keep func(Row) bool) int {
	name := m.Name()
	wanted := func(dp point) bool {
		if dp.Flags().NoRecordedValue() {
			return false
		}
		row, _, rej := r.row(name, dp)
		return rej == nil && keep(row)
	}
	switch m.Type() {
	case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
		own := r.isStepMetric(m)
		dps := numberPoints(m)
		dps.RemoveIf(func(dp pmetric.NumberDataPoint) bool {
			v, ok := numberValue(dp)
			if !ok {
				return true
			}
			if !own {
				return !wanted(dp)
			}
			step, rej := r.ownStep(name, v)
			return rej != nil || !keep(Row{Step: step})
		})
		return dps.Len()
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		dps.RemoveIf(func(dp pmetric.HistogramDataPoint) bool { return !wanted(dp) })
		return dps.Len()
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		dps.RemoveIf(func(dp pmetric.ExponentialHistogramDataPoint) bool { return !wanted(dp) })
		return dps.Len()
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		dps.RemoveIf(func(dp pmetric.SummaryDataPoint) bool { return !wanted(dp) })
		return dps.Len()
	}
	return 0
}

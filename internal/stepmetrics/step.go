package stepmetrics

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// stepAttribute is the data-point (and prime.metrics event) attribute that
// names the step (telemetry.md §2, §3).
const stepAttribute = "prime.step"

// point is what every OTLP data point type shares and step resolution reads.
type point interface {
	Attributes() pcommon.Map
	Timestamp() pcommon.Timestamp
	Flags() pmetric.DataPointFlags
}

// reported is what the step metric said at one timestamp.
type reported struct {
	step     int64
	integral bool // every point at this timestamp held an integral number
	conflict bool // points at this timestamp disagree
}

// stepResolver resolves the row (step, or time) of every data point of one
// resource. It is built from the whole resource first because the step
// metric may come after the metrics that lean on it.
type stepResolver struct {
	metric   string
	byTime   map[pcommon.Timestamp]reported
	stepless bool
}

func newStepResolver(rm pmetric.ResourceMetrics, opts Options) stepResolver {
	r := stepResolver{metric: opts.StepMetric, byTime: map[pcommon.Timestamp]reported{}, stepless: opts.Stepless}
	if r.stepless {
		r.metric = ""
	}
	if r.metric == "" {
		return r
	}
	sms := rm.ScopeMetrics()
	for i := 0; i < sms.Len(); i++ {
		ms := sms.At(i).Metrics()
		for j := 0; j < ms.Len(); j++ {
			m := ms.At(j)
			if !r.isStepMetric(m) {
				continue
			}
			dps := numberPoints(m)
			for k := 0; k < dps.Len(); k++ {
				r.record(dps.At(k))
			}
		}
	}
	return r
}

// record notes one step-metric point. A zero timestamp means "not set" and
// never matches: pairing two unknown times would invent a relation.
func (r stepResolver) record(dp pmetric.NumberDataPoint) {
	v, ok := numberValue(dp)
	if !ok || dp.Timestamp() == 0 {
		return
	}
	step, integral := pvalue.Int(v)
	prev, seen := r.byTime[dp.Timestamp()]
	switch {
	case !seen:
		r.byTime[dp.Timestamp()] = reported{step: step, integral: integral}
	case !prev.integral || !integral:
		prev.integral = false
		r.byTime[dp.Timestamp()] = prev
	case prev.step != step:
		prev.conflict = true
		r.byTime[dp.Timestamp()] = prev
	}
}

// isStepMetric tells whether m is the gauge or sum that carries steps; a
// histogram of the same name is an ordinary metric.
func (r stepResolver) isStepMetric(m pmetric.Metric) bool {
	if r.metric == "" || m.Name() != r.metric {
		return false
	}
	return m.Type() == pmetric.MetricTypeGauge || m.Type() == pmetric.MetricTypeSum
}

// ownStep is the step of one of the step metric's own points: its value,
// whatever its attributes say, since that value is what defines the step for
// every other point at its timestamp.
func (r stepResolver) ownStep(name string, v pcommon.Value) (int64, *reject.Rejection) {
	if step, ok := pvalue.Int(v); ok {
		return step, nil
	}
	return 0, reject.New(reject.BadStep, name, "metric %q: value %s is not an integral step", name, plainValue(v))
}

// row resolves the row of an ordinary point: the step of its prime.step
// attribute, else the step metric's at the same timestamp, else, when the
// point has neither, the row of its timestamp. A step that is there but
// bad is never passed over for the time: that would hide a trainer's bug.
// how is the coercion the attribute needed (readStep), "" for none.
func (r stepResolver) row(name string, dp point) (row Row, how reject.Reason, rej *reject.Rejection) {
	if r.stepless {
		return Row{}, "", nil
	}
	if v, ok := dp.Attributes().Get(stepAttribute); ok {
		if step, how, ok := readStep(v); ok {
			return Row{Step: step}, how, nil
		}
		return Row{}, "", reject.New(reject.BadStep, name, "metric %q: attribute %s must be an int, got %s", name, stepAttribute, describe(v))
	}
	if dp.Timestamp() == 0 {
		return Row{}, "", reject.New(reject.NoStep, name, "metric %q: data point has neither a %s attribute nor a timestamp", name, stepAttribute)
	}
	got, ok := r.byTime[dp.Timestamp()]
	switch {
	case !ok:
		return Row{Time: dp.Timestamp()}, "", nil
	case !got.integral:
		return Row{}, "", reject.New(reject.BadStep, name, "metric %q: the %q gauge at its timestamp is not an integral step", name, r.metric)
	case got.conflict:
		return Row{}, "", reject.New(reject.BadStep, name, "metric %q: the %q gauge reports different steps at its timestamp", name, r.metric)
	}
	return Row{Step: got.step}, "", nil
}

// describe names a value's type for an error, with the value itself when it
// is a short number (so "double 3.5" tells why an integral step was wanted).
func describe(v pcommon.Value) string {
	switch v.Type() {
	case pcommon.ValueTypeDouble, pcommon.ValueTypeInt, pcommon.ValueTypeBool:
		return pvalue.TypeName(v) + " " + plainValue(v)
	}
	return pvalue.TypeName(v)
}

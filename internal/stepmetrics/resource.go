package stepmetrics

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// FromResource maps every data point of one resource's metrics (all scope
// metrics) to entries, in metric order then point order, each with the
// point's timestamp as its Time. Points that cannot be sent come back as
// rejections, whose Field is the metric name (or, for a non-finite value,
// the entry key); points with no recorded value produce nothing at all.
// coerced holds one reason per point that gave entries only because its
// prime.step was a number string (reject.NumberString), in point order,
// for the caller to count.
func FromResource(rm pmetric.ResourceMetrics, opts Options) (entries []Entry, rejected []*reject.Rejection, coerced []reject.Reason) {
	c := collector{steps: newStepResolver(rm, opts)}
	sms := rm.ScopeMetrics()
	for i := 0; i < sms.Len(); i++ {
		ms := sms.At(i).Metrics()
		for j := 0; j < ms.Len(); j++ {
			c.metric(ms.At(j))
		}
	}
	return c.entries, c.rejected, c.coerced
}

// collector accumulates the entries, rejections and coercions of one
// resource.
type collector struct {
	steps    stepResolver
	entries  []Entry
	rejected []*reject.Rejection
	coerced  []reject.Reason
}

func (c *collector) metric(m pmetric.Metric) {
	name := m.Name()
	switch m.Type() {
	case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
		own := c.steps.isStepMetric(m)
		dps := numberPoints(m)
		for i := 0; i < dps.Len(); i++ {
			c.number(name, own, dps.At(i))
		}
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			c.distribution(name, dp, distribution{
				count: dp.Count(), sum: dp.Sum(), hasSum: dp.HasSum(),
				min: dp.Min(), hasMin: dp.HasMin(), max: dp.Max(), hasMax: dp.HasMax(),
				percentiles: explicitPercentiles(dp),
			})
		}
	case pmetric.MetricTypeExponentialHistogram:
		dps := m.ExponentialHistogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			c.distribution(name, dp, distribution{
				count: dp.Count(), sum: dp.Sum(), hasSum: dp.HasSum(),
				min: dp.Min(), hasMin: dp.HasMin(), max: dp.Max(), hasMax: dp.HasMax(),
				percentiles: exponentialPercentiles(dp),
			})
		}
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			c.summary(name, dps.At(i))
		}
	}
}

func (c *collector) number(name string, own bool, dp pmetric.NumberDataPoint) {
	v, ok := numberValue(dp)
	if !ok {
		return
	}
	var row Row
	var how reject.Reason
	var rej *reject.Rejection
	if own {
		row.Step, rej = c.steps.ownStep(name, v)
	} else {
		row, how, rej = c.steps.row(name, dp)
	}
	if rej != nil {
		c.rejected = append(c.rejected, rej)
		return
	}
	before := len(c.entries)
	f, _ := pvalue.Float(v)
	c.add(rowEntry(row, dp.Timestamp()), FormatKey(name, dp.Attributes()), f)
	c.coercedIf(how, before)
}

// distribution is what histograms and exponential histograms share.
type distribution struct {
	count                  uint64
	sum, min, max          float64
	hasSum, hasMin, hasMax bool
	percentiles            percentiles
}

func (c *collector) distribution(name string, dp point, d distribution) {
	base, how, ok := c.recordedRow(name, dp)
	if !ok {
		return
	}
	before := len(c.entries)
	key := FormatKey(name, dp.Attributes())
	c.add(base, key+"/count", float64(d.count))
	if d.hasSum {
		c.add(base, key+"/sum", d.sum)
		// The mean is what a training curve plots; a trainer on a metric SDK
		// can only record a histogram, so it is derived here rather than
		// asking for a second instrument.
		if d.count > 0 {
			c.add(base, key+"/mean", d.sum/float64(d.count))
		}
	}
	if d.hasMin {
		c.add(base, key+"/min", d.min)
	}
	if d.hasMax {
		c.add(base, key+"/max", d.max)
	}
	if d.percentiles.ok {
		for i, p := range histogramPercentiles() {
			c.add(base, key+p.suffix, d.clamp(d.percentiles.value[i]))
		}
	}
	c.coercedIf(how, before)
}

func (c *collector) summary(name string, dp pmetric.SummaryDataPoint) {
	base, how, ok := c.recordedRow(name, dp)
	if !ok {
		return
	}
	before := len(c.entries)
	key := FormatKey(name, dp.Attributes())
	c.add(base, key+"/count", float64(dp.Count()))
	c.add(base, key+"/sum", dp.Sum())
	qs := dp.QuantileValues()
	for i := 0; i < qs.Len(); i++ {
		c.add(base, key+"/q"+formatFloat(qs.At(i).Quantile()), qs.At(i).Value())
	}
	c.coercedIf(how, before)
}

// recordedRow resolves a point's row, recording a rejection when it has
// none, and gives the Entry its values are added to; a point flagged with
// no recorded value is skipped silently.
func (c *collector) recordedRow(name string, dp point) (Entry, reject.Reason, bool) {
	if dp.Flags().NoRecordedValue() {
		return Entry{}, "", false
	}
	row, how, rej := c.steps.row(name, dp)
	if rej != nil {
		c.rejected = append(c.rejected, rej)
		return Entry{}, "", false
	}
	return rowEntry(row, dp.Timestamp()), how, true
}

// rowEntry is an entry of row, recorded at t, with no key or value yet.
func rowEntry(row Row, t pcommon.Timestamp) Entry {
	return Entry{Step: row.Step, Time: t, TimeKeyed: row.TimeKeyed()}
}

// coercedIf notes the coercion how (if any) of a point that gave entries
// past index before. A point whose every value was rejected was not
// delivered by coercing its step, so it counts as rejected alone, never as
// both.
func (c *collector) coercedIf(how reject.Reason, before int) {
	if how != "" && len(c.entries) > before {
		c.coerced = append(c.coerced, how)
	}
}

// add appends base with key and value v, or a rejection when v is NaN or
// ±Inf.
func (c *collector) add(base Entry, key string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.rejected = append(c.rejected, nonFinite(key, v))
		return
	}
	base.Key, base.Value = key, v
	c.entries = append(c.entries, base)
}

func nonFinite(key string, v float64) *reject.Rejection {
	return reject.New(reject.NonFinite, key, "metric %q: value %s is not finite and is not sent", key, formatFloat(v))
}

// numberPoints are the points of a gauge or a sum.
func numberPoints(m pmetric.Metric) pmetric.NumberDataPointSlice {
	if m.Type() == pmetric.MetricTypeSum {
		return m.Sum().DataPoints()
	}
	return m.Gauge().DataPoints()
}

// numberValue is a gauge or sum point's value; false when the point holds
// none (empty, or flagged as having no recorded value).
func numberValue(dp pmetric.NumberDataPoint) (pcommon.Value, bool) {
	if dp.Flags().NoRecordedValue() {
		return pcommon.Value{}, false
	}
	switch dp.ValueType() {
	case pmetric.NumberDataPointValueTypeInt:
		return pcommon.NewValueInt(dp.IntValue()), true
	case pmetric.NumberDataPointValueTypeDouble:
		return pcommon.NewValueDouble(dp.DoubleValue()), true
	}
	return pcommon.Value{}, false
}

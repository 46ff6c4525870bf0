package ambient

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

// Resource attributes Translate reads.
const (
	attrHost        = "host.name"
	attrInstance    = "service.instance.id"
	attrJob         = "service.name"
	labelDCGMHost   = "Hostname"
	attrKeyHost     = "host"
	attrProcessPID  = "process.pid"
	attrProcessName = "process.executable.name"
)

// Result is one ambient resource, named.
type Result struct {
	// Metrics holds the resource with its metrics named (one scope,
	// ScopeName); Points counts their points, 0 when nothing was left.
	Metrics pmetric.Metrics
	Points  int
	// FailedScrapes names the targets whose scrape failed (up = 0).
	FailedScrapes []string
}

// Translate names an ambient resource's metrics by the table in names.go
// and aligns its points to one time per scrape: the row of key in rows
// (nil: this resource's alone).
func Translate(rm pmetric.ResourceMetrics, rows *Rows, key string) Result {
	out := pmetric.NewMetrics()
	orm := out.ResourceMetrics().AppendEmpty()
	rm.Resource().CopyTo(orm.Resource())
	osm := orm.ScopeMetrics().AppendEmpty()
	osm.Scope().SetName(ScopeName)

	t := translator{
		host:    hostOf(rm.Resource()),
		align:   alignTimes(rm, rows, key),
		process: processOf(rm.Resource()),
		accs:    map[string]*acc{},
		metrics: map[string]pmetric.Metric{},
		out:     osm.Metrics(),
	}
	var failed []string
	for _, sm := range rm.ScopeMetrics().All() {
		if sm.Scope().Name() == ScopeName {
			// Named already: a retry's data.
			for _, m := range sm.Metrics().All() {
				m.CopyTo(osm.Metrics().AppendEmpty())
			}
			continue
		}
		for _, m := range sm.Metrics().All() {
			if scrapeMeta(m.Name()) {
				if m.Name() == "up" && scrapeDown(m) {
					failed = append(failed, targetOf(rm.Resource()))
				}
				continue
			}
			t.metric(m)
		}
	}
	t.emit()
	return Result{Metrics: out, Points: out.DataPointCount(), FailedScrapes: failed}
}

// hostOf is the resource's host.name, "" when it has none.
func hostOf(res pcommon.Resource) string {
	if v, ok := res.Attributes().Get(attrHost); ok {
		return v.AsString()
	}
	return ""
}

// processOf is a process resource's pid and executable name, as key
// attributes: hostmetrics gives each process a resource of its own.
func processOf(res pcommon.Resource) [][2]string {
	var out [][2]string
	for _, a := range [...][2]string{{attrProcessPID, "pid"}, {attrProcessName, "process"}} {
		if v, ok := res.Attributes().Get(a[0]); ok {
			out = append(out, [2]string{a[1], v.AsString()})
		}
	}
	return out
}

// targetOf names a scrape target as the prometheus receiver describes it.
func targetOf(res pcommon.Resource) string {
	job, _ := res.Attributes().Get(attrJob)
	inst, _ := res.Attributes().Get(attrInstance)
	return job.AsString() + "/" + inst.AsString()
}

func scrapeDown(m pmetric.Metric) bool {
	pts := numberPoints(m)
	for _, dp := range pts.All() {
		if v, ok := number(dp); ok && v == 0 {
			return true
		}
	}
	return false
}

// acc is one output gauge point being summed.
type acc struct {
	name  string
	attrs pcommon.Map
	time  pcommon.Timestamp
	sum   float64
	over  map[string]bool
	mean  bool
	key   string // attrs and time, to find a derived key's partner
	shown bool
}

type translator struct {
	host    string
	process [][2]string // the process's pid and name, from its resource
	align   func(pcommon.Timestamp) pcommon.Timestamp
	accs    map[string]*acc
	order   []*acc
	metrics map[string]pmetric.Metric
	out     pmetric.MetricSlice
}

func (t *translator) metric(m pmetric.Metric) {
	r, known := recipes[m.Name()]
	switch m.Type() {
	case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
		for _, dp := range numberPoints(m).All() {
			v, ok := number(dp)
			if !ok {
				continue
			}
			if !known {
				t.add(m.Name(), keptAll(dp.Attributes()), dp.Attributes(), dp.Timestamp(), v, "", true)
				continue
			}
			name, ok := r.name(dp.Attributes(), m.Type() == pmetric.MetricTypeGauge)
			if !ok {
				continue
			}
			t.add(name, r.keep, dp.Attributes(), dp.Timestamp(), v*r.scale, r.meanOver, !r.hidden)
		}
	case pmetric.MetricTypeHistogram:
		name, keep := m.Name(), keptAll
		if known {
			name, keep = r.keys[""], func(pcommon.Map) []string { return r.keep }
		}
		dst := t.named(name, pmetric.MetricTypeHistogram)
		dst.Histogram().SetAggregationTemporality(m.Histogram().AggregationTemporality())
		for _, dp := range m.Histogram().DataPoints().All() {
			p := dst.Histogram().DataPoints().AppendEmpty()
			dp.CopyTo(p)
			t.relabel(p.Attributes(), keep(dp.Attributes()), dp.Attributes())
			p.SetTimestamp(t.align(dp.Timestamp()))
		}
	case pmetric.MetricTypeExponentialHistogram:
		dst := t.named(m.Name(), pmetric.MetricTypeExponentialHistogram)
		dst.ExponentialHistogram().SetAggregationTemporality(m.ExponentialHistogram().AggregationTemporality())
		for _, dp := range m.ExponentialHistogram().DataPoints().All() {
			p := dst.ExponentialHistogram().DataPoints().AppendEmpty()
			dp.CopyTo(p)
			t.relabel(p.Attributes(), keptAll(dp.Attributes()), dp.Attributes())
			p.SetTimestamp(t.align(dp.Timestamp()))
		}
	case pmetric.MetricTypeSummary:
		dst := t.named(m.Name(), pmetric.MetricTypeSummary)
		for _, dp := range m.Summary().DataPoints().All() {
			p := dst.Summary().DataPoints().AppendEmpty()
			dp.CopyTo(p)
			t.relabel(p.Attributes(), keptAll(dp.Attributes()), dp.Attributes())
			p.SetTimestamp(t.align(dp.Timestamp()))
		}
	}
}

// name is a number point's key under the recipe, false when the recipe
// leaves the point out. rate says the point is a gauge: a counter's rate.
func (r recipe) name(attrs pcommon.Map, rate bool) (string, bool) {
	for k, want := range r.only {
		if v, ok := attrs.Get(k); !ok || v.AsString() != want {
			return "", false
		}
	}
	for k, skip := range r.not {
		if v, ok := attrs.Get(k); ok && v.AsString() == skip {
			return "", false
		}
	}
	by := ""
	if r.by != "" {
		v, ok := attrs.Get(r.by)
		if !ok {
			return "", false
		}
		by = v.AsString()
	}
	name, ok := r.keys[by]
	if ok && r.counter && rate {
		name += "_per_s"
	}
	return name, ok
}

// keptAll keeps every attribute but the dropped labels.
func keptAll(attrs pcommon.Map) []string {
	var keep []string
	for k := range attrs.All() {
		if !droppedLabels[k] {
			keep = append(keep, k)
		}
	}
	return keep
}

// relabel sets dst to src's attributes in keep, plus the host.
func (t *translator) relabel(dst pcommon.Map, keep []string, src pcommon.Map) {
	kept := pcommon.NewMap()
	for _, k := range keep {
		if v, ok := src.Get(k); ok {
			v.CopyTo(kept.PutEmpty(k))
		}
	}
	if host := t.pointHost(src); host != "" {
		kept.PutStr(attrKeyHost, host)
	}
	for _, kv := range t.process {
		kept.PutStr(kv[0], kv[1])
	}
	kept.MoveTo(dst)
}

func (t *translator) pointHost(attrs pcommon.Map) string {
	if t.host != "" {
		return t.host
	}
	if v, ok := attrs.Get(labelDCGMHost); ok {
		return v.AsString()
	}
	return ""
}

// add sums one value into its output point.
func (t *translator) add(name string, keep []string, src pcommon.Map, ts pcommon.Timestamp, v float64, meanOver string, shown bool) {
	attrs := pcommon.NewMap()
	t.relabel(attrs, keep, src)
	at := t.align(ts)
	group := stepmetrics.FormatKey("", attrs) + "\x00" + at.String()
	k := name + "\x00" + group
	a, ok := t.accs[k]
	if !ok {
		a = &acc{name: name, attrs: attrs, time: at, over: map[string]bool{}, mean: meanOver != "", key: group, shown: shown}
		t.accs[k] = a
		t.order = append(t.order, a)
	}
	a.sum += v
	if meanOver != "" {
		if o, ok := src.Get(meanOver); ok {
			a.over[o.AsString()] = true
		}
	}
}

// named is the output metric of a name and type, made on first use.
func (t *translator) named(name string, typ pmetric.MetricType) pmetric.Metric {
	k := name + "\x00" + typ.String()
	if m, ok := t.metrics[k]; ok {
		return m
	}
	m := t.out.AppendEmpty()
	m.SetName(Prefix + name)
	switch typ {
	case pmetric.MetricTypeGauge:
		m.SetEmptyGauge()
	case pmetric.MetricTypeHistogram:
		m.SetEmptyHistogram()
	case pmetric.MetricTypeExponentialHistogram:
		m.SetEmptyExponentialHistogram()
	case pmetric.MetricTypeSummary:
		m.SetEmptySummary()
	}
	t.metrics[k] = m
	return m
}

// emit writes the summed points, and the keys derived from them.
func (t *translator) emit() {
	for _, a := range t.order {
		if a.shown {
			t.point(a.name, a.attrs, a.time, a.value())
		}
	}
	t.derive()
}

func (a *acc) value() float64 {
	if a.mean && len(a.over) > 0 {
		return a.sum / float64(len(a.over))
	}
	return a.sum
}

func (t *translator) point(name string, attrs pcommon.Map, at pcommon.Timestamp, v float64) {
	dp := t.named(name, pmetric.MetricTypeGauge).Gauge().DataPoints().AppendEmpty()
	attrs.CopyTo(dp.Attributes())
	dp.SetTimestamp(at)
	dp.SetDoubleValue(v)
}

// derive adds a GPU's memory total and share, from dcgm-exporter's used and
// free framebuffer memory of the same GPU and scrape.
func (t *translator) derive() {
	for _, used := range t.order {
		if used.name != "gpu.memory_used_mib" {
			continue
		}
		free, ok := t.accs["gpu.memory_free_mib\x00"+used.key]
		if !ok {
			continue
		}
		total := used.value() + free.value()
		t.point("gpu.memory_total_mib", used.attrs, used.time, total)
		if total > 0 {
			t.point("gpu.memory_percent", used.attrs, used.time, 100*used.value()/total)
		}
	}
}

func numberPoints(m pmetric.Metric) pmetric.NumberDataPointSlice {
	if m.Type() == pmetric.MetricTypeSum {
		return m.Sum().DataPoints()
	}
	if m.Type() == pmetric.MetricTypeGauge {
		return m.Gauge().DataPoints()
	}
	return pmetric.NewNumberDataPointSlice()
}

// number is a point's value; false for a point with no recorded value.
func number(dp pmetric.NumberDataPoint) (float64, bool) {
	if dp.Flags().NoRecordedValue() {
		return 0, false
	}
	switch dp.ValueType() {
	case pmetric.NumberDataPointValueTypeInt:
		return float64(dp.IntValue()), true
	case pmetric.NumberDataPointValueTypeDouble:
		return dp.DoubleValue(), true
	}
	return 0, false
}

func eachTime(m pmetric.Metric, f func(pcommon.Timestamp)) {
	switch m.Type() {
	case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
		for _, dp := range numberPoints(m).All() {
			f(dp.Timestamp())
		}
	case pmetric.MetricTypeHistogram:
		for _, dp := range m.Histogram().DataPoints().All() {
			f(dp.Timestamp())
		}
	case pmetric.MetricTypeExponentialHistogram:
		for _, dp := range m.ExponentialHistogram().DataPoints().All() {
			f(dp.Timestamp())
		}
	case pmetric.MetricTypeSummary:
		for _, dp := range m.Summary().DataPoints().All() {
			f(dp.Timestamp())
		}
	}
}

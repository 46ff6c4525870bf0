package ambient

import (
	"maps"
	"slices"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

const (
	hostScope = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/hostmetricsreceiver/internal/scraper/cpuscraper"
	promScope = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	t0        = pcommon.Timestamp(1_767_225_600_000_000_000)
)

// resource is a ResourceMetrics of one scope, with resource attributes.
func resource(scope string, attrs map[string]string) (pmetric.Metrics, pmetric.MetricSlice) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		rm.Resource().Attributes().PutStr(k, attrs[k])
	}
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(scope)
	return md, sm.Metrics()
}

// gauge appends a gauge (or, with sum, a cumulative monotonic sum) point.
func point(ms pmetric.MetricSlice, name string, sum bool, ts pcommon.Timestamp, v float64, attrs ...string) {
	var m pmetric.Metric
	for _, x := range ms.All() {
		if x.Name() == name {
			m = x
		}
	}
	if m == (pmetric.Metric{}) {
		m = ms.AppendEmpty()
		m.SetName(name)
		if sum {
			m.SetEmptySum().SetIsMonotonic(true)
			m.Sum().SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
		} else {
			m.SetEmptyGauge()
		}
	}
	var dp pmetric.NumberDataPoint
	if sum {
		dp = m.Sum().DataPoints().AppendEmpty()
	} else {
		dp = m.Gauge().DataPoints().AppendEmpty()
	}
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(v)
	for i := 0; i+1 < len(attrs); i += 2 {
		dp.Attributes().PutStr(attrs[i], attrs[i+1])
	}
}

// entries translates md's one resource and reads it as the exporter does:
// key → value, with the rows' times.
func entries(t *testing.T, md pmetric.Metrics) (map[string]float64, map[pcommon.Timestamp]bool, Result) {
	t.Helper()
	res := Translate(md.ResourceMetrics().At(0), nil, "")
	es, rejected, _ := stepmetrics.FromResource(res.Metrics.ResourceMetrics().At(0), stepmetrics.Options{})
	if len(rejected) > 0 {
		t.Fatalf("rejected: %v", rejected[0])
	}
	out, times := map[string]float64{}, map[pcommon.Timestamp]bool{}
	for _, e := range es {
		if !e.TimeKeyed {
			t.Fatalf("%s is not time-keyed", e.Key)
		}
		if _, dup := out[e.Key]; dup {
			t.Fatalf("%s twice", e.Key)
		}
		out[e.Key] = e.Value
		times[e.Time] = true
	}
	return out, times, res
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

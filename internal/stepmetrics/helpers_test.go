package stepmetrics

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/reject"
)

func defaultOptions() Options { return Options{StepMetric: "step"} }

// resource builds one resource with one scope and hands back its metric slice.
func resource() (pmetric.ResourceMetrics, pmetric.MetricSlice) {
	rm := pmetric.NewResourceMetrics()
	rm.Resource().Attributes().PutStr("prime.run.key", "r1")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("trainer")
	return rm, sm.Metrics()
}

func gauge(ms pmetric.MetricSlice, name string) pmetric.NumberDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	return m.SetEmptyGauge().DataPoints()
}

func sum(ms pmetric.MetricSlice, name string) pmetric.NumberDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	s := m.SetEmptySum()
	s.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	return s.DataPoints()
}

func histogram(ms pmetric.MetricSlice, name string) pmetric.HistogramDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	return m.SetEmptyHistogram().DataPoints()
}

func expHistogram(ms pmetric.MetricSlice, name string) pmetric.ExponentialHistogramDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	return m.SetEmptyExponentialHistogram().DataPoints()
}

func summary(ms pmetric.MetricSlice, name string) pmetric.SummaryDataPointSlice {
	m := ms.AppendEmpty()
	m.SetName(name)
	return m.SetEmptySummary().DataPoints()
}

// attrs puts key/value pairs (raw Go values) into m.
func attrs(t testing.TB, m pcommon.Map, kv ...any) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := m.PutEmpty(kv[i].(string)).FromRaw(kv[i+1]); err != nil {
			t.Fatalf("attribute %v: %v", kv[i], err)
		}
	}
}

// dbl appends a double point at ts with the given attributes.
func dbl(t testing.TB, dps pmetric.NumberDataPointSlice, v float64, ts uint64, kv ...any) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetDoubleValue(v)
	dp.SetTimestamp(pcommon.Timestamp(ts))
	attrs(t, dp.Attributes(), kv...)
	return dp
}

// num appends an int point at ts with the given attributes.
func num(t testing.TB, dps pmetric.NumberDataPointSlice, v int64, ts uint64, kv ...any) pmetric.NumberDataPoint {
	dp := dps.AppendEmpty()
	dp.SetIntValue(v)
	dp.SetTimestamp(pcommon.Timestamp(ts))
	attrs(t, dp.Attributes(), kv...)
	return dp
}

// rejection is a reject.Rejection with its message as text, to compare
// exactly.
type rejection struct {
	Reason     reject.Reason
	Field, Msg string
}

func texts(rs []*reject.Rejection) []rejection {
	var out []rejection
	for _, r := range rs {
		out = append(out, rejection{r.Reason, r.Field, r.Error()})
	}
	return out
}

// stepValue is an entry of a step's row as the tests of steps, keys and
// values compare it: without its time. The tests of times compare whole
// Entries (assertEntries).
type stepValue struct {
	Step  int64
	Key   string
	Value float64
}

// stepped is an entry of step s, of a point or event recorded at at.
func stepped(s int64, key string, v float64, at pcommon.Timestamp) Entry {
	return Entry{Step: s, Key: key, Value: v, Time: at}
}

// timed is an entry of the time-keyed row at.
func timed(key string, v float64, at pcommon.Timestamp) Entry {
	return Entry{Key: key, Value: v, Time: at, TimeKeyed: true}
}

// assertMapping compares entries as stepValues; every entry must be of a
// step's row.
func assertMapping(t *testing.T, gotE []Entry, gotR []*reject.Rejection, wantE []stepValue, wantR []rejection) {
	t.Helper()
	var got []stepValue
	for _, e := range gotE {
		if e.TimeKeyed {
			t.Errorf("entry %+v is time-keyed; a step's was wanted", e)
		}
		got = append(got, stepValue{e.Step, e.Key, e.Value})
	}
	if !reflect.DeepEqual(wantE, got) {
		t.Errorf("entries:\n got %s\nwant %s", lines(got), lines(wantE))
	}
	assertRejections(t, gotR, wantR)
}

// assertEntries compares whole entries, times and rows included.
func assertEntries(t *testing.T, gotE []Entry, gotR []*reject.Rejection, wantE []Entry, wantR []rejection) {
	t.Helper()
	if !reflect.DeepEqual(wantE, gotE) {
		t.Errorf("entries:\n got %s\nwant %s", lines(gotE), lines(wantE))
	}
	assertRejections(t, gotR, wantR)
}

func assertRejections(t *testing.T, gotR []*reject.Rejection, wantR []rejection) {
	t.Helper()
	if gotT := texts(gotR); !reflect.DeepEqual(wantR, gotT) {
		t.Errorf("rejections:\n got %s\nwant %s", lines(gotT), lines(wantR))
	}
}

// record is a log record with attributes kv, body and the two timestamps.
func record(t testing.TB, body pcommon.Value, ts, observed uint64, kv ...any) plog.LogRecord {
	t.Helper()
	lr := plog.NewLogRecord()
	attrs(t, lr.Attributes(), kv...)
	body.CopyTo(lr.Body())
	lr.SetTimestamp(pcommon.Timestamp(ts))
	lr.SetObservedTimestamp(pcommon.Timestamp(observed))
	return lr
}

// lines prints one element a line, so a failing golden comparison is readable.
func lines[T any](xs []T) string {
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, "\n\t%+v", x)
	}
	if len(xs) == 0 {
		b.WriteString("(none)")
	}
	return b.String()
}

package stepmetrics

import (
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/reject"
)

// explicitPoint appends a histogram point of step 1 with the given layout
// and count, and no sum, min or max.
func explicitPoint(t testing.TB, ms pmetric.MetricSlice, bounds []float64, counts []uint64, count uint64) pmetric.HistogramDataPoint {
	t.Helper()
	dp := histogram(ms, "h").AppendEmpty()
	attrs(t, dp.Attributes(), "prime.step", int64(1))
	dp.ExplicitBounds().FromRaw(bounds)
	dp.BucketCounts().FromRaw(counts)
	dp.SetCount(count)
	return dp
}

// expLayout is an exponential point's buckets.
type expLayout struct {
	scale          int32
	negOffset      int32
	neg            []uint64
	zeroThreshold  float64
	zeroCount      uint64
	posOffset      int32
	pos            []uint64
	count          uint64
	hasMin, hasMax bool
	min, max       float64
}

func exponentialPoint(t testing.TB, ms pmetric.MetricSlice, l expLayout) pmetric.ExponentialHistogramDataPoint {
	t.Helper()
	dp := expHistogram(ms, "h").AppendEmpty()
	attrs(t, dp.Attributes(), "prime.step", int64(1))
	dp.SetScale(l.scale)
	dp.Negative().SetOffset(l.negOffset)
	dp.Negative().BucketCounts().FromRaw(l.neg)
	dp.SetZeroThreshold(l.zeroThreshold)
	dp.SetZeroCount(l.zeroCount)
	dp.Positive().SetOffset(l.posOffset)
	dp.Positive().BucketCounts().FromRaw(l.pos)
	dp.SetCount(l.count)
	if l.hasMin {
		dp.SetMin(l.min)
	}
	if l.hasMax {
		dp.SetMax(l.max)
	}
	return dp
}

// percentilesOf maps rm and keeps the entries whose key ends in /pNN.
func percentilesOf(t *testing.T, rm pmetric.ResourceMetrics) (map[string]float64, []*reject.Rejection) {
	t.Helper()
	entries, rejected, _ := FromResource(rm, defaultOptions())
	got := map[string]float64{}
	for _, e := range entries {
		if i := strings.LastIndex(e.Key, "/p"); i >= 0 {
			got[e.Key[i+1:]] = e.Value
		}
	}
	return got, rejected
}

// assertPercentiles compares p50, p90 and p99 with want (nil: none), to
// 1e-12 relative: this is a table of hand-worked values; bit-exact
// agreement with Prometheus is TestPrometheusHistogramQuantileAgreesWithEveryPercentileWeSend's.
func assertPercentiles(t *testing.T, got map[string]float64, want []float64) {
	t.Helper()
	if want == nil {
		if len(got) != 0 {
			t.Errorf("got percentiles %v, want none", got)
		}
		return
	}
	if len(got) != 3 {
		t.Fatalf("got percentiles %v, want p50, p90 and p99 = %v", got, want)
	}
	for i, k := range []string{"p50", "p90", "p99"} {
		if d := math.Abs(got[k] - want[i]); d > 1e-12*math.Max(1, math.Abs(want[i])) {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], want[i], got)
		}
	}
}

func TestAHistogramGivesP50P90P99InterpolatedWithinTheBucketAsPrometheusDoes(t *testing.T) {
	tests := []struct {
		name   string
		bounds []float64
		counts []uint64
		count  uint64
		want   []float64
	}{
		// cumulative 2, 8, 16, 20: ranks 10, 18 and 19.8.
		{"each rank is interpolated linearly within the bucket that reaches it",
			[]float64{1, 2, 4, 8}, []uint64{2, 6, 8, 4, 0}, 20, []float64{2 + 2*2.0/8, 4 + 4*2.0/4, 4 + 4*3.8/4}},
		{"a rank in the first bucket is interpolated from 0 when its bound is positive",
			[]float64{10, 20}, []uint64{8, 2, 0}, 10, []float64{10 * 5.0 / 8, 15, 19.5}},
		{"a rank in a first bucket whose bound is not positive answers that bound",
			[]float64{-1, 0, 1}, []uint64{6, 2, 2, 0}, 10, []float64{-1, 0.5, 0.95}},
		{"a rank in the +Inf bucket answers the highest finite bound",
			[]float64{1, 2}, []uint64{5, 0, 5}, 10, []float64{1, 2, 2}},
		{"a zero-width bucket answers its bound",
			[]float64{1, 1, 2}, []uint64{2, 6, 2, 0}, 10, []float64{1, 1.5, 1.95}},
		{"a count above the buckets' total counts the rest as in the +Inf bucket",
			[]float64{1, 2}, []uint64{4, 0, 0}, 10, []float64{2, 2, 2}},
		{"a count below the finite buckets' total is lifted to it, as Prometheus lifts a +Inf bucket",
			[]float64{1, 2}, []uint64{2, 8, 0}, 5, []float64{1 + 3.0/8, 1 + 7.0/8, 1 + 7.9/8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rm, ms := resource()
			explicitPoint(t, ms, tc.bounds, tc.counts, tc.count)
			got, rejected := percentilesOf(t, rm)
			assertRejections(t, rejected, nil)
			assertPercentiles(t, got, tc.want)
		})
	}
}

func TestAHistogramWithNoObservationsOrNoBucketsGivesNoPercentiles(t *testing.T) {
	tests := []struct {
		name   string
		bounds []float64
		counts []uint64
		count  uint64
	}{
		{"count 0", []float64{1, 2}, []uint64{0, 0, 0}, 0},
		{"count 0 however the buckets count", []float64{1, 2}, []uint64{1, 2, 0}, 0},
		{"a count but no bucket counts", nil, nil, 5},
		{"a count and bounds but no bucket counts", []float64{1, 2}, nil, 5},
		{"only the +Inf bucket", nil, []uint64{5}, 5},
		{"bucket counts not one more than the bounds", []float64{1, 2}, []uint64{5}, 5},
		{"decreasing bounds", []float64{2, 1}, []uint64{1, 1, 1}, 3},
		{"a NaN bound", []float64{1, math.NaN()}, []uint64{1, 1, 1}, 3},
		{"an infinite bound", []float64{1, math.Inf(1)}, []uint64{1, 1, 1}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rm, ms := resource()
			explicitPoint(t, ms, tc.bounds, tc.counts, tc.count)
			got, rejected := percentilesOf(t, rm)
			assertRejections(t, rejected, nil)
			assertPercentiles(t, got, nil)
		})
	}
}

func TestAnExponentialHistogramIsInterpolatedInItsBucketsFromMostNegativeToMostPositive(t *testing.T) {
	tests := []struct {
		name   string
		layout expLayout
		want   []float64
	}{
		// scale 0: base 2. Buckets (-4,-2] 8, (-2,-1] 4, (-0.5,0.5] 4,
		// (2,4] 3, (4,8] 1: cumulative 8, 12, 16, 19, 20.
		{"negative, zero and positive buckets",
			expLayout{negOffset: 0, neg: []uint64{4, 8}, zeroThreshold: 0.5, zeroCount: 4, posOffset: 1, pos: []uint64{3, 1}, count: 20},
			[]float64{-2 + 1*2.0/4, 2 + 2*2.0/3, 4 + 4*0.8/1}},
		// (-2,-1] 2, (-0.5,0.5] 16, (1,2] 2: cumulative 2, 18, 20.
		{"the zero bucket spans minus to plus its threshold",
			expLayout{neg: []uint64{2}, zeroThreshold: 0.5, zeroCount: 16, pos: []uint64{2}, count: 20},
			[]float64{-0.5 + 8.0/16, 0.5, 1 + 1.8/2}},
		// (0,0] 10, (1,2] 0, (2,4] 10.
		{"a zero threshold of 0 makes the zero bucket the value 0",
			expLayout{zeroCount: 10, pos: []uint64{0, 10}, count: 20},
			[]float64{0, 2 + 2*8.0/10, 2 + 2*9.8/10}},
		{"scale 1 makes the base √2",
			expLayout{scale: 1, posOffset: 2, pos: []uint64{10}, count: 10},
			[]float64{2 + (2*math.Sqrt2-2)*0.5, 2 + (2*math.Sqrt2-2)*0.9, 2 + (2*math.Sqrt2-2)*0.99}},
		{"scale -1 makes the base 4",
			expLayout{scale: -1, posOffset: 1, pos: []uint64{10}, count: 10},
			[]float64{4 + 12*0.5, 4 + 12*0.9, 4 + 12*0.99}},
		{"a negative offset reaches below 1",
			expLayout{posOffset: -2, pos: []uint64{10}, count: 10},
			[]float64{0.375, 0.25 + 0.25*0.9, 0.25 + 0.25*0.99}},
		{"a count above the buckets' total answers the highest bound",
			expLayout{pos: []uint64{4}, count: 10},
			[]float64{2, 2, 2}},
		{"no observations", expLayout{pos: []uint64{0, 0}}, nil},
		{"a count but no buckets", expLayout{count: 5}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rm, ms := resource()
			exponentialPoint(t, ms, tc.layout)
			got, rejected := percentilesOf(t, rm)
			assertRejections(t, rejected, nil)
			assertPercentiles(t, got, tc.want)
		})
	}
}

func TestExponentialBoundsArePowersOfTheBase(t *testing.T) {
	for _, tc := range []struct {
		scale int32
		index int64
		want  float64
	}{
		{0, 0, 1}, {0, 3, 8}, {0, -2, 0.25}, {-2, 1, 16}, {-10, -1, math.Ldexp(1, -1024)},
		{0, 1024, math.Inf(1)}, {0, -1075, 0}, {3, 8, 2}, {3, -16, 0.25},
	} {
		if got := exponentialBound(tc.scale, tc.index); got != tc.want {
			t.Errorf("scale %d index %d: bound %v, want exactly %v", tc.scale, tc.index, got, tc.want)
		}
	}
	if got := exponentialBound(1, 1); math.Abs(got-math.Sqrt2) > 1e-15 {
		t.Errorf("scale 1 index 1: bound %v, want √2", got)
	}
}

func TestPercentilesAreClampedToTheRecordedMinAndMax(t *testing.T) {
	rm, ms := resource()
	// Unclamped: 6.25, 15 and 19.5.
	dp := explicitPoint(t, ms, []float64{10, 20}, []uint64{8, 2, 0}, 10)
	dp.SetMin(7)
	dp.SetMax(12)
	got, _ := percentilesOf(t, rm)
	assertPercentiles(t, got, []float64{7, 12, 12})

	rm, ms = resource()
	exponentialPoint(t, ms, expLayout{posOffset: 1, pos: []uint64{10}, count: 10, hasMin: true, min: 2.5, hasMax: true, max: 3.5})
	got, _ = percentilesOf(t, rm)
	assertPercentiles(t, got, []float64{3, 3.5, 3.5})

	rm, ms = resource()
	dp = explicitPoint(t, ms, []float64{10, 20}, []uint64{8, 2, 0}, 10)
	dp.SetMin(math.NaN())
	dp.SetMax(math.Inf(1))
	got, rejected := percentilesOf(t, rm)
	assertPercentiles(t, got, []float64{6.25, 15, 19.5})
	if len(rejected) != 2 {
		t.Errorf("a NaN min and an infinite max are rejected, and bound nothing: %v", rejected)
	}
}

func TestANaNSumDoesNotAffectThePercentiles(t *testing.T) {
	rm, ms := resource()
	dp := explicitPoint(t, ms, []float64{1, 2, 4, 8}, []uint64{2, 6, 8, 4, 0}, 20)
	dp.SetSum(math.NaN())
	got, rejected := percentilesOf(t, rm)
	assertPercentiles(t, got, []float64{2.5, 6, 7.8})
	var fields []string
	for _, r := range rejected {
		if r.Reason != reject.NonFinite {
			t.Errorf("rejection %v", r)
		}
		fields = append(fields, r.Field)
	}
	if strings.Join(fields, " ") != "h/sum h/mean" {
		t.Errorf("rejected %v, want the sum and the mean", fields)
	}
}

func TestAPercentilePastFloat64IsRejectedAsNonFiniteUnlessTheMaxBoundsIt(t *testing.T) {
	// The bucket (2^1023, 2^1024 = +Inf].
	rm, ms := resource()
	exponentialPoint(t, ms, expLayout{posOffset: 1023, pos: []uint64{10}, count: 10})
	got, rejected := percentilesOf(t, rm)
	assertPercentiles(t, got, nil)
	var fields []string
	for _, r := range rejected {
		if r.Reason != reject.NonFinite {
			t.Errorf("rejection %v", r)
		}
		fields = append(fields, r.Field)
	}
	if strings.Join(fields, " ") != "h/p50 h/p90 h/p99" {
		t.Errorf("rejected %v, want p50, p90 and p99", fields)
	}

	rm, ms = resource()
	exponentialPoint(t, ms, expLayout{posOffset: 1023, pos: []uint64{10}, count: 10, hasMax: true, max: 1e308})
	got, rejected = percentilesOf(t, rm)
	assertRejections(t, rejected, nil)
	assertPercentiles(t, got, []float64{1e308, 1e308, 1e308})
}

// Percentiles are read for every histogram point: reading them must not
// allocate.
func TestReadingPercentilesAllocatesNothing(t *testing.T) {
	_, ms := resource()
	explicit := explicitPoint(t, ms, []float64{1, 2, 4, 8}, []uint64{2, 6, 8, 4, 0}, 20)
	exponential := exponentialPoint(t, ms, expLayout{neg: []uint64{4, 8}, zeroThreshold: 0.5, zeroCount: 4, pos: []uint64{3, 1}, count: 20})
	var sink percentiles
	if n := testing.AllocsPerRun(100, func() { sink = explicitPercentiles(explicit) }); n != 0 || !sink.ok {
		t.Errorf("an explicit point: %v allocations (ok %v)", n, sink.ok)
	}
	if n := testing.AllocsPerRun(100, func() { sink = exponentialPercentiles(exponential) }); n != 0 || !sink.ok {
		t.Errorf("an exponential point: %v allocations (ok %v)", n, sink.ok)
	}
}

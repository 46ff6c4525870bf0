package stepmetrics

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// explicitPercentiles reads an explicit-bucket point's buckets as
// Prometheus reads the classic _bucket series the collector's Prometheus
// exporters make of it: bucket i holds (bounds[i-1], bounds[i]], the first
// from −Inf, the last to +Inf, whose cumulative count is the point's count.
// A layout OTLP does not allow (bucket_counts not one longer than
// explicit_bounds, bounds not finite and non-decreasing) gives none, as
// does a point with no finite bound: there is nothing to interpolate in.
func explicitPercentiles(dp pmetric.HistogramDataPoint) percentiles {
	bounds, counts := dp.ExplicitBounds(), dp.BucketCounts()
	n := bounds.Len()
	if dp.Count() == 0 || n == 0 || counts.Len() != n+1 {
		return percentiles{}
	}
	var finite uint64 // observations below the +Inf bucket
	for i := 0; i < n; i++ {
		b := bounds.At(i)
		if !isFinite(b) || i > 0 && b < bounds.At(i-1) {
			return percentiles{}
		}
		finite += counts.At(i)
	}
	// Prometheus lifts a +Inf bucket that counts fewer than the buckets
	// below it to their total (its cumulative counts must not decrease).
	w := newRankWalk(max(dp.Count(), finite))
	// The first bucket has no lower bound. Prometheus assumes 0 when its
	// upper bound is positive, and answers a bound ≤ 0 itself: a bucket
	// from that bound to itself does both.
	lower := math.Min(0, bounds.At(0))
	for i := 0; i < n && !w.done(); i++ {
		upper := bounds.At(i)
		w.bucket(lower, upper, counts.At(i))
		lower = upper
	}
	return w.result()
}

// exponentialPercentiles reads an exponential point as explicit buckets,
// from the most negative to the most positive: the negative buckets, the
// zero bucket (−zero_threshold, zero_threshold] when it holds observations,
// then the positive buckets; positive bucket i of offset o holds
// (base^(o+i), base^(o+i+1)], its negative twin the same range negated.
// A point with no bucket at all gives none.
func exponentialPercentiles(dp pmetric.ExponentialHistogramDataPoint) percentiles {
	neg, pos := dp.Negative(), dp.Positive()
	nc, pc := neg.BucketCounts(), pos.BucketCounts()
	if dp.Count() == 0 || nc.Len() == 0 && pc.Len() == 0 && dp.ZeroCount() == 0 {
		return percentiles{}
	}
	held := dp.ZeroCount()
	for i := 0; i < nc.Len(); i++ {
		held += nc.At(i)
	}
	for i := 0; i < pc.Len(); i++ {
		held += pc.At(i)
	}
	w := newRankWalk(max(dp.Count(), held))
	scale := dp.Scale()

	o := int64(neg.Offset())
	outer := exponentialBound(scale, o+int64(nc.Len()))
	for i := nc.Len() - 1; i >= 0 && !w.done(); i-- {
		inner := exponentialBound(scale, o+int64(i))
		w.bucket(-outer, -inner, nc.At(i))
		outer = inner
	}
	if zc := dp.ZeroCount(); zc > 0 && !w.done() {
		// With a threshold of 0 this is the bucket (0, 0]: its percentiles
		// are 0, exactly what it counted.
		zt := dp.ZeroThreshold()
		w.bucket(-zt, zt, zc)
	}
	o = int64(pos.Offset())
	lower := exponentialBound(scale, o)
	for i := 0; i < pc.Len() && !w.done(); i++ {
		upper := exponentialBound(scale, o+int64(i)+1)
		w.bucket(lower, upper, pc.At(i))
		lower = upper
	}
	return w.result()
}

// exponentialBound is base^index for base = 2^(2^−scale), computed as
// 2^(index·2^−scale): the exponent is exact, and so is the bound whenever
// the exponent is an integer (scale ≤ 0). Past float64's range it is +Inf
// or 0, and a percentile that lands there is rejected as non-finite.
func exponentialBound(scale int32, index int64) float64 {
	return math.Exp2(math.Ldexp(float64(index), -int(scale)))
}

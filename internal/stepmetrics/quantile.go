package stepmetrics

import "math"

// percentile is one of the percentiles a histogram point gives: its entry
// key's suffix and its quantile.
type percentile struct {
	suffix string
	q      float64
}

// histogramPercentiles are the percentiles every histogram point gives, by
// ascending quantile (rankWalk relies on the order). A function, not a
// variable, so that the package holds no state.
func histogramPercentiles() [3]percentile {
	return [3]percentile{{"/p50", 0.5}, {"/p90", 0.9}, {"/p99", 0.99}}
}

// percentiles are a histogram point's values for histogramPercentiles, by
// the rule of doc.go ("Percentiles").
type percentiles struct {
	value [3]float64
	ok    bool // false: the point's buckets give none
}

// rankWalk finds, in one pass over a point's buckets from the lowest to the
// highest, the bucket that holds each percentile's rank and interpolates
// linearly in it. Buckets are handed to it one at a time, read in place:
// this runs for every histogram point, and must not allocate.
type rankWalk struct {
	rank  [3]float64 // q × the point's count, ascending
	value [3]float64
	found int     // ranks found so far
	cum   uint64  // observations in the buckets walked
	top   float64 // upper bound of the last bucket walked
}

func newRankWalk(total uint64) rankWalk {
	var w rankWalk
	for i, p := range histogramPercentiles() {
		// q × count, as Prometheus writes it, so that the ranks agree to the bit.
		w.rank[i] = p.q * float64(total)
	}
	return w
}

// bucket walks the next bucket, (lower, upper] holding n observations.
func (w *rankWalk) bucket(lower, upper float64, n uint64) {
	// Counts are compared and subtracted as the floats Prometheus reads
	// from cumulative _bucket series, in its order of operations, so that
	// the comparison test can ask for equality rather than a tolerance.
	below := float64(w.cum)
	w.cum += n
	reached := float64(w.cum)
	for ; w.found < len(w.rank) && reached >= w.rank[w.found]; w.found++ {
		w.value[w.found] = lower + (upper-lower)*((w.rank[w.found]-below)/(reached-below))
	}
	w.top = upper
}

// done reports that every rank has been found, so the remaining buckets
// need not be read.
func (w *rankWalk) done() bool { return w.found == len(w.rank) }

// result ends the walk. A rank no bucket reached lies among the
// observations above the highest bound (an explicit layout's +Inf bucket,
// or what a point counts beyond its buckets): it answers the highest
// bound, as Prometheus answers the +Inf bucket, as no upper bound is known.
func (w *rankWalk) result() percentiles {
	for ; w.found < len(w.value); w.found++ {
		w.value[w.found] = w.top
	}
	return percentiles{value: w.value, ok: true}
}

// clamp narrows a percentile to the point's recorded min and max. The true
// percentile lies within them, so this only ever brings the estimate
// closer: a +Inf-bucket answer or a first bucket assumed to start at 0 can
// otherwise fall outside what was observed. A non-finite min or max bounds
// nothing (it is itself rejected).
func (d distribution) clamp(v float64) float64 {
	if d.hasMin && isFinite(d.min) && v < d.min {
		v = d.min
	}
	if d.hasMax && isFinite(d.max) && v > d.max {
		v = d.max
	}
	return v
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

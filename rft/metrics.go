package rft

import (
	"context"
	"math"
	"net/http"
	"slices"
	"strings"
)

// PostMetrics posts one row's scalar metrics (POST /rft/metrics), keyed as
// the platform's own SDK keys them inside metrics: a step's row by "step";
// a row of metrics with no step by "_timestamp" alone (unix seconds), which
// every row may carry.
//
// Non-finite values are refused, naming their keys, and nothing is sent:
// NaN and Infinity are not JSON, and a strict server answers an opaque 400
// for the whole post. Dropping them is the caller's choice to make and log.
//
// Replayable: the platform keeps one row per step (a time row: per
// _timestamp, which a replay repeats) and merges posts for the same row,
// so a duplicate is harmless while a lost post is a hole in the curves for
// good.
func (c *Client) PostMetrics(ctx context.Context, runID string, metrics map[string]float64) error {
	if runID == "" {
		return c.refuse(opPostMetrics, "the run id is empty")
	}
	if bad := NonFinite(metrics); len(bad) > 0 {
		return c.refuse(opPostMetrics, clip("non-finite values (NaN or ±Inf) for "+strings.Join(bad, ", ")))
	}
	if metrics == nil {
		metrics = map[string]float64{} // {} rather than null
	}
	_, err := c.call(ctx, route{
		op: opPostMetrics, method: http.MethodPost, path: "/rft/metrics", replayable: true,
	}, MetricsRequest{RunID: runID, Metrics: metrics})
	return err
}

// NonFinite lists, sorted, the keys whose values JSON cannot carry: NaN
// and ±Inf.
func NonFinite(metrics map[string]float64) []string {
	var bad []string
	for k, v := range metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	return bad
}

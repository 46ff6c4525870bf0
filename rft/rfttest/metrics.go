package rfttest

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
)

// The keys of a "metrics" object that name its row rather than a value.
const (
	stepKey      = "step"
	timestampKey = "_timestamp"
)

// metricsRow names the row a metrics post goes to: a step's, or, for a post
// with "_timestamp" and no "step" (the platform SDK's log_metrics with
// step=None), the row of that time.
type metricsRow struct {
	step  int64
	time  float64
	timed bool
}

// postMetrics handles POST <prefix>/rft/metrics: one row's scalars, merged
// into the row, so replaying a post is harmless.
func (s *Server) postMetrics(who *account, f *fields, _ string) (reply, error) {
	runID := f.str("run_id", required)
	values := f.object("metrics", required)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	key, row, err := readMetrics(values)
	if err != nil {
		return reply{}, err
	}
	return s.withOpenRun(who, runID, "add metrics to", func(r *runState) (reply, error) {
		var merged map[string]float64
		if key.timed {
			merged = r.timeMetrics[key.time]
		} else {
			merged = r.metrics[key.step]
		}
		if merged == nil {
			merged = make(map[string]float64, len(row))
			if key.timed {
				r.timeMetrics[key.time] = merged
			} else {
				r.metrics[key.step] = merged
			}
		}
		maps.Copy(merged, row)
		r.metricPosts++
		return reply{http.StatusOK, successBody()}, nil
	})
}

// readMetrics splits a "metrics" object into its row and its values; every
// value must be a JSON number. "step" is required unless "_timestamp" is
// there; "_timestamp" is unix seconds, and a time row's must be positive.
// Neither is a value of the row.
func readMetrics(m map[string]any) (metricsRow, map[string]float64, error) {
	f := newFields(m, "metrics.")
	_, hasStep := m[stepKey]
	_, hasTime := m[timestampKey]
	var key metricsRow
	if hasStep || !hasTime {
		key.step = f.count(stepKey, required)
	}
	if f.err != nil { // not f.check(): every other key is a metric name
		return metricsRow{}, nil, f.err
	}
	row := make(map[string]float64, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if name == stepKey {
			continue
		}
		n, ok := m[name].(json.Number)
		if !ok {
			return metricsRow{}, nil, refuse(http.StatusBadRequest, "metrics.%s must be a number, not %s", name, jsonType(m[name]))
		}
		v, err := strconv.ParseFloat(string(n), 64)
		if err != nil { // out of float64 range: would be infinite
			return metricsRow{}, nil, refuse(http.StatusBadRequest, "metrics.%s is not a finite number: %s", name, n)
		}
		if name == timestampKey {
			key.time = v
			continue
		}
		row[name] = v
	}
	if !hasStep {
		key.timed = true
		if key.time <= 0 {
			return metricsRow{}, nil, refuse(http.StatusBadRequest, "metrics._timestamp of a row with no step must be positive unix seconds, not %v", key.time)
		}
	}
	return key, row, nil
}

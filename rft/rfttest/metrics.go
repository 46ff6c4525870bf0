package rfttest

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
)

// postMetrics handles POST <prefix>/rft/metrics: one step's scalars, merged
// into the step's row, so replaying a post is harmless.
func (s *Server) postMetrics(f *fields, _ string) (reply, error) {
	runID := f.str("run_id", required)
	values := f.object("metrics", required)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	step, row, err := readMetrics(values)
	if err != nil {
		return reply{}, err
	}
	return s.withOpenRun(runID, "add metrics to", func(r *runState) (reply, error) {
		if r.metrics[step] == nil {
			r.metrics[step] = make(map[string]float64, len(row))
		}
		maps.Copy(r.metrics[step], row)
		r.metricPosts++
		return reply{http.StatusOK, successBody()}, nil
	})
}

// readMetrics splits a "metrics" object into its step and its values; every
// value must be a JSON number.
func readMetrics(m map[string]any) (int64, map[string]float64, error) {
	f := newFields(m, "metrics.")
	step := f.count("step", required)
	if f.err != nil { // not f.check(): every other key is a metric name
		return 0, nil, f.err
	}
	row := make(map[string]float64, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if name == "step" {
			continue
		}
		n, ok := m[name].(json.Number)
		if !ok {
			return 0, nil, refuse(http.StatusBadRequest, "metrics.%s must be a number, not %s", name, jsonType(m[name]))
		}
		v, err := strconv.ParseFloat(string(n), 64)
		if err != nil { // out of float64 range: would be infinite
			return 0, nil, refuse(http.StatusBadRequest, "metrics.%s is not a finite number: %s", name, n)
		}
		row[name] = v
	}
	return step, row, nil
}

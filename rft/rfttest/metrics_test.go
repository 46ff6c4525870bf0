package rfttest

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestMetricsPostsForTheSameStepAreMergedIntoOneRow(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	for _, body := range []string{
		`{"run_id":"` + id + `","metrics":{"step":10,"loss":0.25,"reward/mean":0.5}}`,
		`{"run_id":"` + id + `","metrics":{"step":11,"loss":0.2}}`,
		`{"run_id":"` + id + `","metrics":{"step":10,"loss":0.3,"entropy":2}}`,
		`{"run_id":"` + id + `","metrics":{"step":10,"loss":0.3,"entropy":2}}`, // a replay
	} {
		res := c.post("/rft/metrics", body)
		wantStatus(t, "metrics", res, http.StatusOK)
		if want := map[string]any{"data": map[string]any{"status": "success"}}; !reflect.DeepEqual(res.json(t), want) {
			t.Fatalf("answer %s", res.body)
		}
	}
	run := mustRun(t, s, id)
	want := map[int64]map[string]float64{
		10: {"loss": 0.3, "reward/mean": 0.5, "entropy": 2},
		11: {"loss": 0.2},
	}
	if !reflect.DeepEqual(run.Metrics, want) {
		t.Errorf("Metrics = %v, want %v", run.Metrics, want)
	}
	if run.MetricPosts != 4 {
		t.Errorf("MetricPosts = %d, want 4", run.MetricPosts)
	}
}

func TestAMetricsPostWithATimestampAndNoStepIsTheRowOfThatTime(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	for _, body := range []string{
		`{"run_id":"` + id + `","metrics":{"_timestamp":1767225600.25,"inference/ttft":0.25}}`,
		`{"run_id":"` + id + `","metrics":{"_timestamp":1767225600.25,"inference/ttft":0.25}}`, // a replay
		`{"run_id":"` + id + `","metrics":{"_timestamp":1767225600.25,"inference/tps":900}}`,
		`{"run_id":"` + id + `","metrics":{"_timestamp":1767225601,"inference/ttft":0.3}}`,
		`{"run_id":"` + id + `","metrics":{"step":10,"_timestamp":1767225602.5,"loss":0.25}}`,
	} {
		wantStatus(t, "metrics", c.post("/rft/metrics", body), http.StatusOK)
	}
	run := mustRun(t, s, id)
	wantTimes := map[float64]map[string]float64{
		1767225600.25: {"inference/ttft": 0.25, "inference/tps": 900},
		1767225601:    {"inference/ttft": 0.3},
	}
	if !reflect.DeepEqual(run.TimeMetrics, wantTimes) {
		t.Errorf("TimeMetrics = %v, want %v", run.TimeMetrics, wantTimes)
	}
	if want := map[int64]map[string]float64{10: {"loss": 0.25}}; !reflect.DeepEqual(run.Metrics, want) {
		t.Errorf("Metrics = %v, want %v: a step's _timestamp is not a value of its row", run.Metrics, want)
	}
	if run.MetricPosts != 5 {
		t.Errorf("MetricPosts = %d, want 5", run.MetricPosts)
	}
}

func TestMetricsAreRefusedWhenTheBodyIsWrong(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		status int
		detail string
	}{
		{"no step", `{"run_id":"run-1","metrics":{"loss":1}}`, http.StatusBadRequest, "metrics.step is required"},
		{"no step and a string _timestamp", `{"run_id":"run-1","metrics":{"_timestamp":"1767225600","loss":1}}`, http.StatusBadRequest, "metrics._timestamp must be a number"},
		{"no step and a zero _timestamp", `{"run_id":"run-1","metrics":{"_timestamp":0,"loss":1}}`, http.StatusBadRequest, "must be positive unix seconds"},
		{"no step and a null _timestamp", `{"run_id":"run-1","metrics":{"_timestamp":null,"loss":1}}`, http.StatusBadRequest, "metrics._timestamp must be a number"},
		{"a float step beside a _timestamp", `{"run_id":"run-1","metrics":{"step":1.0,"_timestamp":1767225600}}`, http.StatusBadRequest, "metrics.step must be an integer"},
		{"a float step", `{"run_id":"run-1","metrics":{"step":1.0,"loss":1}}`, http.StatusBadRequest, "metrics.step must be an integer"},
		{"a negative step", `{"run_id":"run-1","metrics":{"step":-1}}`, http.StatusBadRequest, "metrics.step must not be negative"},
		{"a step beside metrics", `{"run_id":"run-1","step":1,"metrics":{"step":1}}`, http.StatusBadRequest, "unknown key step"},
		{"a string value", `{"run_id":"run-1","metrics":{"step":1,"phase":"train"}}`, http.StatusBadRequest, "metrics.phase must be a number"},
		{"a null value", `{"run_id":"run-1","metrics":{"step":1,"loss":null}}`, http.StatusBadRequest, "metrics.loss must be a number"},
		{"a value past float64", `{"run_id":"run-1","metrics":{"step":1,"loss":1e400}}`, http.StatusBadRequest, "metrics.loss is not a finite number"},
		{"no metrics", `{"run_id":"run-1"}`, http.StatusBadRequest, "metrics is required"},
		{"no run_id", `{"metrics":{"step":1}}`, http.StatusBadRequest, "run_id is required"},
		{"an unknown run", `{"run_id":"run-9","metrics":{"step":1}}`, http.StatusNotFound, "run-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{})
			s.AddRun("run-1")
			res := c.post("/rft/metrics", tt.body)
			wantStatus(t, "metrics", res, tt.status)
			if !strings.Contains(res.detail(), tt.detail) {
				t.Errorf("detail %q does not contain %q", res.detail(), tt.detail)
			}
			if r := mustRun(t, s, "run-1"); r.MetricPosts != 0 || len(r.Metrics) != 0 || len(r.TimeMetrics) != 0 {
				t.Errorf("a refused post changed the run: %+v", r)
			}
		})
	}
}

func TestMetricsForAClosedRunAreRefusedWith409(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	wantStatus(t, "finalize", c.post("/rft/finalize", `{"run_id":"`+id+`","exit_code":0}`), http.StatusOK)

	res := c.post("/rft/metrics", `{"run_id":"`+id+`","metrics":{"step":1,"loss":1}}`)
	wantStatus(t, "metrics after finalize", res, http.StatusConflict)
	if d := res.detail(); d != "Cannot add metrics to run in 'COMPLETED' state." {
		t.Errorf("detail = %q", d)
	}
	if r := mustRun(t, s, id); r.MetricPosts != 0 {
		t.Errorf("MetricPosts = %d", r.MetricPosts)
	}
}

package rfttest

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestBaseURLIsTheRootFollowedByTheNormalisedPrefix(t *testing.T) {
	tests := []struct {
		prefix string
		want   string
	}{
		{"", "/api/v1"},
		{"/api/v1", "/api/v1"},
		{"/api/internal", "/api/internal"},
		{"/api/internal/", "/api/internal"},
		{"api/internal", "/api/internal"},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			s, _ := start(t, Options{Prefix: tt.prefix})
			if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
				t.Errorf("URL() = %q, want a loopback root", s.URL())
			}
			if s.BaseURL() != s.URL()+tt.want {
				t.Errorf("BaseURL() = %q, want %q", s.BaseURL(), s.URL()+tt.want)
			}
			if s.APIKey() != "test-key" {
				t.Errorf("APIKey() = %q, want the default", s.APIKey())
			}
		})
	}
}

func TestUnknownRoutesAre404(t *testing.T) {
	s, c := start(t, Options{})
	s.AddRun("run-1")
	tests := []struct{ method, path string }{
		{http.MethodGet, "/api/v1/rft/metrics"},
		{http.MethodPost, "/api/v1/rft/nothing"},
		{http.MethodPost, "/api/v1/rft/metrics/"},
		{http.MethodPost, "/api/internal/rft/metrics"}, // the other prefix
		{http.MethodPost, "/rft/metrics"},              // no prefix
		{http.MethodGet, "/api/v1/rft/external-runs/run-1/status"},
		{http.MethodPut, "/api/v1/rft/external-runs//status"},
		{http.MethodPut, "/api/v1/rft/external-runs/run-1/extra/status"},
		{http.MethodGet, "/storage/runs/run-1/x.parquet"},
		{http.MethodPut, "/storage/"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req := c.platformRequest(t.Context(), tt.method, "", `{"run_id":"run-1","metrics":{"step":1}}`)
			req.URL.Path = tt.path
			res := c.do(req)
			wantStatus(t, "call", res, http.StatusNotFound)
			if res.detail() != "Not Found" {
				t.Errorf("body %s", res.body)
			}
		})
	}
	if r := mustRun(t, s, "run-1"); r.MetricPosts != 0 {
		t.Errorf("an unknown route posted metrics")
	}
}

func TestRequestsRecordsEveryRequestInArrivalOrder(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	req := c.platformRequest(t.Context(), http.MethodPost, "/rft/metrics", `{}`)
	req.Header.Del("x-api-key")
	wantStatus(t, "unauthenticated", c.do(req), http.StatusUnauthorized)
	key, put := c.upload(id, 3, "PAR1")
	wantStatus(t, "put", put, http.StatusOK)
	wantStatus(t, "unknown", c.post("/rft/nothing", `{}`), http.StatusNotFound)

	got := s.Requests()
	want := []struct{ method, path, body string }{
		{http.MethodPost, "/api/v1/rft/external-runs", minimalCreate},
		{http.MethodPost, "/api/v1/rft/metrics", `{}`},
		{http.MethodPost, "/api/v1/rft/samples/presign", `{"run_id":"run-1","step":3}`},
		{http.MethodPut, "/storage/" + key, "PAR1"},
		{http.MethodPost, "/api/v1/rft/nothing", `{}`},
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests recorded, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].Method != w.method || got[i].Path != w.path || string(got[i].Body) != w.body || got[i].Time.IsZero() {
			t.Errorf("request %d = %s %s %q, want %s %s %q", i, got[i].Method, got[i].Path, got[i].Body, w.method, w.path, w.body)
		}
	}
	if got[0].Header.Get("x-api-key") != "test-key" || got[1].Header.Get("x-api-key") != "" {
		t.Error("headers are not recorded as sent")
	}
	if q, _ := url.ParseQuery(got[3].Query); q.Get("X-Sig") == "" {
		t.Errorf("the storage PUT's query %q was not recorded", got[3].Query)
	}
}

func TestInspectionReturnsCopiesTheCallerCannotCorrupt(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	wantStatus(t, "metrics", c.post("/rft/metrics", `{"run_id":"`+id+`","metrics":{"step":1,"loss":1}}`), http.StatusOK)
	_, put := c.upload(id, 1, "PAR1")
	wantStatus(t, "put", put, http.StatusOK)

	r := mustRun(t, s, id)
	r.Spec["base_model"] = "changed"
	r.Spec["environments"] = append(r.Spec["environments"].([]any), "x")
	r.Metrics[1]["loss"] = 99
	r.Objects[0].Body[0] = 'X'
	reqs := s.Requests()
	reqs[0].Header.Set("x-api-key", "changed")
	reqs[0].Body[0] = 'X'

	again := mustRun(t, s, id)
	if again.Spec["base_model"] != "Qwen/Qwen3-8B" || len(again.Spec["environments"].([]any)) != 0 ||
		again.Metrics[1]["loss"] != 1 || string(again.Objects[0].Body) != "PAR1" {
		t.Errorf("a snapshot shares state with the server: %+v", again)
	}
	if r0 := s.Requests()[0]; r0.Header.Get("x-api-key") != "test-key" || r0.Body[0] != '{' {
		t.Errorf("a recorded request shares state with the caller")
	}
}

func TestRunIDsThatNeedEscapingWorkOnEveryRoute(t *testing.T) {
	s, c := start(t, Options{})
	const id = "hosted run/7?x"
	s.AddRun(id)
	key, put := c.upload(id, 5, "PAR1")
	wantStatus(t, "put", put, http.StatusOK)
	wantStatus(t, "confirm", c.post("/rft/samples/confirm", `{"run_id":"`+id+`","step":5,"s3_key":"`+key+`"}`), http.StatusOK)
	wantStatus(t, "status", c.call(http.MethodPut, "/rft/external-runs/"+url.PathEscape(id)+"/status", `{"status":"completed"}`), http.StatusOK)
	r := mustRun(t, s, id)
	if r.Status != StatusCompleted || len(r.Objects) != 1 || !r.Objects[0].Confirmed {
		t.Fatalf("run = %+v", r)
	}
}

func TestConcurrentCallsKeepEveryWrite(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Go(func() {
			res, err := c.try(c.platformRequest(t.Context(), http.MethodPost, "/rft/metrics",
				fmt.Sprintf(`{"run_id":"%s","metrics":{"step":%d,"loss":1}}`, id, i)))
			if err == nil && res.status != http.StatusOK {
				err = fmt.Errorf("metrics: %d %s", res.status, res.body)
			}
			if err == nil {
				res, err = c.try(c.platformRequest(t.Context(), http.MethodPost, "/rft/samples/presign",
					fmt.Sprintf(`{"run_id":"%s","step":%d}`, id, i)))
			}
			if err == nil && res.status != http.StatusOK {
				err = fmt.Errorf("presign: %d %s", res.status, res.body)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if r := mustRun(t, s, id); r.MetricPosts != writers || len(r.Metrics) != writers {
		t.Fatalf("MetricPosts = %d, steps = %d; want %d", r.MetricPosts, len(r.Metrics), writers)
	}
	if n := len(s.Requests()); n != 1+2*writers {
		t.Fatalf("%d requests recorded, want %d", n, 1+2*writers)
	}
}

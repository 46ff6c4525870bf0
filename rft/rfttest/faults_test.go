package rfttest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hangGuard bounds a wait that only a broken server would reach; it is not
// a speed assertion.
const hangGuard = 10 * time.Second

func TestFaultsAreConsumedInOrderByTheirRouteOnly(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	s.Inject(RouteMetrics, Fault{Status: 429, RetryAfter: "2"}, Fault{Status: 503})
	metrics := `{"run_id":"` + id + `","metrics":{"step":1,"loss":1}}`

	wantStatus(t, "presign", c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":1}`), http.StatusOK)
	first := c.post("/rft/metrics", metrics)
	wantStatus(t, "first", first, http.StatusTooManyRequests)
	if first.header.Get("Retry-After") != "2" || !strings.Contains(first.detail(), "injected fault") {
		t.Errorf("first: Retry-After %q, body %s", first.header.Get("Retry-After"), first.body)
	}
	second := c.post("/rft/metrics", metrics)
	wantStatus(t, "second", second, http.StatusServiceUnavailable)
	if second.header.Get("Retry-After") != "" {
		t.Errorf("second: unexpected Retry-After %q", second.header.Get("Retry-After"))
	}
	wantStatus(t, "third", c.post("/rft/metrics", metrics), http.StatusOK)

	if n := s.PendingFaults(RouteMetrics); n != 0 {
		t.Errorf("%d faults left", n)
	}
	if r := mustRun(t, s, id); r.MetricPosts != 1 {
		t.Errorf("MetricPosts = %d: a fault without AfterProcessing was processed", r.MetricPosts)
	}
}

func TestAFaultBodyIsSentAsGiven(t *testing.T) {
	tests := []struct {
		body        string
		contentType string
	}{
		{`{"error":{"code":"rate_limited","message":"slow down"}}`, "application/json"},
		{"<html>502 Bad Gateway</html>", "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			s, c := start(t, Options{})
			s.Inject(RouteCreate, Fault{Status: 502, Body: tt.body})
			res := c.post("/rft/external-runs", minimalCreate)
			wantStatus(t, "create", res, http.StatusBadGateway)
			if string(res.body) != tt.body || res.header.Get("Content-Type") != tt.contentType {
				t.Errorf("body %q (%s)", res.body, res.header.Get("Content-Type"))
			}
		})
	}
}

func TestACreateWhoseResponseIsLostStillRegistersARun(t *testing.T) {
	s, c := start(t, Options{})
	s.Inject(RouteCreate, Fault{Status: 504, AfterProcessing: true})
	wantStatus(t, "create", c.post("/rft/external-runs", minimalCreate), http.StatusGatewayTimeout)
	if runs := s.Runs(); len(runs) != 1 || runs[0].ID != "run-1" {
		t.Fatalf("after a lost response: %+v", runs)
	}
	if id := c.createRun(); id != "run-2" {
		t.Fatalf("the replay made %s, want a second run", id)
	}
}

func TestARefusalIsStillARefusalBehindAnAfterProcessingFault(t *testing.T) {
	s, c := start(t, Options{})
	s.Inject(RouteCreate, Fault{Status: 502, AfterProcessing: true})
	wantStatus(t, "create", c.post("/rft/external-runs", `{"base_model":"m"}`), http.StatusBadGateway)
	if n := len(s.Runs()); n != 0 {
		t.Fatalf("an invalid create registered %d runs", n)
	}
}

func TestADroppedConnectionGivesNoAnswer(t *testing.T) {
	tests := []struct {
		name      string
		fault     Fault
		wantPosts int
	}{
		{"before processing", Fault{DropConnection: true}, 0},
		{"after processing", Fault{DropConnection: true, AfterProcessing: true}, 1},
		{"wins over a status", Fault{DropConnection: true, Status: 502}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{})
			id := c.createRun()
			s.Inject(RouteMetrics, tt.fault)
			_, err := c.try(c.platformRequest(t.Context(), http.MethodPost, "/rft/metrics",
				`{"run_id":"`+id+`","metrics":{"step":1,"loss":1}}`))
			if err == nil {
				t.Fatal("the request got an answer")
			}
			if r := mustRun(t, s, id); r.MetricPosts != tt.wantPosts {
				t.Fatalf("MetricPosts = %d, want %d", r.MetricPosts, tt.wantPosts)
			}
		})
	}
}

func TestAStoragePutCanFailAfterStoring(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	s.Inject(RoutePut, Fault{Status: 500, AfterProcessing: true})
	key, put := c.upload(id, 1, "PAR1")
	wantStatus(t, "put", put, http.StatusInternalServerError)
	objs := mustRun(t, s, id).Objects
	if len(objs) != 1 || objs[0].Key != key || objs[0].Confirmed {
		t.Fatalf("Objects = %+v", objs)
	}
	wantStatus(t, "confirm", c.post("/rft/samples/confirm", `{"run_id":"`+id+`","step":1,"s3_key":"`+key+`"}`), http.StatusOK)
}

func TestAFinishedDelayAnswersNormally(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	s.Inject(RouteFinalize, Fault{Delay: time.Millisecond})
	wantStatus(t, "finalize", c.post("/rft/finalize", `{"run_id":"`+id+`","exit_code":0}`), http.StatusOK)
	if r := mustRun(t, s, id); !r.Finalized {
		t.Fatal("not finalized")
	}
}

func TestADelayEndsWhenTheClientGivesUp(t *testing.T) {
	tests := []struct {
		name      string
		fault     Fault
		wantPosts int
	}{
		{"the request is then not processed", Fault{Delay: time.Hour}, 0},
		{"unless it was processed first", Fault{Delay: time.Hour, AfterProcessing: true, Status: 504}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ended := make(chan bool, 1)
			// The client gives up as soon as the server holds the request:
			// a read timeout without a clock.
			s, c := startWithHooks(t, Options{}, hooks{
				delayStarted: func(Route) { cancel() },
				delayEnded:   func(_ Route, completed bool) { ended <- completed },
			})
			id := c.createRun()
			s.Inject(RouteMetrics, tt.fault)
			_, err := c.try(c.platformRequest(ctx, http.MethodPost, "/rft/metrics",
				`{"run_id":"`+id+`","metrics":{"step":1,"loss":1}}`))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want the client's cancellation", err)
			}
			select {
			case completed := <-ended:
				if completed {
					t.Fatal("the delay ran its course")
				}
			case <-time.After(hangGuard):
				t.Fatal("the delay did not end when the client gave up")
			}
			s.Close() // waits for the handler
			if r := mustRun(t, s, id); r.MetricPosts != tt.wantPosts {
				t.Fatalf("MetricPosts = %d, want %d", r.MetricPosts, tt.wantPosts)
			}
		})
	}
}

func TestCloseEndsAPendingDelay(t *testing.T) {
	held := make(chan struct{})
	s, c := startWithHooks(t, Options{}, hooks{delayStarted: func(Route) { close(held) }})
	id := c.createRun()
	s.Inject(RouteFinalize, Fault{Delay: time.Hour})
	done := make(chan error, 1)
	go func() {
		_, err := c.try(c.platformRequest(t.Context(), http.MethodPost, "/rft/finalize", `{"run_id":"`+id+`","exit_code":0}`))
		done <- err
	}()
	select {
	case <-held:
	case err := <-done:
		t.Fatalf("the request was not held (err %v)", err)
	}
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(hangGuard):
		t.Fatal("Close is still waiting on the delayed request")
	}
	if err := <-done; err == nil {
		t.Fatal("the held request got an answer")
	}
	if r := mustRun(t, s, id); r.Finalized {
		t.Fatal("the held finalize was processed")
	}
}

func TestInjectPanicsOnAnUnknownRoute(t *testing.T) {
	s, _ := start(t, Options{})
	defer func() {
		if recover() == nil {
			t.Fatal("Inject accepted an unknown route")
		}
	}()
	s.Inject(Route("metric"), Fault{Status: 500})
}

func TestAnOutageAnswersEveryRouteUntilItIsLiftedAndKeepsTheScriptedFaultsForAfter(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	// A URL minted before the outage: object storage is down too.
	presigned := c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":1}`)
	wantStatus(t, "presign", presigned, http.StatusOK)
	d, _ := presigned.json(t)["data"].(map[string]any)
	putURL, _ := d["presignedUrl"].(string)
	s.Inject(RouteMetrics, Fault{Status: 429})
	outage := Fault{Status: 503, RetryAfter: "5"}
	s.SetOutage(&outage)
	outage.Status = 200 // SetOutage copied it

	metrics := `{"run_id":"` + id + `","metrics":{"step":1,"loss":1}}`
	calls := []struct {
		name string
		send func() response
	}{
		{"create", func() response { return c.post("/rft/external-runs", minimalCreate) }},
		{"metrics", func() response { return c.post("/rft/metrics", metrics) }},
		{"presign", func() response { return c.post("/rft/samples/presign", `{"run_id":"`+id+`","step":1}`) }},
		{"put", func() response { return c.do(storagePut(t, putURL, "PAR1")) }},
		{"confirm", func() response { return c.post("/rft/samples/confirm", `{"run_id":"`+id+`","step":1,"s3_key":"k"}`) }},
		{"finalize", func() response { return c.post("/rft/finalize", `{"run_id":"`+id+`","exit_code":0}`) }},
		{"status", func() response {
			return c.call(http.MethodPut, "/rft/external-runs/"+id+"/status", `{"status":"failed"}`)
		}},
	}
	for _, call := range calls {
		res := call.send()
		wantStatus(t, call.name, res, http.StatusServiceUnavailable)
		if res.header.Get("Retry-After") != "5" {
			t.Errorf("%s: Retry-After %q", call.name, res.header.Get("Retry-After"))
		}
	}
	if n := s.PendingFaults(RouteMetrics); n != 1 {
		t.Fatalf("%d scripted metrics faults left, want the one queued before the outage", n)
	}
	if runs := s.Runs(); len(runs) != 1 {
		t.Fatalf("the outage processed a create: %d runs", len(runs))
	}
	if r := mustRun(t, s, id); r.MetricPosts != 0 || r.Status != StatusRunning || len(r.Objects) != 0 {
		t.Fatalf("the outage processed a write: %+v", r)
	}

	s.SetOutage(nil)
	wantStatus(t, "metrics, the scripted fault", c.post("/rft/metrics", metrics), http.StatusTooManyRequests)
	wantStatus(t, "metrics", c.post("/rft/metrics", metrics), http.StatusOK)
	wantStatus(t, "put", c.do(storagePut(t, putURL, "PAR1")), http.StatusOK)

	outages := s.Outages()
	if len(outages) != 1 {
		t.Fatalf("%d outages recorded, want 1", len(outages))
	}
	o := outages[0]
	if o.Began.IsZero() || o.Ended.Before(o.Began) || o.Fault.Status != 503 || o.Refused != len(calls) {
		t.Fatalf("the outage's record: %+v, want it begun, ended, answering 503, %d refused", o, len(calls))
	}
	for _, route := range []Route{RouteCreate, RouteMetrics, RoutePresign, RoutePut, RouteConfirm, RouteFinalize, RouteStatus} {
		if o.ByRoute[route] != 1 {
			t.Errorf("route %s: %d refused, want 1 (%v)", route, o.ByRoute[route], o.ByRoute)
		}
	}
}

func TestSetOutageSwitchesOnceAndAChangedFaultKeepsTheSameOutage(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	metrics := `{"run_id":"` + id + `","metrics":{"step":1,"loss":1}}`
	if len(s.Outages()) != 0 {
		t.Fatal("an outage before any switch")
	}
	s.SetOutage(&Fault{Status: 503})
	wantStatus(t, "metrics", c.post("/rft/metrics", metrics), http.StatusServiceUnavailable)
	s.SetOutage(&Fault{Status: 502})
	wantStatus(t, "metrics", c.post("/rft/metrics", metrics), http.StatusBadGateway)
	if o := s.Outages(); len(o) != 1 || !o[0].Ended.IsZero() || o[0].Refused != 2 || o[0].Fault.Status != 502 {
		t.Fatalf("under way: %+v, want one open outage of 2 refused, answering 502", o)
	}
	s.SetOutage(nil)
	s.SetOutage(nil)
	wantStatus(t, "metrics", c.post("/rft/metrics", metrics), http.StatusOK)
	var marked []bool
	for _, r := range s.Requests() {
		if r.Path == "/api/v1/rft/metrics" {
			marked = append(marked, r.Outage)
		}
	}
	if fmt.Sprint(marked) != "[true true false]" {
		t.Fatalf("metrics requests marked as refused by the outage: %v, want [true true false]", marked)
	}
	s.SetOutage(&Fault{Status: 503})
	o := s.Outages()
	if len(o) != 2 || o[0].Ended.IsZero() || !o[1].Ended.IsZero() || o[1].Refused != 0 {
		t.Fatalf("after a second switch: %+v, want the first ended and the second open with nothing refused", o)
	}
}

func TestLatencyHoldsEveryRequestThenServesItNormally(t *testing.T) {
	const latency = 30 * time.Millisecond
	s, c := start(t, Options{Latency: latency})
	begin := time.Now()
	id := c.createRun()
	wantStatus(t, "metrics", c.post("/rft/metrics", `{"run_id":"`+id+`","metrics":{"step":1,"loss":1}}`), http.StatusOK)
	if took := time.Since(begin); took < 2*latency {
		t.Fatalf("two calls took %s, want at least 2 × %s", took, latency)
	}
	if r := mustRun(t, s, id); r.MetricPosts != 1 {
		t.Fatalf("MetricPosts = %d, want 1", r.MetricPosts)
	}
}

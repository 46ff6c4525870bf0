package rfttest

import (
	"net/http"
	"testing"
)

func TestFinalizeAndStatusCloseARunOnce(t *testing.T) {
	finalize := func(c *client, id string) response {
		return c.post("/rft/finalize", `{"run_id":"`+id+`","exit_code":0}`)
	}
	status := func(body string) func(c *client, id string) response {
		return func(c *client, id string) response {
			return c.call(http.MethodPut, "/rft/external-runs/"+id+"/status", body)
		}
	}
	type step struct {
		name string
		call func(c *client, id string) response
		want int
	}
	tests := []struct {
		name      string
		steps     []step
		status    string
		finalized bool
		message   string
	}{
		{"finalize completes", []step{{"finalize", finalize, 200}}, StatusCompleted, true, ""},
		{"finalize twice is a success", []step{{"finalize", finalize, 200}, {"finalize again", finalize, 200}}, StatusCompleted, true, ""},
		{"finalize after failed is a conflict", []step{
			{"fail", status(`{"status":"failed","error_message":"crashed: no telemetry for 30m0s"}`), 200},
			{"finalize", finalize, 409},
		}, StatusFailed, false, "crashed: no telemetry for 30m0s"},
		{"finalize after status completed is a conflict", []step{
			{"complete", status(`{"status":"completed"}`), 200},
			{"finalize", finalize, 409},
		}, StatusCompleted, false, ""},
		{"status after finalize is a conflict", []step{
			{"finalize", finalize, 200},
			{"fail", status(`{"status":"failed"}`), 409},
		}, StatusCompleted, true, ""},
		{"a second status is a conflict", []step{
			{"fail", status(`{"status":"failed","error_message":"cancelled: user"}`), 200},
			{"complete", status(`{"status":"completed"}`), 409},
		}, StatusFailed, false, "cancelled: user"},
		{"an unknown status is refused", []step{
			{"cancel", status(`{"status":"cancelled"}`), 400},
			{"upper case", status(`{"status":"FAILED"}`), 400},
			{"null message", status(`{"status":"failed","error_message":null}`), 400},
			{"no status", status(`{"error_message":"x"}`), 400},
		}, StatusRunning, false, ""},
		{"finalize needs an integer exit code", []step{
			{"no exit code", func(c *client, id string) response {
				return c.post("/rft/finalize", `{"run_id":"`+id+`"}`)
			}, 400},
			{"a string exit code", func(c *client, id string) response {
				return c.post("/rft/finalize", `{"run_id":"`+id+`","exit_code":"0"}`)
			}, 400},
		}, StatusRunning, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{})
			id := c.createRun()
			for _, st := range tt.steps {
				wantStatus(t, st.name, st.call(c, id), st.want)
			}
			r := mustRun(t, s, id)
			if r.Status != tt.status || r.Finalized != tt.finalized || r.ErrorMessage != tt.message {
				t.Errorf("run = %s finalized=%v message=%q; want %s finalized=%v message=%q",
					r.Status, r.Finalized, r.ErrorMessage, tt.status, tt.finalized, tt.message)
			}
		})
	}
}

func TestStatusConflictCarriesThePlatformsDetail(t *testing.T) {
	_, c := start(t, Options{})
	id := c.createRun()
	wantStatus(t, "finalize", c.post("/rft/finalize", `{"run_id":"`+id+`","exit_code":0}`), http.StatusOK)
	res := c.call(http.MethodPut, "/rft/external-runs/"+id+"/status", `{"status":"completed"}`)
	wantStatus(t, "status", res, http.StatusConflict)
	if d := res.detail(); d != "Cannot update status of run in 'COMPLETED' state." {
		t.Fatalf("detail = %q", d)
	}
}

func TestFinalizeRecordsTheExitCode(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	wantStatus(t, "finalize", c.post("/rft/finalize", `{"run_id":"`+id+`","exit_code":3}`), http.StatusOK)
	wantStatus(t, "finalize again", c.post("/rft/finalize", `{"run_id":"`+id+`","exit_code":0}`), http.StatusOK)
	if r := mustRun(t, s, id); r.ExitCode != 3 {
		t.Fatalf("ExitCode = %d, want the first finalize's 3", r.ExitCode)
	}
}

func TestAnAttachedRunTakesWritesWithoutACreate(t *testing.T) {
	s, c := start(t, Options{Prefix: "/api/internal"})
	s.AddRun("hosted-7")
	s.AddRun("hosted-7") // adding twice changes nothing
	wantStatus(t, "metrics", c.post("/rft/metrics", `{"run_id":"hosted-7","metrics":{"step":0,"loss":1}}`), http.StatusOK)
	wantStatus(t, "finalize", c.post("/rft/finalize", `{"run_id":"hosted-7","exit_code":0}`), http.StatusOK)
	runs := s.Runs()
	if len(runs) != 1 || runs[0].Spec != nil || !runs[0].Finalized || runs[0].MetricPosts != 1 {
		t.Fatalf("Runs() = %+v", runs)
	}
}

func TestUnknownRunsAre404OnEveryRoute(t *testing.T) {
	_, c := start(t, Options{})
	for _, pc := range platformCalls() {
		if pc.route == RouteCreate {
			continue
		}
		t.Run(string(pc.route), func(t *testing.T) {
			res := c.call(pc.method, pc.path, pc.body)
			wantStatus(t, string(pc.route), res, http.StatusNotFound)
			if res.detail() == "" {
				t.Errorf("no detail: %s", res.body)
			}
		})
	}
}

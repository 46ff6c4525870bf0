package rft

import (
	"context"
	"strings"
	"testing"
)

func TestCreateRunPostsTheRequestAndReturnsTheRegisteredRun(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 201, body: `{"run": {"id": "run-abc", "name": "my-run", "status": "RUNNING"}}`}))
	c, _ := newTestClient(t, srv.URL)
	run, err := c.CreateRun(context.Background(), CreateRunRequest{
		BaseModel: "Qwen/Qwen3-8B", TeamID: "team-1", Name: "my-run",
		Environments: []Environment{{ID: "primeintellect/vf-math"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if run != (Run{ID: "run-abc", Name: "my-run", Status: "RUNNING"}) {
		t.Errorf("run = %+v", run)
	}
	jsonEqual(t, srv.requests()[0].Body, `{"base_model":"Qwen/Qwen3-8B","max_steps":0,
		"environments":[{"id":"primeintellect/vf-math"}],"team_id":"team-1","name":"my-run"}`)
}

func TestCreateRunWithoutARunIDIsAProtocolErrorNamingWhatCameBack(t *testing.T) {
	tests := []struct{ name, body, says string }{
		{"no run", `{"data":{"id":"run-abc"}}`, "keys in the response: data.id"},
		{"run without id", `{"run":{"name":"my-run","status":"RUNNING"}}`, "keys in the response: run.name, run.status"},
		{"empty id", `{"run":{"id":""}}`, "run.id"},
		{"not json", `created`, "not a JSON object"},
		{"empty", ``, "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 201, body: tt.body}))
			c, _ := newTestClient(t, srv.URL)
			_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
			e := mustError(t, err)
			if e.Class != ClassProtocol || !e.Permanent() || e.StatusCode != 201 || e.Attempts != 1 {
				t.Errorf("got %#v", e)
			}
			if !strings.Contains(e.Error(), "no run.id") || !strings.Contains(e.Error(), tt.says) {
				t.Errorf("error %q does not say %q", e, tt.says)
			}
			if len(srv.requests()) != 1 {
				t.Errorf("%d requests", len(srv.requests()))
			}
		})
	}
}

func TestFinalizeAndSetStatusTreatA409AsSuccess(t *testing.T) {
	calls := map[string]func(*Client) error{
		"finalize": func(c *Client) error { return c.Finalize(context.Background(), "run-1", 0) },
		"set status": func(c *Client) error {
			return c.SetStatus(context.Background(), "run-1", StatusCompleted, "")
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 409, body: `{"detail":"Cannot update status of run in 'COMPLETED' state."}`}))
			c, _ := newTestClient(t, srv.URL)
			if err := call(c); err != nil {
				t.Errorf("409 was an error: %v", err)
			}
			if len(srv.requests()) != 1 {
				t.Errorf("%d requests", len(srv.requests()))
			}
		})
	}
}

func TestFinalizeSendsTheRunAndItsExitCodeEvenWhenZero(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200}))
	c, _ := newTestClient(t, srv.URL)
	if err := c.Finalize(context.Background(), "run-abc", 0); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, srv.requests()[0].Body, `{"run_id":"run-abc","exit_code":0}`)
}

func TestSetStatusSendsTheStatusAndLeavesAnEmptyMessageOut(t *testing.T) {
	tests := []struct {
		status  Status
		message string
		want    string
	}{
		{StatusCompleted, "", `{"status":"completed"}`},
		{StatusFailed, "crashed: no telemetry for 30m0s", `{"status":"failed","error_message":"crashed: no telemetry for 30m0s"}`},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200}))
			c, _ := newTestClient(t, srv.URL)
			if err := c.SetStatus(context.Background(), "run-abc", tt.status, tt.message); err != nil {
				t.Fatal(err)
			}
			r := srv.requests()[0]
			if r.Method != "PUT" || r.Path != "/api/v1/rft/external-runs/run-abc/status" {
				t.Errorf("sent %s %s", r.Method, r.Path)
			}
			jsonEqual(t, r.Body, tt.want)
		})
	}
}

func TestSetStatusEscapesTheRunIDInThePath(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200}))
	c, _ := newTestClient(t, srv.URL)
	if err := c.SetStatus(context.Background(), "a/b?c", StatusFailed, "x"); err != nil {
		t.Fatal(err)
	}
	if p := srv.requests()[0].Path; p != "/api/v1/rft/external-runs/a%2Fb%3Fc/status" {
		t.Errorf("path = %q", p)
	}
}

func TestCallsTheAPICannotTakeAreRefusedWithoutARequest(t *testing.T) {
	calls := map[string]func(*Client) error{
		"a status outside the API's vocabulary": func(c *Client) error {
			return c.SetStatus(context.Background(), "run-1", "cancelled", "user")
		},
		"status without a run":   func(c *Client) error { return c.SetStatus(context.Background(), "", StatusFailed, "") },
		"finalize without a run": func(c *Client) error { return c.Finalize(context.Background(), "", 0) },
		"metrics without a run": func(c *Client) error {
			return c.PostMetrics(context.Background(), "", map[string]float64{"step": 1})
		},
		"presign without a run": func(c *Client) error {
			_, err := c.Presign(context.Background(), "", 1)
			return err
		},
		"confirm without a key": func(c *Client) error { return c.Confirm(context.Background(), "run-1", 1, "") },
		"a run config that is not JSON": func(c *Client) error {
			_, err := c.CreateRun(context.Background(), CreateRunRequest{RunConfig: map[string]any{"f": func() {}}})
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200}))
			c, _ := newTestClient(t, srv.URL)
			e := mustError(t, call(c))
			if e.Class != ClassRejected || e.Attempts != 0 || !e.Permanent() || !strings.Contains(e.Error(), ": not sent: ") {
				t.Errorf("got %#v (%v)", e, e)
			}
			if len(srv.requests()) != 0 {
				t.Errorf("%d requests were sent", len(srv.requests()))
			}
		})
	}
}

package rfttest

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestCreateRegistersARunningRunAndAnswers201WithItsID(t *testing.T) {
	s, c := start(t, Options{})
	body := `{"base_model":"Qwen/Qwen3-8B","max_steps":100,
		"environments":[{"id":"primeintellect/vf-math"},{"id":"env-123","version_id":"v7"}],
		"team_id":"team-1","name":"my-run","batch_size":64,"rollouts_per_example":8,"seq_len":4096,
		"run_config":{"trainer":{"lr":1e-6}},"wandb_project":"p","wandb_entity":"e","wandb_run_name":"r"}`
	res := c.post("/rft/external-runs", body)
	wantStatus(t, "create", res, http.StatusCreated)
	want := map[string]any{"run": map[string]any{"id": "run-1", "name": "my-run", "status": "RUNNING"}}
	if got := res.json(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("answer = %v, want %v", got, want)
	}

	run := mustRun(t, s, "run-1")
	if run.Status != StatusRunning || run.Finalized {
		t.Errorf("new run: %+v", run)
	}
	if got := run.Spec["run_config"].(map[string]any)["trainer"].(map[string]any)["lr"]; got != json.Number("1e-6") {
		t.Errorf("spec run_config.trainer.lr = %#v, want the number as sent", got)
	}
	if got := run.Spec["environments"].([]any)[1].(map[string]any)["version_id"]; got != "v7" {
		t.Errorf("spec environments[1].version_id = %v", got)
	}
}

func TestEveryCreateRegistersANewRun(t *testing.T) {
	s, c := start(t, Options{})
	s.AddRun("run-2") // a hosted run already holds the next id
	first, second := c.createRun(), c.createRun()
	if first != "run-1" || second != "run-3" {
		t.Fatalf("ids %s, %s; want run-1, run-3", first, second)
	}
	var ids []string
	for _, r := range s.Runs() {
		ids = append(ids, r.ID)
	}
	if want := []string{"run-2", "run-1", "run-3"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("Runs() in order %v, want %v", ids, want)
	}
}

func TestCreateWithoutANameIsNamedAfterItsID(t *testing.T) {
	_, c := start(t, Options{})
	res := c.post("/rft/external-runs", minimalCreate)
	wantStatus(t, "create", res, http.StatusCreated)
	if name := res.json(t)["run"].(map[string]any)["name"]; name != "run-1" {
		t.Fatalf("name = %v", name)
	}
}

func TestCreateRefusesABadBodyNamingTheKey(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(m map[string]any)
		detail string
	}{
		{"no base_model", func(m map[string]any) { delete(m, "base_model") }, "base_model is required"},
		{"an empty base_model", func(m map[string]any) { m["base_model"] = "" }, "base_model must not be empty"},
		{"a numeric base_model", func(m map[string]any) { m["base_model"] = 8 }, "base_model must be a string"},
		{"no max_steps", func(m map[string]any) { delete(m, "max_steps") }, "max_steps is required"},
		{"a null max_steps", func(m map[string]any) { m["max_steps"] = nil }, "max_steps must not be null"},
		{"a string max_steps", func(m map[string]any) { m["max_steps"] = "100" }, "max_steps must be an integer"},
		{"a fractional max_steps", func(m map[string]any) { m["max_steps"] = 1.5 }, "max_steps must be an integer"},
		{"a float-spelt max_steps", func(m map[string]any) { m["max_steps"] = json.Number("100.0") }, "max_steps must be an integer"},
		{"a negative max_steps", func(m map[string]any) { m["max_steps"] = -1 }, "max_steps must not be negative"},
		{"no environments", func(m map[string]any) { delete(m, "environments") }, "environments is required"},
		{"an object for environments", func(m map[string]any) { m["environments"] = map[string]any{} }, "environments must be a list"},
		{"a string environment", func(m map[string]any) { m["environments"] = []any{"vf-math"} }, "environments[0] must be an object"},
		{"an environment without id", func(m map[string]any) { m["environments"] = []any{map[string]any{"version_id": "v1"}} }, "environments[0].id is required"},
		{"an environment with a null version_id", func(m map[string]any) {
			m["environments"] = []any{map[string]any{"id": "a"}, map[string]any{"id": "b", "version_id": nil}}
		}, "environments[1].version_id must be omitted, not null"},
		{"an environment with an unknown key", func(m map[string]any) { m["environments"] = []any{map[string]any{"id": "a", "slug": "a"}} }, "unknown key environments[0].slug"},
		{"no team_id", func(m map[string]any) { delete(m, "team_id") }, "team_id is required"},
		{"a null team_id", func(m map[string]any) { m["team_id"] = nil }, "team_id must not be null"},
		{"a numeric team_id", func(m map[string]any) { m["team_id"] = 1 }, "team_id must be a string"},
		{"a null name", func(m map[string]any) { m["name"] = nil }, "name must be omitted, not null"},
		{"a null batch_size", func(m map[string]any) { m["batch_size"] = nil }, "batch_size must be omitted, not null"},
		{"a null run_config", func(m map[string]any) { m["run_config"] = nil }, "run_config must be omitted, not null"},
		{"a list run_config", func(m map[string]any) { m["run_config"] = []any{} }, "run_config must be an object"},
		{"a null wandb_project", func(m map[string]any) { m["wandb_project"] = nil }, "wandb_project must be omitted, not null"},
		{"an unknown key", func(m map[string]any) { m["maxSteps"] = 3 }, "unknown key maxSteps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{})
			var m map[string]any
			if err := json.Unmarshal([]byte(minimalCreate), &m); err != nil {
				t.Fatal(err)
			}
			tt.edit(m)
			body, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			res := c.post("/rft/external-runs", string(body))
			wantStatus(t, "create", res, http.StatusBadRequest)
			if !strings.Contains(res.detail(), tt.detail) {
				t.Errorf("detail %q does not contain %q", res.detail(), tt.detail)
			}
			if n := len(s.Runs()); n != 0 {
				t.Errorf("a refused create registered %d runs", n)
			}
		})
	}
}

func TestCreateForATeamOutsideTheAllowListIs403(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		want    int
	}{
		{"every team allowed by default", nil, http.StatusCreated},
		{"the team is listed", []string{"team-0", "team-1"}, http.StatusCreated},
		{"the team is not listed", []string{"team-2"}, http.StatusForbidden},
		{"an empty list allows none", []string{}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{AllowedTeams: tt.allowed})
			res := c.post("/rft/external-runs", minimalCreate)
			wantStatus(t, "create", res, tt.want)
			if tt.want == http.StatusForbidden {
				if d := res.detail(); d != "External training runs are not enabled for this team" {
					t.Errorf("detail = %q", d)
				}
				if n := len(s.Runs()); n != 0 {
					t.Errorf("a forbidden create registered %d runs", n)
				}
			}
		})
	}
}

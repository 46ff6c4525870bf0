package rfttest

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// minimalEval is the smallest valid create body, for an environment env-1.
const minimalEval = `{"name":"gsm8k-0a1b2c3d","environments":[{"id":"env-1"}],"tags":[],"dataset":"gsm8k"}`

// evalRequest builds a call of the evaluations API, authenticated as the
// spec has it (Bearer only); path is under /api/v1, whatever the Prefix.
func (c *client) evalRequest(method, path, body string) *http.Request {
	c.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, c.s.URL()+"/api/v1"+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+c.s.APIKey())
	return req
}

func (c *client) eval(method, path, body string) response {
	c.t.Helper()
	return c.do(c.evalRequest(method, path, body))
}

// startEval starts a fake whose hub has gsm8k as env-1 and creates one
// evaluation on it.
func startEval(t *testing.T, opts Options) (*Server, *client, string) {
	t.Helper()
	s, c := start(t, opts)
	s.AddEnvironment(HubEnvironment{ID: "env-1", Owner: "primeintellect", Name: "gsm8k"})
	res := c.eval(http.MethodPost, "/evaluations/", minimalEval)
	wantStatus(t, "create", res, http.StatusCreated)
	id, _ := res.json(t)["evaluation_id"].(string)
	if id == "" {
		t.Fatalf("create answered without evaluation_id: %s", res.body)
	}
	return s, c, id
}

func mustEval(t *testing.T, s *Server, id string) Evaluation {
	t.Helper()
	e, ok := s.Evaluation(id)
	if !ok {
		t.Fatalf("evaluation %s does not exist", id)
	}
	return e
}

func TestResolveIsAGetOrCreateByName(t *testing.T) {
	s, c := start(t, Options{})
	known := s.AddEnvironment(HubEnvironment{Owner: "primeintellect", Name: "gsm8k"})

	res := c.eval(http.MethodPost, "/environmentshub/resolve", `{"name":"gsm8k"}`)
	wantStatus(t, "resolve a registered name", res, http.StatusOK)
	if d, _ := res.json(t)["data"].(map[string]any); d["id"] != known {
		t.Errorf("resolved to %s, want the registered %s", res.body, known)
	}

	first := c.eval(http.MethodPost, "/environmentshub/resolve", `{"name":"my-env","team_id":"team-1"}`)
	again := c.eval(http.MethodPost, "/environmentshub/resolve", `{"name":"my-env"}`)
	wantStatus(t, "resolve a new name", first, http.StatusOK)
	d1, _ := first.json(t)["data"].(map[string]any)
	d2, _ := again.json(t)["data"].(map[string]any)
	if d1["id"] == nil || d1["id"] != d2["id"] || d1["id"] == known {
		t.Errorf("a repeat resolve did not find what the first made: %s then %s", first.body, again.body)
	}
	envs := s.Environments()
	want := HubEnvironment{ID: d1["id"].(string), Name: "my-env", TeamID: "team-1", Created: true}
	if len(envs) != 2 || envs[0].Created || !reflect.DeepEqual(envs[1], want) {
		t.Errorf("Environments() = %+v, want the registered one then %+v", envs, want)
	}
}

func TestResolveRefusesASlugAndBadBodies(t *testing.T) {
	tests := []struct{ name, body, says string }{
		{"a slug", `{"name":"primeintellect/gsm8k"}`, "is a slug"},
		{"no name", `{"team_id":"team-1"}`, "name is required"},
		{"an empty name", `{"name":""}`, "name must not be empty"},
		{"a null team", `{"name":"x","team_id":null}`, "team_id must be omitted, not null"},
		{"an unknown key", `{"name":"x","owner":"me"}`, "unknown key owner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{})
			res := c.eval(http.MethodPost, "/environmentshub/resolve", tt.body)
			wantStatus(t, "resolve", res, http.StatusBadRequest)
			if !strings.Contains(res.detail(), tt.says) {
				t.Errorf("detail %q does not say %q", res.detail(), tt.says)
			}
			if len(s.Environments()) != 0 {
				t.Errorf("a refused resolve made an environment: %+v", s.Environments())
			}
		})
	}
}

func TestLookupFindsASlugAndIs404ForAnUnknownOne(t *testing.T) {
	s, c := start(t, Options{})
	id := s.AddEnvironment(HubEnvironment{Owner: "team x", Name: "vf math"})
	res := c.eval(http.MethodGet, "/environmentshub/"+url.PathEscape("team x")+"/"+url.PathEscape("vf math")+"/@latest", "")
	wantStatus(t, "lookup", res, http.StatusOK)
	if d, _ := res.json(t)["data"].(map[string]any); d["id"] != id {
		t.Errorf("lookup answered %s, want data.id %s", res.body, id)
	}
	for _, path := range []string{
		"/environmentshub/team%20x/other/@latest",  // unknown name
		"/environmentshub/other/vf%20math/@latest", // unknown owner
	} {
		res := c.eval(http.MethodGet, path, "")
		wantStatus(t, path, res, http.StatusNotFound)
		if !strings.Contains(res.detail(), "not found") {
			t.Errorf("%s: detail %q", path, res.detail())
		}
	}
	if res := c.eval(http.MethodGet, "/environmentshub/team%20x/vf%20math/@latest", `{}`); res.status != http.StatusBadRequest {
		t.Errorf("a GET with a body: %d, want 400", res.status)
	}
	if n := len(s.Environments()); n != 1 {
		t.Errorf("a lookup made environments: %d", n)
	}
}

func TestCreateRegistersARunningEvaluationPerRequest(t *testing.T) {
	s, c := start(t, Options{})
	s.AddEnvironment(HubEnvironment{ID: "env-1", Name: "gsm8k", Versions: []string{"v1", "v2"}})
	body := `{"name":"n","environments":[{"id":"env-1","version_id":"v2"}],"tags":["a"],"model_name":"m",` +
		`"dataset":"gsm8k","framework":"verifiers","description":"d","metadata":{"lr":0.5},"team_id":"team-1"}`
	res := c.eval(http.MethodPost, "/evaluations/", body)
	wantStatus(t, "create", res, http.StatusCreated)
	got := res.json(t)
	id, _ := got["evaluation_id"].(string)
	if id == "" || got["name"] != "n" || got["status"] != StatusRunning ||
		got["viewer_url"] != s.URL()+"/dashboard/evaluations/"+id {
		t.Errorf("answer %s", res.body)
	}
	wantStatus(t, "the same create again", c.eval(http.MethodPost, "/evaluations/", body), http.StatusCreated)

	evals := s.Evaluations()
	if len(evals) != 2 || evals[0].ID != id || evals[1].ID == id {
		t.Fatalf("two creates did not make two evaluations: %+v", evals)
	}
	e := evals[0]
	if e.Status != StatusRunning || e.Spec["model_name"] != "m" || e.Metadata["lr"] == nil || len(e.Samples) != 0 || e.Finalized {
		t.Errorf("evaluation %+v", e)
	}
}

func TestCreateRefusesABodyTheSpecDoesNotAllowNamingTheKey(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		status int
		says   string
	}{
		{"no name", `{"environments":[{"id":"env-1"}],"tags":[],"dataset":"d"}`, 400, "name is required"},
		{"no environments", `{"name":"n","tags":[],"dataset":"d"}`, 400, "environments is required"},
		{"no tags", `{"name":"n","environments":[{"id":"env-1"}],"dataset":"d"}`, 400, "tags is required"},
		{"no dataset", `{"name":"n","environments":[{"id":"env-1"}],"tags":[]}`, 400, "dataset is required"},
		{"empty environments", `{"name":"n","environments":[],"tags":[],"dataset":"d"}`, 400, "environments must not be empty"},
		{"an environment without id", `{"name":"n","environments":[{"version_id":"v1"}],"tags":[],"dataset":"d"}`, 400, "environments[0].id is required"},
		{"a tag that is not a string", `{"name":"n","environments":[{"id":"env-1"}],"tags":[1],"dataset":"d"}`, 400, "tags[0] must be a string"},
		{"empty metadata", `{"name":"n","environments":[{"id":"env-1"}],"tags":[],"dataset":"d","metadata":{}}`, 400, "metadata must be omitted when empty"},
		{"a null optional", `{"name":"n","environments":[{"id":"env-1"}],"tags":[],"dataset":"d","model_name":null}`, 400, "model_name must be omitted, not null"},
		{"a summary in the create", `{"name":"n","environments":[{"id":"env-1"}],"tags":[],"dataset":"d","metrics":{}}`, 400, "unknown key metrics"},
		{"an unknown environment", `{"name":"n","environments":[{"id":"env-1"},{"id":"env-9"}],"tags":[],"dataset":"d"}`, 404, "env-9 not found (environments[1].id)"},
		{"a version the environment lacks", `{"name":"n","environments":[{"id":"env-1","version_id":"v3"}],"tags":[],"dataset":"d"}`, 404, "no version v3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{})
			s.AddEnvironment(HubEnvironment{ID: "env-1", Name: "gsm8k", Versions: []string{"v1"}})
			res := c.eval(http.MethodPost, "/evaluations/", tt.body)
			wantStatus(t, "create", res, tt.status)
			if !strings.Contains(res.detail(), tt.says) {
				t.Errorf("detail %q does not say %q", res.detail(), tt.says)
			}
			if n := len(s.Evaluations()); n != 0 {
				t.Errorf("a refused create made %d evaluations", n)
			}
		})
	}
}

func TestCreateWithoutTheTrailingSlashIsRedirectedAndCreatesNothing(t *testing.T) {
	s, c := start(t, Options{})
	s.AddEnvironment(HubEnvironment{ID: "env-1", Name: "gsm8k"})
	res := c.eval(http.MethodPost, "/evaluations", minimalEval)
	wantStatus(t, "create without the slash", res, http.StatusTemporaryRedirect)
	if loc := res.header.Get("Location"); loc != s.URL()+"/api/v1/evaluations/" {
		t.Errorf("Location %q", loc)
	}
	if n := len(s.Evaluations()); n != 0 {
		t.Errorf("%d evaluations", n)
	}
}

func TestEvaluationRoutesAreUnderAPIV1WhateverThePrefix(t *testing.T) {
	s, c := start(t, Options{Prefix: "/api/internal"})
	s.AddEnvironment(HubEnvironment{ID: "env-1", Name: "gsm8k"})
	req := c.evalRequest(http.MethodPost, "/evaluations/", minimalEval)
	req.URL.Path = "/api/internal/evaluations/"
	wantStatus(t, "create on the internal router", c.do(req), http.StatusNotFound)
	wantStatus(t, "create on /api/v1", c.eval(http.MethodPost, "/evaluations/", minimalEval), http.StatusCreated)
	if n := len(s.Evaluations()); n != 1 {
		t.Errorf("%d evaluations, want 1", n)
	}
}

// evalCalls is one valid call per route of the evaluations API, against
// eval-1 and env-1 (primeintellect/gsm8k).
func evalCalls() []platformCall {
	return []platformCall{
		{RouteEnvResolve, http.MethodPost, "/environmentshub/resolve", `{"name":"gsm8k"}`},
		{RouteEnvLookup, http.MethodGet, "/environmentshub/primeintellect/gsm8k/@latest", ""},
		{RouteEvalCreate, http.MethodPost, "/evaluations/", minimalEval},
		{RouteEvalSamples, http.MethodPost, "/evaluations/eval-1/samples", `{"samples":[{"sample_id":"a"}]}`},
		{RouteEvalUpdate, http.MethodPut, "/evaluations/eval-1", `{"metrics":{"avg_reward":0.5}}`},
		{RouteEvalUpdate, http.MethodPut, "/evaluations/eval-1", `{"status":"FAILED"}`},
		{RouteEvalFinalize, http.MethodPost, "/evaluations/eval-1/finalize", `{"metrics":{}}`},
	}
}

func TestEveryEvaluationRouteTakesTheKeyAsABearerTokenOnly(t *testing.T) {
	headers := []struct {
		name          string
		authorization string
		apiKey        string
		status        int
	}{
		{"the Bearer token alone", "Bearer test-key", "", 0},
		{"no headers", "", "", http.StatusUnauthorized},
		{"only x-api-key", "", "test-key", http.StatusUnauthorized},
		{"a wrong Bearer token", "Bearer wrong-secret-value", "test-key", http.StatusUnauthorized},
	}
	for _, ec := range evalCalls() {
		for _, h := range headers {
			t.Run(string(ec.route)+"/"+h.name, func(t *testing.T) {
				s, c := start(t, Options{})
				s.AddEnvironment(HubEnvironment{ID: "env-1", Owner: "primeintellect", Name: "gsm8k"})
				s.AddEvaluation("eval-1")
				req := c.evalRequest(ec.method, ec.path, ec.body)
				req.Header.Del("Authorization")
				if h.authorization != "" {
					req.Header.Set("Authorization", h.authorization)
				}
				if h.apiKey != "" {
					req.Header.Set("x-api-key", h.apiKey)
				}
				res := c.do(req)
				if h.status == 0 {
					if res.status < 200 || res.status > 299 {
						t.Fatalf("a valid call: %d %s", res.status, res.body)
					}
					return
				}
				wantStatus(t, "call", res, h.status)
				if strings.Contains(string(res.body), "test-key") || strings.Contains(string(res.body), "wrong-secret") {
					t.Errorf("the error body echoes a key: %s", res.body)
				}
				if e := mustEval(t, s, "eval-1"); len(s.Evaluations()) != 1 || e.Status != StatusRunning || len(e.Samples) != 0 || len(e.Updates) != 0 {
					t.Errorf("an unauthenticated call changed state: %+v", s.Evaluations())
				}
			})
		}
	}
}

func TestEvaluationBodiesMustBeCompactJSON(t *testing.T) {
	for _, ec := range evalCalls() {
		if ec.body == "" {
			continue
		}
		t.Run(string(ec.route), func(t *testing.T) {
			s, c := start(t, Options{})
			s.AddEnvironment(HubEnvironment{ID: "env-1", Owner: "primeintellect", Name: "gsm8k"})
			s.AddEvaluation("eval-1")
			res := c.eval(ec.method, ec.path, strings.Replace(ec.body, ":", ": ", 1))
			wantStatus(t, "a spaced body", res, http.StatusBadRequest)
			if !strings.Contains(res.detail(), "compact") {
				t.Errorf("detail %q", res.detail())
			}
		})
	}
}

func TestUnknownEvaluationsAre404OnEveryRouteThatNamesOne(t *testing.T) {
	_, c := start(t, Options{})
	for _, ec := range evalCalls() {
		if !strings.Contains(ec.path, "eval-1") {
			continue
		}
		t.Run(string(ec.route)+ec.body, func(t *testing.T) {
			res := c.eval(ec.method, ec.path, ec.body)
			wantStatus(t, string(ec.route), res, http.StatusNotFound)
			if !strings.Contains(res.detail(), "Evaluation eval-1 not found") {
				t.Errorf("detail %q", res.detail())
			}
		})
	}
}

func TestSamplesAreAppendedInOrderDuplicatesIncluded(t *testing.T) {
	s, c, id := startEval(t, Options{})
	path := "/evaluations/" + id + "/samples"
	wantStatus(t, "first", c.eval(http.MethodPost, path, `{"samples":[{"sample_id":"a","reward":1},{"sample_id":7}]}`), http.StatusOK)
	wantStatus(t, "second", c.eval(http.MethodPost, path, `{"samples":[{"sample_id":"a","reward":1}]}`), http.StatusOK)
	e := mustEval(t, s, id)
	var ids []any
	for _, smp := range e.Samples {
		ids = append(ids, smp["sample_id"])
	}
	if len(ids) != 3 || ids[0] != "a" || ids[1] == nil || ids[2] != "a" || !reflect.DeepEqual(e.Appends, []int{2, 1}) {
		t.Errorf("samples %v, appends %v; want a, 7, a in two appends of 2 and 1", ids, e.Appends)
	}
}

func TestSamplesTheSpecDoesNotAllowAreRefused(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		status int
		says   string
	}{
		{"no samples key", `{}`, 400, "samples is required"},
		{"an empty list", `{"samples":[]}`, 400, "samples must not be empty"},
		{"a sample that is not an object", `{"samples":[{"sample_id":"a"},[1]]}`, 400, "samples[1] must be an object"},
		{"a sample without sample_id", `{"samples":[{"reward":1}]}`, 400, "samples[0].sample_id is required"},
		{"an empty sample_id", `{"samples":[{"sample_id":""}]}`, 400, "samples[0].sample_id must be"},
		{"a fractional sample_id", `{"samples":[{"sample_id":1.5}]}`, 400, "samples[0].sample_id must be"},
		{"an extra key", `{"samples":[{"sample_id":"a"}],"evaluation_id":"x"}`, 400, "unknown key evaluation_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c, id := startEval(t, Options{})
			res := c.eval(http.MethodPost, "/evaluations/"+id+"/samples", tt.body)
			wantStatus(t, "append", res, tt.status)
			if !strings.Contains(res.detail(), tt.says) {
				t.Errorf("detail %q does not say %q", res.detail(), tt.says)
			}
			if e := mustEval(t, s, id); len(e.Samples) != 0 {
				t.Errorf("a refused append stored %d samples", len(e.Samples))
			}
		})
	}
}

func TestASamplesRequestOver25MiBIsRefusedAndOneAtTheLimitIsNot(t *testing.T) {
	s, c, id := startEval(t, Options{})
	path := "/evaluations/" + id + "/samples"
	const limit = 25 << 20
	frame := `{"samples":[{"sample_id":"a","pad":""}]}`
	exact := strings.Replace(frame, `"pad":""`, `"pad":"`+strings.Repeat("x", limit-len(frame))+`"`, 1)
	if len(exact) != limit {
		t.Fatalf("built %d bytes", len(exact))
	}
	wantStatus(t, "a request of exactly 25 MiB", c.eval(http.MethodPost, path, exact), http.StatusOK)
	over := strings.Replace(exact, `"pad":"`, `"pad":"x`, 1)
	res := c.eval(http.MethodPost, path, over)
	wantStatus(t, "a request one byte over", res, http.StatusRequestEntityTooLarge)
	if e := mustEval(t, s, id); len(e.Samples) != 1 {
		t.Errorf("%d samples stored, want the one at the limit", len(e.Samples))
	}
}

func TestAnUpdateReplacesTheMetadataAndKeepsTheSummaryHistory(t *testing.T) {
	s, c := start(t, Options{})
	s.AddEnvironment(HubEnvironment{ID: "env-1", Name: "gsm8k"})
	res := c.eval(http.MethodPost, "/evaluations/", `{"name":"n","environments":[{"id":"env-1"}],"tags":[],"dataset":"gsm8k","metadata":{"a":1,"b":2}}`)
	wantStatus(t, "create", res, http.StatusCreated)
	id := res.json(t)["evaluation_id"].(string)
	path := "/evaluations/" + id

	wantStatus(t, "metadata", c.eval(http.MethodPut, path, `{"metadata":{"c":3}}`), http.StatusOK)
	wantStatus(t, "summary", c.eval(http.MethodPut, path, `{"metrics":{"avg_reward":0.5,"avg_metrics":{"acc":1}}}`), http.StatusOK)
	wantStatus(t, "both", c.eval(http.MethodPut, path, `{"metadata":{"d":4},"metrics":{"avg_reward":0.75}}`), http.StatusOK)

	e := mustEval(t, s, id)
	if len(e.Metadata) != 1 || e.Metadata["d"] == nil {
		t.Errorf("Metadata = %v: an update must replace the whole document", e.Metadata)
	}
	if len(e.Summary) != 1 || e.Summary["avg_reward"] == nil {
		t.Errorf("Summary = %v, want the last one sent", e.Summary)
	}
	if len(e.Updates) != 3 || e.Updates[0].Metrics != nil || e.Updates[1].Metadata != nil ||
		e.Updates[1].Metrics["avg_metrics"] == nil || e.Updates[2].Route != RouteEvalUpdate {
		t.Errorf("Updates = %+v", e.Updates)
	}
	if e.Status != StatusRunning {
		t.Errorf("an update closed the evaluation: %s", e.Status)
	}
}

func TestUpdatesTheSpecDoesNotAllowAreRefused(t *testing.T) {
	tests := []struct{ name, body, says string }{
		{"an empty body", `{}`, "neither metadata nor metrics"},
		{"empty metadata", `{"metadata":{},"metrics":{"a":1}}`, "metadata must be omitted when empty"},
		{"empty metrics", `{"metrics":{}}`, "metrics must be omitted when empty"},
		{"a number out of range", `{"metrics":{"avg_metrics":{"x":1e999}}}`, "metrics.avg_metrics.x is not a finite number"},
		{"a status with metadata", `{"status":"FAILED","metadata":{"a":1}}`, "unknown key metadata"},
		{"a lowercase status", `{"status":"failed"}`, "status must be 'FAILED' or 'CANCELLED'"},
		{"completed through the status", `{"status":"COMPLETED"}`, "status must be 'FAILED' or 'CANCELLED'"},
		{"a message over 4096 characters", `{"status":"FAILED","error_message":"` + strings.Repeat("é", 4097) + `"}`, "4097 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c, id := startEval(t, Options{})
			res := c.eval(http.MethodPut, "/evaluations/"+id, tt.body)
			wantStatus(t, "update", res, http.StatusBadRequest)
			if !strings.Contains(res.detail(), tt.says) {
				t.Errorf("detail %q does not say %q", res.detail(), tt.says)
			}
			if e := mustEval(t, s, id); len(e.Updates) != 0 || e.Status != StatusRunning {
				t.Errorf("a refused update changed the evaluation: %+v", e)
			}
		})
	}
}

func TestAStatusUpdateClosesTheEvaluationOnceAndA409AnswersTheNext(t *testing.T) {
	for _, status := range []string{StatusFailed, StatusCancelled} {
		t.Run(status, func(t *testing.T) {
			s, c, id := startEval(t, Options{})
			msg := strings.Repeat("é", 4096) // 4,096 characters, 8,192 bytes: at the limit
			body := `{"status":"` + status + `","error_message":"` + msg + `"}`
			wantStatus(t, "status", c.eval(http.MethodPut, "/evaluations/"+id, body), http.StatusOK)
			res := c.eval(http.MethodPut, "/evaluations/"+id, `{"status":"FAILED"}`)
			wantStatus(t, "status again", res, http.StatusConflict)
			if !strings.Contains(res.detail(), "in '"+status+"' state") {
				t.Errorf("detail %q", res.detail())
			}
			if e := mustEval(t, s, id); e.Status != status || e.ErrorMessage != msg || e.Finalized {
				t.Errorf("evaluation %s, message of %d bytes, finalized %v", e.Status, len(e.ErrorMessage), e.Finalized)
			}
		})
	}
}

func TestFinalizeCompletesOnceWithTheSummaryAndAClosedEvaluationRefusesWrites(t *testing.T) {
	s, c, id := startEval(t, Options{})
	path := "/evaluations/" + id
	wantStatus(t, "summary", c.eval(http.MethodPut, path, `{"metrics":{"avg_reward":0.5}}`), http.StatusOK)
	res := c.eval(http.MethodPost, path+"/finalize", `{"metrics":{"avg_reward":0.5,"avg_error":0}}`)
	wantStatus(t, "finalize", res, http.StatusOK)
	if res.json(t)["status"] != StatusCompleted {
		t.Errorf("answer %s", res.body)
	}
	closed := []struct{ method, path, body string }{
		{http.MethodPost, path + "/finalize", `{"metrics":{}}`},
		{http.MethodPost, path + "/samples", `{"samples":[{"sample_id":"a"}]}`},
		{http.MethodPut, path, `{"metrics":{"avg_reward":1}}`},
		{http.MethodPut, path, `{"status":"FAILED"}`},
	}
	for _, w := range closed {
		res := c.eval(w.method, w.path, w.body)
		wantStatus(t, w.path+" "+w.body+" after finalize", res, http.StatusConflict)
		if !strings.Contains(res.detail(), "evaluation in 'COMPLETED' state") {
			t.Errorf("detail %q", res.detail())
		}
	}
	e := mustEval(t, s, id)
	if e.Status != StatusCompleted || !e.Finalized || len(e.Samples) != 0 {
		t.Errorf("evaluation %+v", e)
	}
	if len(e.Updates) != 2 || e.Updates[1].Route != RouteEvalFinalize || len(e.Summary) != 2 || e.Summary["avg_error"] == nil {
		t.Errorf("Updates %+v, Summary %v: the finalize's summary must be last", e.Updates, e.Summary)
	}
}

func TestFinalizeNeedsItsMetricsEvenWhenEmpty(t *testing.T) {
	s, c, id := startEval(t, Options{})
	res := c.eval(http.MethodPost, "/evaluations/"+id+"/finalize", `{}`)
	wantStatus(t, "finalize without metrics", res, http.StatusBadRequest)
	if !strings.Contains(res.detail(), "metrics is required") {
		t.Errorf("detail %q", res.detail())
	}
	wantStatus(t, "finalize with {}", c.eval(http.MethodPost, "/evaluations/"+id+"/finalize", `{"metrics":{}}`), http.StatusOK)
	if e := mustEval(t, s, id); !e.Finalized || e.Summary == nil || len(e.Summary) != 0 {
		t.Errorf("evaluation %+v", e)
	}
}

func TestAnAddedEvaluationTakesWritesWithoutACreate(t *testing.T) {
	s, c := start(t, Options{})
	s.AddEvaluation("hosted/7")
	s.AddEvaluation("hosted/7") // adding twice changes nothing
	esc := "/evaluations/" + url.PathEscape("hosted/7")
	wantStatus(t, "append", c.eval(http.MethodPost, esc+"/samples", `{"samples":[{"sample_id":"a"}]}`), http.StatusOK)
	wantStatus(t, "finalize", c.eval(http.MethodPost, esc+"/finalize", `{"metrics":{}}`), http.StatusOK)
	evals := s.Evaluations()
	if len(evals) != 1 || evals[0].Spec != nil || !evals[0].Finalized || len(evals[0].Samples) != 1 {
		t.Fatalf("Evaluations() = %+v", evals)
	}
}

func TestFaultsOnEvaluationRoutesAreConsumedByTheirRoute(t *testing.T) {
	s, c, id := startEval(t, Options{})
	s.Inject(RouteEvalSamples, Fault{Status: http.StatusBadGateway, AfterProcessing: true})
	s.Inject(RouteEvalUpdate, Fault{Status: http.StatusTooManyRequests, RetryAfter: "3"})

	res := c.eval(http.MethodPost, "/evaluations/"+id+"/samples", `{"samples":[{"sample_id":"a"}]}`)
	wantStatus(t, "append through a lost answer", res, http.StatusBadGateway)
	if e := mustEval(t, s, id); len(e.Samples) != 1 {
		t.Errorf("the append behind the 502 stored %d samples, want 1", len(e.Samples))
	}
	// Route 6b shares route 5's method and path, so it takes its faults.
	res = c.eval(http.MethodPut, "/evaluations/"+id, `{"status":"CANCELLED"}`)
	wantStatus(t, "status through a 429", res, http.StatusTooManyRequests)
	if res.header.Get("Retry-After") != "3" {
		t.Errorf("Retry-After %q", res.header.Get("Retry-After"))
	}
	if e := mustEval(t, s, id); e.Status != StatusRunning {
		t.Errorf("a fault without AfterProcessing was processed: %s", e.Status)
	}
	if s.PendingFaults(RouteEvalSamples)+s.PendingFaults(RouteEvalUpdate) != 0 {
		t.Error("faults left")
	}
}

func TestEvaluationSnapshotsShareNothingWithTheServer(t *testing.T) {
	s, c := start(t, Options{})
	s.AddEnvironment(HubEnvironment{ID: "env-1", Name: "gsm8k", Versions: []string{"v1"}})
	res := c.eval(http.MethodPost, "/evaluations/", `{"name":"n","environments":[{"id":"env-1"}],"tags":[],"dataset":"gsm8k","metadata":{"a":{"b":1}}}`)
	id := res.json(t)["evaluation_id"].(string)
	wantStatus(t, "append", c.eval(http.MethodPost, "/evaluations/"+id+"/samples", `{"samples":[{"sample_id":"a","info":{"k":1}}]}`), http.StatusOK)
	wantStatus(t, "update", c.eval(http.MethodPut, "/evaluations/"+id, `{"metrics":{"avg_metrics":{"acc":1}}}`), http.StatusOK)

	e := mustEval(t, s, id)
	e.Spec["name"] = "changed"
	e.Metadata["a"].(map[string]any)["b"] = "changed"
	e.Samples[0]["info"].(map[string]any)["k"] = "changed"
	e.Summary["avg_metrics"].(map[string]any)["acc"] = "changed"
	e.Updates[0].Metrics["avg_metrics"].(map[string]any)["acc"] = "changed"
	e.Appends[0] = 99
	envs := s.Environments()
	envs[0].Versions[0] = "changed"

	again := mustEval(t, s, id)
	if again.Spec["name"] != "n" || again.Metadata["a"].(map[string]any)["b"] == "changed" ||
		again.Samples[0]["info"].(map[string]any)["k"] == "changed" ||
		again.Summary["avg_metrics"].(map[string]any)["acc"] == "changed" ||
		again.Updates[0].Metrics["avg_metrics"].(map[string]any)["acc"] == "changed" || again.Appends[0] != 1 {
		t.Errorf("a snapshot shares state with the server: %+v", again)
	}
	if s.Environments()[0].Versions[0] != "v1" {
		t.Error("Environments() shares Versions with the server")
	}
}

func TestAddEnvironmentPanicsOnAnEnvironmentATestCannotTrust(t *testing.T) {
	tests := []struct {
		name string
		env  HubEnvironment
	}{
		{"no name", HubEnvironment{ID: "env-9", Owner: "o"}},
		{"a taken id", HubEnvironment{ID: "env-1", Name: "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := start(t, Options{})
			s.AddEnvironment(HubEnvironment{ID: "env-1", Name: "gsm8k"})
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			s.AddEnvironment(tt.env)
		})
	}
}

package rft

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// evalRoutes drives each route of the evaluations API generically, with
// its replay rule as evals-api.md's route table states it.
func evalRoutes() []routeCase {
	ok := reply{status: 200, body: `{}`}
	return []routeCase{
		{
			name: "1 resolve environment", op: opResolveEnv, method: http.MethodPost, path: "/api/v1/environmentshub/resolve", replayable: true,
			ok: reply{status: 200, body: `{"data":{"id":"env-1"}}`},
			call: func(ctx context.Context, c *Client) error {
				_, err := c.ResolveEnvironment(ctx, "gsm8k", "")
				return err
			},
		},
		{
			name: "2 look up environment", op: opLookupEnv, method: http.MethodGet, path: "/api/v1/environmentshub/primeintellect/gsm8k/@latest", replayable: true,
			ok: reply{status: 200, body: `{"data":{"id":"env-1"}}`},
			call: func(ctx context.Context, c *Client) error {
				_, err := c.LookupEnvironment(ctx, "primeintellect", "gsm8k")
				return err
			},
		},
		{
			name: "3 create evaluation", op: opCreateEval, method: http.MethodPost, path: "/api/v1/evaluations/",
			ok: reply{status: 201, body: `{"evaluation_id":"eval-1","name":"n","status":"RUNNING"}`},
			call: func(ctx context.Context, c *Client) error {
				_, err := c.CreateEvaluation(ctx, CreateEvaluationRequest{Name: "n", Environments: []Environment{{ID: "env-1"}}, Dataset: "gsm8k"})
				return err
			},
		},
		{
			name: "4 append samples", op: opAppendSamples, method: http.MethodPost, path: "/api/v1/evaluations/eval-1/samples",
			ok: ok,
			call: func(ctx context.Context, c *Client) error {
				return c.AppendSamples(ctx, "eval-1", []json.RawMessage{json.RawMessage(`{"sample_id":"a"}`)})
			},
		},
		{
			name: "5 update evaluation", op: opUpdateEval, method: http.MethodPut, path: "/api/v1/evaluations/eval-1", replayable: true,
			ok: ok,
			call: func(ctx context.Context, c *Client) error {
				return c.UpdateEvaluation(ctx, "eval-1", map[string]any{"lr": 0.5}, map[string]any{"avg_reward": 0.5})
			},
		},
		{
			name: "6a finalize evaluation", op: opFinalizeEval, method: http.MethodPost, path: "/api/v1/evaluations/eval-1/finalize",
			ok: ok,
			call: func(ctx context.Context, c *Client) error {
				return c.FinalizeEvaluation(ctx, "eval-1", map[string]any{"avg_reward": 0.5})
			},
		},
		{
			name: "6b set evaluation status", op: opEvalStatus, method: http.MethodPut, path: "/api/v1/evaluations/eval-1", replayable: true,
			ok: ok,
			call: func(ctx context.Context, c *Client) error {
				return c.SetEvaluationStatus(ctx, "eval-1", EvaluationFailed, "boom")
			},
		},
	}
}

func TestEachEvaluationRouteSendsItsMethodPathAndOnlyTheSpecsHeaders(t *testing.T) {
	for _, rc := range evalRoutes() {
		t.Run(rc.name, func(t *testing.T) {
			srv := newFakeServer(t, always(rc.ok))
			c, _ := newTestClient(t, srv.URL)
			if err := rc.call(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.Method != rc.method || r.Path != rc.path {
				t.Errorf("%s %s, want %s %s", r.Method, r.Path, rc.method, rc.path)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("Authorization %q", got)
			}
			if _, ok := r.Header["X-Api-Key"]; ok {
				t.Error("x-api-key sent: the evaluations API takes the key as a Bearer token only")
			}
			wantType := "application/json"
			if rc.method == http.MethodGet {
				wantType = ""
			}
			if got := r.Header.Get("Content-Type"); got != wantType {
				t.Errorf("Content-Type %q, want %q", got, wantType)
			}
			if rc.method == http.MethodGet && len(r.Body) != 0 {
				t.Errorf("a GET with a body: %q", r.Body)
			}
			if rc.method != http.MethodGet && !json.Valid(r.Body) {
				t.Errorf("body %q is not JSON", r.Body)
			}
		})
	}
}

func TestEvaluationRoutesAreRetriedInPlaceExactlyAsTheirReplayRuleSays(t *testing.T) {
	failures := []struct {
		name      string
		reply     reply
		ambiguous bool // retried only on replayable routes
	}{
		{"429", reply{status: 429}, false},
		{"502", reply{status: 502}, true},
		{"503", reply{status: 503}, true},
		{"504", reply{status: 504}, true},
		{"a dropped connection after the request was sent", reply{hijack: true}, true},
	}
	for _, rc := range evalRoutes() {
		for _, f := range failures {
			t.Run(rc.name+"/"+f.name, func(t *testing.T) {
				srv := newFakeServer(t, failThen(f.reply, 1, rc.ok))
				c, _ := newTestClient(t, srv.URL)
				err := rc.call(context.Background(), c)
				n := len(srv.requests())
				if !f.ambiguous || rc.replayable {
					if err != nil || n != 2 {
						t.Fatalf("%d requests, error %v; want a retry that succeeds", n, err)
					}
					return
				}
				e := mustError(t, err)
				if n != 1 {
					t.Fatalf("%d requests: a route that is not replayable was sent again after an ambiguous failure", n)
				}
				if !e.Ambiguous() || !e.Retryable() || e.Attempts != 1 || e.Op != rc.op {
					t.Errorf("Ambiguous=%v Retryable=%v Attempts=%d Op=%q", e.Ambiguous(), e.Retryable(), e.Attempts, e.Op)
				}
			})
		}
	}
}

func TestEveryEvaluationRouteIsRetriedWhenTheRequestWasNeverSent(t *testing.T) {
	for _, rc := range evalRoutes() {
		t.Run(rc.name, func(t *testing.T) {
			c, sl := newTestClient(t, "http://"+closedAddr(t))
			e := mustError(t, rc.call(context.Background(), c))
			if e.Class != ClassTransportUnsent || e.Attempts != 5 || len(sl.waits()) != 4 {
				t.Errorf("class %v, %d attempts, waits %v; want 5 attempts", e.Class, e.Attempts, sl.waits())
			}
		})
	}
}

func TestEvaluationRoutesAreNotRetriedOnARefusalAndKeepTheKeyOutOfTheError(t *testing.T) {
	codes := map[int]Class{400: ClassRejected, 401: ClassUnauthorized, 403: ClassForbidden, 404: ClassNotFound, 422: ClassRejected}
	for _, rc := range evalRoutes() {
		for code, class := range codes {
			t.Run(fmt.Sprint(rc.name, "/", code), func(t *testing.T) {
				srv := newFakeServer(t, always(reply{status: code, body: `{"detail":"bad key ` + testKey + `"}`}))
				c, sl := newTestClient(t, srv.URL)
				e := mustError(t, rc.call(context.Background(), c))
				if e.Class != class || !e.Permanent() || len(srv.requests()) != 1 || len(sl.waits()) != 0 {
					t.Errorf("class %v, permanent %v, %d requests", e.Class, e.Permanent(), len(srv.requests()))
				}
				if strings.Contains(e.Error(), testKey) || !strings.Contains(e.Error(), "[REDACTED]") {
					t.Errorf("error %q: the key must be scrubbed", e)
				}
			})
		}
	}
}

func TestEvaluationRoutesHonourRetryAfter(t *testing.T) {
	for _, rc := range evalRoutes() {
		t.Run(rc.name, func(t *testing.T) {
			srv := newFakeServer(t, failThen(reply{status: 429, header: map[string]string{"Retry-After": "7"}}, 1, rc.ok))
			c, sl := newTestClient(t, srv.URL)
			if err := rc.call(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if w := sl.waits(); !reflect.DeepEqual(w, []time.Duration{7 * time.Second}) {
				t.Errorf("waited %v, want the server's 7s", w)
			}
		})
	}
}

func TestAHostedClientSendsEvaluationsToTheAPIV1Router(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 201, body: `{"evaluation_id":"eval-1"}`}))
	c, _ := newTestClient(t, srv.URL+"/api/internal/rft")
	if _, err := c.CreateEvaluation(context.Background(), CreateEvaluationRequest{Name: "n", Environments: []Environment{{ID: "e"}}, Dataset: "d"}); err != nil {
		t.Fatal(err)
	}
	if p := srv.requests()[0].Path; p != "/api/v1/evaluations/" {
		t.Errorf("path %s: the internal router serves training only", p)
	}
	if c.APIPrefix() != srv.URL+"/api/internal" {
		t.Errorf("the training prefix changed: %s", c.APIPrefix())
	}
}

func TestCreateEvaluationSendsTheSpecsBodyAndReturnsTheEvaluation(t *testing.T) {
	tests := []struct {
		name string
		req  CreateEvaluationRequest
		want string
	}{
		{"required keys only, tags as []", CreateEvaluationRequest{Name: "gsm8k-0a1b2c3d", Environments: []Environment{{ID: "env-1"}}, Dataset: "gsm8k"},
			`{"name":"gsm8k-0a1b2c3d","environments":[{"id":"env-1"}],"tags":[],"dataset":"gsm8k"}`},
		{"every key", CreateEvaluationRequest{
			Name: "n", Environments: []Environment{{ID: "env-1", VersionID: "v1"}, {ID: "env-2"}}, Tags: []string{"a", "b"},
			ModelName: "m", Dataset: "gsm8k", Framework: "verifiers", Description: "d",
			Metadata: map[string]any{"lr": 0.5}, TeamID: "team-1",
		}, `{"name":"n","environments":[{"id":"env-1","version_id":"v1"},{"id":"env-2"}],"tags":["a","b"],"model_name":"m",
			"dataset":"gsm8k","framework":"verifiers","description":"d","metadata":{"lr":0.5},"team_id":"team-1"}`},
		{"empty metadata is left out", CreateEvaluationRequest{Name: "n", Environments: []Environment{{ID: "e"}}, Dataset: "d", Metadata: map[string]any{}, Tags: []string{}},
			`{"name":"n","environments":[{"id":"e"}],"tags":[],"dataset":"d"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 201, body: `{"evaluation_id":"eval-9","name":"n","status":"RUNNING","viewer_url":"https://app/x","created_at":"t"}`}))
			c, _ := newTestClient(t, srv.URL)
			ev, err := c.CreateEvaluation(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if ev != (Evaluation{ID: "eval-9", Name: "n", Status: "RUNNING", ViewerURL: "https://app/x"}) {
				t.Errorf("evaluation %+v", ev)
			}
			jsonEqual(t, srv.requests()[0].Body, tt.want)
		})
	}
}

func TestCreateEvaluationRefusesAnIncompleteRequestBeforeSending(t *testing.T) {
	envs := []Environment{{ID: "env-1"}}
	tests := []struct {
		name string
		req  CreateEvaluationRequest
		says string
	}{
		{"no name", CreateEvaluationRequest{Environments: envs, Dataset: "d"}, "name is empty"},
		{"no environments", CreateEvaluationRequest{Name: "n", Dataset: "d"}, "no environments"},
		{"an unresolved environment", CreateEvaluationRequest{Name: "n", Environments: []Environment{{ID: "e"}, {VersionID: "v1"}}, Dataset: "d"}, "environments[1] has no id"},
		{"no dataset", CreateEvaluationRequest{Name: "n", Environments: envs}, "dataset is empty"},
		{"metadata JSON cannot carry", CreateEvaluationRequest{Name: "n", Environments: envs, Dataset: "d", Metadata: map[string]any{"x": math.NaN()}}, "cannot encode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 201}))
			c, _ := newTestClient(t, srv.URL)
			_, err := c.CreateEvaluation(context.Background(), tt.req)
			e := mustError(t, err)
			if e.Class != ClassRejected || e.Attempts != 0 || !strings.Contains(e.Error(), tt.says) {
				t.Errorf("got %v (class %v); want a refusal saying %q", e, e.Class, tt.says)
			}
			if n := len(srv.requests()); n != 0 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

func TestAnAnswerWithoutTheIDTheSpecUsesIsAProtocolErrorNamingWhatCameBack(t *testing.T) {
	tests := []struct {
		name string
		body string
		call func(*Client) error
		says string
	}{
		{"create without evaluation_id", `{"id":"eval-1","status":"RUNNING"}`, func(c *Client) error {
			_, err := c.CreateEvaluation(context.Background(), CreateEvaluationRequest{Name: "n", Environments: []Environment{{ID: "e"}}, Dataset: "d"})
			return err
		}, "no evaluation_id (keys in the response: id, status)"},
		{"create with evaluation_id in an envelope", `{"data":{"evaluation_id":"eval-1"}}`, func(c *Client) error {
			_, err := c.CreateEvaluation(context.Background(), CreateEvaluationRequest{Name: "n", Environments: []Environment{{ID: "e"}}, Dataset: "d"})
			return err
		}, "no evaluation_id (keys in the response: data.evaluation_id)"},
		{"resolve with a top-level id only", `{"id":"env-1"}`, func(c *Client) error {
			_, err := c.ResolveEnvironment(context.Background(), "gsm8k", "")
			return err
		}, "no data.id (keys in the response: id)"},
		{"lookup with neither", `{"data":{"name":"gsm8k"}}`, func(c *Client) error {
			_, err := c.LookupEnvironment(context.Background(), "o", "n")
			return err
		}, "no data.id and no id (keys in the response: data.name)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200, body: tt.body}))
			c, _ := newTestClient(t, srv.URL)
			e := mustError(t, tt.call(c))
			if e.Class != ClassProtocol || !e.Permanent() || !strings.Contains(e.Error(), tt.says) {
				t.Errorf("got %v (class %v); want a protocol error saying %q", e, e.Class, tt.says)
			}
		})
	}
}

func TestLookupEnvironmentReadsDataIDElseTheTopLevelID(t *testing.T) {
	tests := map[string]string{
		`{"data":{"id":"env-1","name":"gsm8k"}}`:   "env-1",
		`{"id":"env-1","owner":"primeintellect"}`:  "env-1",
		`{"data":{"id":"env-1"},"id":"other"}`:     "env-1",
		`{"data":null,"id":"env-1"}`:               "env-1",
		`{"data":[{"id":"other"}],"id":"env-1"}`:   "env-1",
		`{"data":{"name":"gsm8k"},"id":"env-1"}`:   "env-1",
		`{"data":{"id":""},"id":"env-1"}`:          "env-1",
		`{"data":{"id":"env-1","version":"v3"}}  `: "env-1",
	}
	for body, want := range tests {
		t.Run(body, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200, body: body}))
			c, _ := newTestClient(t, srv.URL)
			id, err := c.LookupEnvironment(context.Background(), "primeintellect", "gsm8k")
			if err != nil || id != want {
				t.Errorf("id %q, error %v; want %q", id, err, want)
			}
		})
	}
}

func TestLookupEnvironmentEscapesTheSlugsParts(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200, body: `{"id":"e"}`}))
	c, _ := newTestClient(t, srv.URL)
	if _, err := c.LookupEnvironment(context.Background(), "my team", "a?b"); err != nil {
		t.Fatal(err)
	}
	if p := srv.requests()[0].Path; p != "/api/v1/environmentshub/my%20team/a%3Fb/@latest" {
		t.Errorf("path %s", p)
	}
}

func TestResolveEnvironmentSendsTheTeamOnlyWhenKnown(t *testing.T) {
	for team, want := range map[string]string{"": `{"name":"gsm8k"}`, "team-1": `{"name":"gsm8k","team_id":"team-1"}`} {
		t.Run(want, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200, body: `{"data":{"id":"env-1"}}`}))
			c, _ := newTestClient(t, srv.URL)
			if id, err := c.ResolveEnvironment(context.Background(), "gsm8k", team); err != nil || id != "env-1" {
				t.Fatalf("id %q, error %v", id, err)
			}
			jsonEqual(t, srv.requests()[0].Body, want)
		})
	}
}

func TestParseEnvironmentRefReadsSlugsNamesAndVersions(t *testing.T) {
	tests := []struct {
		in   string
		want EnvironmentRef
		err  string
	}{
		{in: "gsm8k", want: EnvironmentRef{Name: "gsm8k"}},
		{in: " primeintellect/gsm8k ", want: EnvironmentRef{Owner: "primeintellect", Name: "gsm8k"}},
		{in: "primeintellect/gsm8k@0.1.2", want: EnvironmentRef{Owner: "primeintellect", Name: "gsm8k", VersionID: "0.1.2"}},
		{in: "gsm8k@v7", want: EnvironmentRef{Name: "gsm8k", VersionID: "v7"}},
		{in: "", err: "is empty"},
		{in: "gsm8k@", err: `nothing after "@"`},
		{in: "@v1", err: `no name before "@"`},
		{in: "/gsm8k", err: "not a hub slug"},
		{in: "owner/", err: "not a hub slug"},
		{in: "a/b/c", err: "not a hub slug"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseEnvironmentRef(tt.in)
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one saying %q", err, tt.err)
			case tt.err == "" && (err != nil || got != tt.want):
				t.Errorf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if r, _ := ParseEnvironmentRef("primeintellect/gsm8k@v1"); r.ShortName() != "gsm8k" || r.String() != "primeintellect/gsm8k@v1" {
		t.Errorf("ShortName %q, String %q", r.ShortName(), r.String())
	}
}

func TestResolveEnvironmentsAsksTheHubOncePerReferenceInOrderAndStopsAtTheFirstFailure(t *testing.T) {
	srv, c := newEvalTest(t)
	refs := []EnvironmentRef{
		{Name: "my-env"}, // route 1: get-or-create
		{Owner: "primeintellect", Name: "gsm8k", VersionID: "v1"}, // route 2
		{ID: "env-42", VersionID: "v9"},                           // no lookup
	}
	envs, err := c.ResolveEnvironments(context.Background(), refs, "team-1")
	if err != nil {
		t.Fatal(err)
	}
	made := srv.Environments()[1]
	want := []Environment{{ID: made.ID}, {ID: "env-1", VersionID: "v1"}, {ID: "env-42", VersionID: "v9"}}
	if !reflect.DeepEqual(envs, want) || made.Name != "my-env" || made.TeamID != "team-1" {
		t.Errorf("resolved %+v, want %+v (hub made %+v)", envs, want, made)
	}
	var paths []string
	for _, r := range srv.Requests() {
		paths = append(paths, r.Method+" "+r.Path)
	}
	if want := []string{"POST /api/v1/environmentshub/resolve", "GET /api/v1/environmentshub/primeintellect/gsm8k/@latest"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("requests %v, want %v", paths, want)
	}

	before := len(srv.Requests())
	_, err = c.ResolveEnvironments(context.Background(), []EnvironmentRef{{Owner: "nobody", Name: "x"}, {Name: "after"}}, "")
	e := mustError(t, err)
	if e.Class != ClassNotFound || !strings.Contains(e.Error(), `environment "nobody/x"`) {
		t.Errorf("got %v (class %v); want a 404 naming the environment", e, e.Class)
	}
	if n := len(srv.Requests()) - before; n != 1 {
		t.Errorf("%d requests: the list must stop at the first failure", n)
	}
}

func TestResolveEnvironmentsRefusesAListItCannotResolveWithoutARequest(t *testing.T) {
	tests := []struct {
		name string
		refs []EnvironmentRef
		says string
	}{
		{"none", nil, "no environments"},
		{"an empty reference", []EnvironmentRef{{}}, "environments[0] must give exactly one"},
		{"an id and a name", []EnvironmentRef{{Name: "a"}, {ID: "e", Name: "b"}}, "environments[1] must give exactly one"},
		{"an owner without a name", []EnvironmentRef{{Owner: "o"}}, "environments[0] must give exactly one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200, body: `{"data":{"id":"e"}}`}))
			c, _ := newTestClient(t, srv.URL)
			_, err := c.ResolveEnvironments(context.Background(), tt.refs, "")
			e := mustError(t, err)
			if e.Class != ClassRejected || !strings.Contains(e.Error(), tt.says) {
				t.Errorf("got %v; want a refusal saying %q", e, tt.says)
			}
			if len(srv.requests()) != 0 {
				t.Errorf("%d requests", len(srv.requests()))
			}
		})
	}
}

func TestUpdateEvaluationIsSkippedWhenThereIsNothingToSend(t *testing.T) {
	tests := map[string][2]map[string]any{
		"both nil":                       {nil, nil},
		"both empty":                     {{}, {}},
		"a summary of non-finite values": {nil, {"avg_reward": math.NaN(), "x": math.Inf(1)}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200}))
			c, _ := newTestClient(t, srv.URL)
			if err := c.UpdateEvaluation(context.Background(), "eval-1", tt[0], tt[1]); err != nil {
				t.Fatal(err)
			}
			if n := len(srv.requests()); n != 0 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

func TestUpdateAndFinalizeSendTheSummaryWithoutNonFiniteNumbers(t *testing.T) {
	summary := map[string]any{
		"avg_reward":  0.5,
		"avg_error":   math.NaN(),
		"avg_metrics": map[string]float64{"acc": 1, "loss": math.Inf(-1)},
	}
	tests := []struct {
		name string
		call func(*Client) error
		want string
	}{
		{"update with config", func(c *Client) error {
			return c.UpdateEvaluation(context.Background(), "eval-1", map[string]any{"lr": 0.1}, summary)
		}, `{"metadata":{"lr":0.1},"metrics":{"avg_reward":0.5,"avg_metrics":{"acc":1}}}`},
		{"update of an attached evaluation, without config", func(c *Client) error {
			return c.UpdateEvaluation(context.Background(), "eval-1", nil, summary)
		}, `{"metrics":{"avg_reward":0.5,"avg_metrics":{"acc":1}}}`},
		{"update of the config alone", func(c *Client) error {
			return c.UpdateEvaluation(context.Background(), "eval-1", map[string]any{"lr": 0.1}, nil)
		}, `{"metadata":{"lr":0.1}}`},
		{"finalize", func(c *Client) error {
			return c.FinalizeEvaluation(context.Background(), "eval-1", summary)
		}, `{"metrics":{"avg_reward":0.5,"avg_metrics":{"acc":1}}}`},
		{"finalize without a summary", func(c *Client) error {
			return c.FinalizeEvaluation(context.Background(), "eval-1", nil)
		}, `{"metrics":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200}))
			c, _ := newTestClient(t, srv.URL)
			if err := tt.call(c); err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, srv.requests()[0].Body, tt.want)
		})
	}
	if !math.IsNaN(summary["avg_error"].(float64)) || len(summary["avg_metrics"].(map[string]float64)) != 2 {
		t.Error("the caller's summary was changed")
	}
}

func TestA409ClosesOutRoute6bButIsAnErrorOnFinalize(t *testing.T) {
	closed := reply{status: 409, body: `{"detail":"Cannot update status of evaluation in 'COMPLETED' state."}`}
	srv := newFakeServer(t, always(closed))
	c, _ := newTestClient(t, srv.URL)
	if err := c.SetEvaluationStatus(context.Background(), "eval-1", EvaluationCancelled, ""); err != nil {
		t.Errorf("a 409 on the status update was an error: %v", err)
	}
	e := mustError(t, c.FinalizeEvaluation(context.Background(), "eval-1", nil))
	if e.Class != ClassConflict || e.Retryable() {
		t.Errorf("finalize's 409: class %v", e.Class)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d requests", n)
	}
}

func TestSetEvaluationStatusSendsTheStatusAndAMessageCutTo4096Characters(t *testing.T) {
	long := strings.Repeat("é", 5000)
	tests := []struct {
		name    string
		status  EvaluationStatus
		message string
		want    string
	}{
		{"failed with a message", EvaluationFailed, "crashed: no telemetry for 30m0s", `{"status":"FAILED","error_message":"crashed: no telemetry for 30m0s"}`},
		{"cancelled without one", EvaluationCancelled, "", `{"status":"CANCELLED"}`},
		{"a long message", EvaluationFailed, long, `{"status":"FAILED","error_message":"` + strings.Repeat("é", 4096) + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200}))
			c, _ := newTestClient(t, srv.URL)
			if err := c.SetEvaluationStatus(context.Background(), "eval-1", tt.status, tt.message); err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, srv.requests()[0].Body, tt.want)
		})
	}
	for _, bad := range []EvaluationStatus{"COMPLETED", "failed", ""} {
		srv := newFakeServer(t, always(reply{status: 200}))
		c, _ := newTestClient(t, srv.URL)
		if e := mustError(t, c.SetEvaluationStatus(context.Background(), "eval-1", bad, "")); e.Class != ClassRejected || len(srv.requests()) != 0 {
			t.Errorf("status %q: %v after %d requests", bad, e, len(srv.requests()))
		}
	}
}

func TestCutRunesCountsCharactersNotBytes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"héllo", 2, "hé"},
		{"héllo", 5, "héllo"},
		{"héllo", 9, "héllo"},
		{"a\xffb", 2, "a\uFFFD"},
	} {
		if got := cutRunes(tt.in, tt.n); got != tt.want || !utf8.ValidString(got) {
			t.Errorf("cutRunes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestFiniteSummaryRemovesNonFiniteNumbersAtAnyDepth(t *testing.T) {
	in := map[string]any{
		"avg_reward": math.NaN(),
		"avg_error":  0.25,
		"f32":        float32(math.Inf(1)),
		"nested":     map[string]any{"a": math.Inf(-1), "b": map[string]any{"c": math.NaN(), "d": 1.0}, "null": map[string]any(nil)},
		"list":       []any{1.0, math.NaN(), "x", []float64{math.Inf(1), 2}},
		"name":       "kept",
	}
	clean, dropped := FiniteSummary(in)
	want := map[string]any{
		"avg_error": 0.25,
		"nested":    map[string]any{"b": map[string]any{"d": 1.0}, "null": map[string]any(nil)},
		"list":      []any{1.0, "x", []any{2.0}},
		"name":      "kept",
	}
	if !reflect.DeepEqual(clean, want) {
		t.Errorf("clean = %#v\nwant    %#v", clean, want)
	}
	if w := []string{"avg_reward", "f32", "list[1]", "list[3][0]", "nested.a", "nested.b.c"}; !reflect.DeepEqual(dropped, w) {
		t.Errorf("dropped %v, want %v", dropped, w)
	}
	if _, err := json.Marshal(clean); err != nil {
		t.Errorf("the clean summary cannot be sent: %v", err)
	}
	if !math.IsNaN(in["nested"].(map[string]any)["b"].(map[string]any)["c"].(float64)) {
		t.Error("the input was changed")
	}
	if c, d := FiniteSummary(nil); c != nil || d != nil {
		t.Errorf("FiniteSummary(nil) = %v, %v", c, d)
	}
}

func TestAppendSamplesSendsEachSampleAsGivenCompacted(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200}))
	c, _ := newTestClient(t, srv.URL)
	samples := []json.RawMessage{
		json.RawMessage(" {\"sample_id\": \"a\",\n \"completion\": \"<b>&</b> \\u00e9\"} "),
		json.RawMessage(`{"sample_id":2}`),
	}
	if err := c.AppendSamples(context.Background(), "eval 1", samples); err != nil {
		t.Fatal(err)
	}
	r := srv.requests()[0]
	// Nothing re-escaped: the bytes counted by SampleBatches are the bytes sent.
	if want := `{"samples":[{"sample_id":"a","completion":"<b>&</b> \u00e9"},{"sample_id":2}]}`; string(r.Body) != want {
		t.Errorf("body\n got  %s\n want %s", r.Body, want)
	}
	if r.Path != "/api/v1/evaluations/eval%201/samples" {
		t.Errorf("path %s", r.Path)
	}
}

func TestAppendSamplesRefusesWhatItCannotSendWithoutARequest(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		samples []json.RawMessage
		says    string
	}{
		{"no evaluation", "", []json.RawMessage{json.RawMessage(`{}`)}, "evaluation id is empty"},
		{"no samples", "eval-1", nil, "no samples"},
		{"a list", "eval-1", []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`[1]`)}, "sample 1 is not a JSON object"},
		{"broken JSON", "eval-1", []json.RawMessage{json.RawMessage(`{"a":`)}, "sample 0 is not valid JSON"},
		{"invalid UTF-8", "eval-1", []json.RawMessage{json.RawMessage("{\"a\":\"\xff\"}")}, "sample 0 is not valid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200}))
			c, _ := newTestClient(t, srv.URL)
			e := mustError(t, c.AppendSamples(context.Background(), tt.id, tt.samples))
			if e.Class != ClassRejected || e.Attempts != 0 || !strings.Contains(e.Error(), tt.says) {
				t.Errorf("got %v; want a refusal saying %q", e, tt.says)
			}
			if n := len(srv.requests()); n != 0 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

func TestAnAmbiguousAppendIsNotSentAgainAndItsSamplesMayHaveLanded(t *testing.T) {
	for _, f := range []rfttest.Fault{
		{Status: http.StatusGatewayTimeout, AfterProcessing: true},
		{DropConnection: true, AfterProcessing: true},
	} {
		t.Run(fmt.Sprintf("%+v", f), func(t *testing.T) {
			srv, c := newEvalTest(t)
			srv.AddEvaluation("eval-1")
			srv.Inject(rfttest.RouteEvalSamples, f)
			err := c.AppendSamples(context.Background(), "eval-1", []json.RawMessage{json.RawMessage(`{"sample_id":"a"}`)})
			e := mustError(t, err)
			if !e.Ambiguous() || e.Attempts != 1 {
				t.Errorf("Ambiguous=%v Attempts=%d: the caller must count these samples as uncertain", e.Ambiguous(), e.Attempts)
			}
			if n := len(sampleBodies(srv)); n != 1 {
				t.Errorf("%d samples requests, want 1", n)
			}
			if ev, _ := srv.Evaluation("eval-1"); len(ev.Samples) != 1 {
				t.Errorf("%d samples stored: the platform took the one request once", len(ev.Samples))
			}
		})
	}
}

func TestAnEvaluationRunsEndToEndAgainstTheFakePlatform(t *testing.T) {
	srv, c := newEvalTest(t)
	ctx := context.Background()
	ref, err := ParseEnvironmentRef("primeintellect/gsm8k@v1")
	if err != nil {
		t.Fatal(err)
	}
	envs, err := c.ResolveEnvironments(ctx, []EnvironmentRef{ref}, "team-1")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := c.CreateEvaluation(ctx, CreateEvaluationRequest{
		Name: DefaultEvaluationName(ref.ShortName()), Environments: envs, Dataset: ref.ShortName(),
		ModelName: "Qwen/Qwen3-8B", Metadata: map[string]any{"temperature": 0.7}, TeamID: "team-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Status != "RUNNING" || ev.DashboardURL("https://app") != srv.URL()+"/dashboard/evaluations/"+ev.ID {
		t.Errorf("evaluation %+v", ev)
	}
	samples := []json.RawMessage{json.RawMessage(`{"sample_id":"e1","reward":1}`), json.RawMessage(`{"sample_id":"e2","reward":0}`)}
	batches, _, _ := SampleBatches(samples)
	for _, b := range batches {
		if err := c.AppendSamples(ctx, ev.ID, b); err != nil {
			t.Fatal(err)
		}
	}
	summary := map[string]any{"avg_reward": 0.5, "avg_error": 0.0, "avg_metrics": map[string]float64{"acc": 0.5, "bad": math.NaN()}}
	if err := c.UpdateEvaluation(ctx, ev.ID, map[string]any{"temperature": 0.7}, summary); err != nil {
		t.Fatal(err)
	}
	if err := c.FinalizeEvaluation(ctx, ev.ID, summary); err != nil {
		t.Fatal(err)
	}
	// A close-out sent again after a lost answer: route 6b's 409 is success.
	if err := c.SetEvaluationStatus(ctx, ev.ID, EvaluationFailed, "crashed"); err != nil {
		t.Errorf("status after finalize: %v", err)
	}

	got, _ := srv.Evaluation(ev.ID)
	if got.Status != rfttest.StatusCompleted || !got.Finalized || len(got.Samples) != 2 || len(got.Updates) != 2 {
		t.Fatalf("evaluation %+v", got)
	}
	if !regexp.MustCompile(`^gsm8k-[0-9a-f]{8}$`).MatchString(got.Spec["name"].(string)) || got.Spec["dataset"] != "gsm8k" {
		t.Errorf("spec %v", got.Spec)
	}
	if envs := got.Spec["environments"].([]any); !reflect.DeepEqual(envs, []any{map[string]any{"id": "env-1", "version_id": "v1"}}) {
		t.Errorf("environments %v", envs)
	}
	if m := got.Summary["avg_metrics"].(map[string]any); len(m) != 1 || m["acc"] == nil {
		t.Errorf("summary %v", got.Summary)
	}
}

func TestDefaultEvaluationNameIsTheStemAnd8FreshHexDigits(t *testing.T) {
	a, b := DefaultEvaluationName("gsm8k"), DefaultEvaluationName("gsm8k")
	re := regexp.MustCompile(`^gsm8k-[0-9a-f]{8}$`)
	if !re.MatchString(a) || !re.MatchString(b) || a == b {
		t.Errorf("names %q and %q", a, b)
	}
}

func TestTheDashboardURLIsTheViewerURLElseTheFrontendsEvaluationPage(t *testing.T) {
	if got := (Evaluation{ID: "eval-1", ViewerURL: "https://v/x"}).DashboardURL("https://app"); got != "https://v/x" {
		t.Errorf("with viewer_url: %s", got)
	}
	if got := (Evaluation{ID: "eval 1"}).DashboardURL("https://app/"); got != "https://app/dashboard/evaluations/eval%201" {
		t.Errorf("without: %s", got)
	}
}

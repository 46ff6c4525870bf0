package rfttest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// minimalCreate is the smallest valid create body.
const minimalCreate = `{"base_model":"Qwen/Qwen3-8B","max_steps":0,"environments":[],"team_id":"team-1"}`

// client talks to one fake through its own transport, closed at cleanup so
// no connection goroutine outlives the test.
type client struct {
	t  *testing.T
	s  *Server
	hc *http.Client
}

func start(t *testing.T, opts Options) (*Server, *client) {
	t.Helper()
	return startWithHooks(t, opts, hooks{})
}

func startWithHooks(t *testing.T, opts Options, h hooks) (*Server, *client) {
	t.Helper()
	s := newServer(opts, h)
	t.Cleanup(s.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return s, &client{t: t, s: s, hc: &http.Client{
		Transport: tr,
		// Storage must never redirect; make a redirect visible if it did.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// response is what came back for one request.
type response struct {
	status int
	header http.Header
	body   []byte
}

// detail is the "detail" of a FastAPI error body, or "" if there is none.
func (r response) detail() string {
	var b struct {
		Detail string `json:"detail"`
	}
	_ = json.Unmarshal(r.body, &b)
	return b.Detail
}

// json decodes the body into a generic map.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

// do sends a request and fails the test on a transport error.
func (c *client) do(req *http.Request) response {
	c.t.Helper()
	res, err := c.try(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return res
}

// try sends a request and returns the transport error, if any.
func (c *client) try(req *http.Request) (response, error) {
	res, err := c.hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}, err
}

// platformRequest builds a properly authenticated JSON call to a path under
// the API prefix.
func (c *client) platformRequest(ctx context.Context, method, path, body string) *http.Request {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, c.s.BaseURL()+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.s.APIKey())
	req.Header.Set("x-api-key", c.s.APIKey())
	return req
}

// call sends a properly authenticated JSON call.
func (c *client) call(method, path, body string) response {
	c.t.Helper()
	return c.do(c.platformRequest(context.Background(), method, path, body))
}

func (c *client) post(path, body string) response {
	c.t.Helper()
	return c.call(http.MethodPost, path, body)
}

// createRun creates a run with the minimal body and returns its id.
func (c *client) createRun() string {
	c.t.Helper()
	res := c.post("/rft/external-runs", minimalCreate)
	if res.status != http.StatusCreated {
		c.t.Fatalf("create: %d %s", res.status, res.body)
	}
	run, _ := res.json(c.t)["run"].(map[string]any)
	id, _ := run["id"].(string)
	if id == "" {
		c.t.Fatalf("create answered without run.id: %s", res.body)
	}
	return id
}

// upload presigns, PUTs and returns the key and the PUT's answer, without
// confirming.
func (c *client) upload(runID string, step int, data string) (string, response) {
	c.t.Helper()
	res := c.post("/rft/samples/presign", `{"run_id":"`+runID+`","step":`+strconv.Itoa(step)+`}`)
	if res.status != http.StatusOK {
		c.t.Fatalf("presign: %d %s", res.status, res.body)
	}
	d, _ := res.json(c.t)["data"].(map[string]any)
	u, _ := d["presignedUrl"].(string)
	key, _ := d["s3Key"].(string)
	return key, c.do(storagePut(c.t, u, data))
}

// storagePut is a bare PUT of Parquet bytes, as the spec's client sends it.
func storagePut(t *testing.T, url, data string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/parquet")
	return req
}

// mustRun fetches a run the test expects to exist.
func mustRun(t *testing.T, s *Server, id string) Run {
	t.Helper()
	r, ok := s.Run(id)
	if !ok {
		t.Fatalf("run %s does not exist", id)
	}
	return r
}

func wantStatus(t *testing.T, what string, res response, status int) {
	t.Helper()
	if res.status != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, res.status, status, res.body)
	}
}

package rft

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"
)

// testKey is distinctive so that a test can prove it never leaks.
const testKey = "sk-test-7Qz9-DISTINCTIVE-KEY"

// seen is one request a fake server received.
type seen struct {
	Method string
	Path   string // escaped, as sent
	Host   string // the target host: a forward proxy learns it from URI
	URI    string // the request target as sent: absolute when sent to a proxy
	Header http.Header
	Body   []byte
}

// reply is what a fake server answers; hijack drops the connection after
// reading the whole request instead of answering.
type reply struct {
	status int
	body   string
	header map[string]string
	hijack bool
}

// fakeServer records every request and answers with respond(n, req), n
// counting requests from 1.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
	open atomic.Int64 // connections the server holds, idle or busy
}

func newFakeServer(t *testing.T, respond func(n int, r seen) reply) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s := seen{Method: r.Method, Path: r.URL.EscapedPath(), Host: r.Host, URI: r.RequestURI, Header: r.Header.Clone(), Body: body}
		f.mu.Lock()
		f.reqs = append(f.reqs, s)
		n := len(f.reqs)
		f.mu.Unlock()
		rep := respond(n, s)
		if rep.hijack {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_ = conn.Close()
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rep.status)
		_, _ = io.WriteString(w, rep.body)
	}))
	f.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			f.open.Add(1)
		case http.StateClosed, http.StateHijacked:
			f.open.Add(-1)
		}
	}
	f.Start()
	t.Cleanup(f.Close)
	return f
}

// always answers every request the same.
func always(r reply) func(int, seen) reply { return func(int, seen) reply { return r } }

// failThen answers first to the first fails requests and ok after.
func failThen(first reply, fails int, ok reply) func(int, seen) reply {
	return func(n int, _ seen) reply {
		if n <= fails {
			return first
		}
		return ok
	}
}

func (f *fakeServer) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

// assertNoPlatformHeaders checks that an object PUT carried neither auth
// header nor the key anywhere: the presigned URL is its only credential.
func assertNoPlatformHeaders(t *testing.T, r seen) {
	t.Helper()
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if v, ok := r.Header[h]; ok {
			t.Errorf("the PUT carried %s: %q", h, v)
		}
	}
	for _, v := range r.Header {
		if strings.Contains(strings.Join(v, ","), testKey) {
			t.Error("the PUT carried the key in a header")
		}
	}
}

// waitOpenConns waits until the server holds want connections: it learns of
// a client closing one only when its read fails, a moment later.
func (f *fakeServer) waitOpenConns(t *testing.T, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.open.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d connections, want %d", f.open.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sleepLog records the waits a client asked for, without waiting.
type sleepLog struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleepLog) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepLog) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

// newTestClient builds a client against base whose sleeps are recorded and
// whose jitter factor is exactly 1.
func newTestClient(t *testing.T, base string, mods ...func(*Options)) (*Client, *sleepLog) {
	t.Helper()
	sl := &sleepLog{}
	opts := Options{
		BaseURL: base,
		APIKey:  testKey,
		Sleep:   sl.sleep,
		Jitter:  func() float64 { return 0.5 },
	}
	for _, m := range mods {
		m(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c, sl
}

// closedAddr is a loopback address nothing listens on: dialing it is
// refused.
func closedAddr(t *testing.T) string {
	t.Helper()
	return freeport.Addr(t)
}

// mustError asserts err is an *Error and returns it.
func mustError(t *testing.T, err error) *Error {
	t.Helper()
	if err == nil {
		t.Fatal("expected an error, got nil")
	}
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("expected an *rft.Error, got %T: %v", err, err)
	}
	return e
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body\n got  %s\n want %s", got, want)
	}
}

// routeCase drives one platform route generically.
type routeCase struct {
	name       string
	op         string
	method     string
	path       string
	replayable bool
	ok         reply // a success answer
	call       func(context.Context, *Client) error
}

func platformRoutes() []routeCase {
	return []routeCase{
		{
			name: "create run", op: opCreateRun, method: http.MethodPost, path: "/api/v1/rft/external-runs",
			ok: reply{status: 201, body: `{"run":{"id":"run-1","name":"n","status":"RUNNING"}}`},
			call: func(ctx context.Context, c *Client) error {
				_, err := c.CreateRun(ctx, CreateRunRequest{BaseModel: "m", TeamID: "team-1"})
				return err
			},
		},
		{
			name: "post metrics", op: opPostMetrics, method: http.MethodPost, path: "/api/v1/rft/metrics", replayable: true,
			ok: reply{status: 200, body: `{"data":{"status":"success"}}`},
			call: func(ctx context.Context, c *Client) error {
				return c.PostMetrics(ctx, "run-1", map[string]float64{"step": 1, "loss": 0.5})
			},
		},
		{
			name: "presign", op: opPresign, method: http.MethodPost, path: "/api/v1/rft/samples/presign", replayable: true,
			ok: reply{status: 200, body: `{"data":{"presignedUrl":"https://s3.example/b/k?X-Amz-Signature=abc","s3Key":"k","expiresIn":900}}`},
			call: func(ctx context.Context, c *Client) error {
				_, err := c.Presign(ctx, "run-1", 10)
				return err
			},
		},
		{
			name: "confirm", op: opConfirm, method: http.MethodPost, path: "/api/v1/rft/samples/confirm", replayable: true,
			ok: reply{status: 200, body: `{"data":{"status":"success"}}`},
			call: func(ctx context.Context, c *Client) error {
				return c.Confirm(ctx, "run-1", 10, "k")
			},
		},
		{
			name: "finalize", op: opFinalize, method: http.MethodPost, path: "/api/v1/rft/finalize", replayable: true,
			ok: reply{status: 200, body: `{"data":{"status":"success"}}`},
			call: func(ctx context.Context, c *Client) error {
				return c.Finalize(ctx, "run-1", 0)
			},
		},
		{
			name: "set status", op: opSetStatus, method: http.MethodPut, path: "/api/v1/rft/external-runs/run-1/status", replayable: true,
			ok: reply{status: 200, body: `{"data":{"status":"success"}}`},
			call: func(ctx context.Context, c *Client) error {
				return c.SetStatus(ctx, "run-1", StatusFailed, "crashed: no telemetry for 30m0s")
			},
		},
	}
}

package rfttest

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/primeintellect/primeexporter/rft"
)

// platformCall is one call of a platform route.
type platformCall struct {
	route        Route
	method, path string
	body         string
}

// platformCalls is one valid call per platform route, against run-1.
func platformCalls() []platformCall {
	return []platformCall{
		{RouteCreate, http.MethodPost, "/rft/external-runs", minimalCreate},
		{RouteMetrics, http.MethodPost, "/rft/metrics", `{"run_id":"run-1","metrics":{"step":1,"loss":0.5}}`},
		{RoutePresign, http.MethodPost, "/rft/samples/presign", `{"run_id":"run-1","step":1}`},
		{RouteConfirm, http.MethodPost, "/rft/samples/confirm", `{"run_id":"run-1","step":1,"s3_key":"k"}`},
		{RouteFinalize, http.MethodPost, "/rft/finalize", `{"run_id":"run-1","exit_code":0}`},
		{RouteStatus, http.MethodPut, "/rft/external-runs/run-1/status", `{"status":"failed"}`},
	}
}

func TestEveryPlatformRouteDemandsTheKeyInBothHeaders(t *testing.T) {
	const wrong = "wrong-secret-value"
	headers := []struct {
		name          string
		authorization string
		apiKey        string
	}{
		{"no headers", "", ""},
		{"only the Bearer header", "Bearer test-key", ""},
		{"only x-api-key", "", "test-key"},
		{"a wrong Bearer token", "Bearer " + wrong, "test-key"},
		{"a wrong x-api-key", "Bearer test-key", wrong},
		{"the key without the Bearer scheme", "test-key", "test-key"},
		{"a Basic scheme", "Basic test-key", "test-key"},
	}
	for _, pc := range platformCalls() {
		for _, h := range headers {
			t.Run(string(pc.route)+"/"+h.name, func(t *testing.T) {
				s, c := start(t, Options{})
				s.AddRun("run-1")
				req := c.platformRequest(context.Background(), pc.method, pc.path, pc.body)
				req.Header.Del("Authorization")
				req.Header.Del("x-api-key")
				if h.authorization != "" {
					req.Header.Set("Authorization", h.authorization)
				}
				if h.apiKey != "" {
					req.Header.Set("x-api-key", h.apiKey)
				}
				res := c.do(req)
				wantStatus(t, "call", res, http.StatusUnauthorized)
				if res.detail() == "" {
					t.Errorf("401 without a detail: %s", res.body)
				}
				if strings.Contains(string(res.body), wrong) || strings.Contains(string(res.body), "test-key") {
					t.Errorf("the error body echoes a key: %s", res.body)
				}
				if r := mustRun(t, s, "run-1"); len(s.Runs()) != 1 || r.Status != StatusRunning || r.MetricPosts != 0 {
					t.Errorf("an unauthenticated call changed state: %+v", s.Runs())
				}
			})
		}
	}
}

func TestTheConfiguredKeyIsTheOnlyOneAccepted(t *testing.T) {
	s, c := start(t, Options{APIKey: "k-123"})
	if s.APIKey() != "k-123" {
		t.Fatalf("APIKey() = %q", s.APIKey())
	}
	wantStatus(t, "create with the configured key", c.post("/rft/external-runs", minimalCreate), http.StatusCreated)

	req := c.platformRequest(context.Background(), http.MethodPost, "/rft/external-runs", minimalCreate)
	req.Header.Set("Authorization", "Bearer test-key")
	req.Header.Set("x-api-key", "test-key")
	wantStatus(t, "create with the default key", c.do(req), http.StatusUnauthorized)
}

func TestPlatformBodiesMustBeStrictJSONObjects(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		want        int
	}{
		{"a bare NaN", "application/json", `{"run_id":"run-1","metrics":{"step":1,"loss":NaN}}`, http.StatusBadRequest},
		{"a bare Infinity", "application/json", `{"run_id":"run-1","metrics":{"step":1,"loss":Infinity}}`, http.StatusBadRequest},
		{"a bare -Infinity", "application/json", `{"run_id":"run-1","metrics":{"step":1,"loss":-Infinity}}`, http.StatusBadRequest},
		{"trailing data", "application/json", `{"run_id":"run-1","metrics":{"step":1}} {}`, http.StatusBadRequest},
		{"a list", "application/json", `[{"run_id":"run-1","metrics":{"step":1}}]`, http.StatusBadRequest},
		{"invalid UTF-8", "application/json", "{\"run_id\":\"run-1\xff\",\"metrics\":{\"step\":1}}", http.StatusBadRequest},
		{"an empty body", "application/json", ``, http.StatusBadRequest},
		{"no Content-Type", "", `{"run_id":"run-1","metrics":{"step":1}}`, http.StatusUnsupportedMediaType},
		{"a text Content-Type", "text/plain", `{"run_id":"run-1","metrics":{"step":1}}`, http.StatusUnsupportedMediaType},
		{"JSON with a charset", "application/json; charset=utf-8", `{"run_id":"run-1","metrics":{"step":1}}`, http.StatusOK},
		{"JSON with surrounding whitespace", "application/json", " {\"run_id\":\"run-1\",\"metrics\":{\"step\":1}}\n", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{})
			s.AddRun("run-1")
			req := c.platformRequest(context.Background(), http.MethodPost, "/rft/metrics", tt.body)
			req.Header.Del("Content-Type")
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			res := c.do(req)
			wantStatus(t, "metrics", res, tt.want)
			posts := mustRun(t, s, "run-1").MetricPosts
			if accepted := tt.want == http.StatusOK; accepted != (posts == 1) {
				t.Errorf("MetricPosts = %d after a %d", posts, res.status)
			}
		})
	}
}

func TestWhoamiNamesTheKeysUserAndRefusesAnyOtherKey(t *testing.T) {
	for _, prefix := range []string{"/api/v1", "/api/internal"} {
		t.Run(prefix, func(t *testing.T) {
			s := NewServer(Options{Prefix: prefix})
			defer s.Close()
			c, err := rft.New(rft.Options{BaseURL: s.BaseURL() + "/rft", APIKey: defaultAPIKey})
			if err != nil {
				t.Fatal(err)
			}
			u, err := c.Whoami(context.Background())
			if err != nil || u.ID != UserID {
				t.Fatalf("Whoami() = %+v, %v", u, err)
			}
			bad, err := rft.New(rft.Options{BaseURL: s.BaseURL() + "/rft", APIKey: "wrong-key", MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bad.Whoami(context.Background()); !isUnauthorized(err) {
				t.Fatalf("a wrong key: %v, want a 401", err)
			}
		})
	}
}

func isUnauthorized(err error) bool {
	rerr, ok := rft.AsError(err)
	return ok && rerr.Class == rft.ClassUnauthorized
}

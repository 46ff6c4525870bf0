package rft

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEveryPlatformCallSendsBothAuthHeadersAndCompactJSON(t *testing.T) {
	for _, rc := range platformRoutes() {
		t.Run(rc.name, func(t *testing.T) {
			srv := newFakeServer(t, always(rc.ok))
			c, _ := newTestClient(t, srv.URL+"/api/v1/rft")
			if err := rc.call(context.Background(), c); err != nil {
				t.Fatalf("call: %v", err)
			}
			reqs := srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != rc.method || r.Path != rc.path {
				t.Errorf("sent %s %s, want %s %s", r.Method, r.Path, rc.method, rc.path)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("Authorization = %q", got)
			}
			if got := r.Header.Get("x-api-key"); got != testKey {
				t.Errorf("x-api-key = %q", got)
			}
			if got := r.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, r.Body); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if !bytes.Equal(compact.Bytes(), r.Body) || !utf8.Valid(r.Body) {
				t.Errorf("body is not compact UTF-8 JSON: %q", r.Body)
			}
		})
	}
}

func TestTheInternalPrefixIsKeptForHostedRuns(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200}))
	c, _ := newTestClient(t, srv.URL+"/api/internal/rft")
	if c.APIPrefix() != srv.URL+"/api/internal" {
		t.Errorf("APIPrefix() = %q", c.APIPrefix())
	}
	if err := c.PostMetrics(context.Background(), "run-1", map[string]float64{"step": 0}); err != nil {
		t.Fatal(err)
	}
	if p := srv.requests()[0].Path; p != "/api/internal/rft/metrics" {
		t.Errorf("path = %q", p)
	}
}

func TestNewRefusesOptionsItCannotWorkWith(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		says string
	}{
		{"no base URL", Options{APIKey: testKey}, "is empty"},
		{"a relative base URL", Options{BaseURL: "api.primeintellect.ai", APIKey: testKey}, "no scheme"},
		{"no key", Options{BaseURL: "https://h"}, "API key is empty"},
		{"a key with a newline", Options{BaseURL: "https://h", APIKey: testKey + "\n"}, "control characters"},
		{"negative attempts", Options{BaseURL: "https://h", APIKey: testKey, MaxAttempts: -1}, "MaxAttempts"},
		{"negative put attempts", Options{BaseURL: "https://h", APIKey: testKey, PutAttempts: -1}, "PutAttempts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.opts)
			if err == nil {
				t.Fatalf("New succeeded: %v", c)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error %q holds the key", err)
			}
		})
	}
}

func TestPrintingTheOptionsOrTheClientDoesNotShowTheKey(t *testing.T) {
	opts := Options{BaseURL: "https://h", APIKey: testKey}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf("%v", opts), fmt.Sprintf("%+v", opts), fmt.Sprintf("%#v", opts), fmt.Sprintf("%v", &opts),
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprint(c),
	} {
		if strings.Contains(s, testKey) {
			t.Errorf("%q shows the key", s)
		}
	}
}

func TestNewDefaultsTheAttemptCountsToTheSDKs(t *testing.T) {
	c, err := New(Options{BaseURL: "https://h", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if c.maxAttempts != 5 || c.putAttempts != 3 {
		t.Errorf("attempts = %d/%d, want 5/3", c.maxAttempts, c.putAttempts)
	}
}

func TestPlatformCallsDoNotFollowARedirectAndDoNotCarryTheKeyElsewhere(t *testing.T) {
	elsewhere := newFakeServer(t, always(reply{status: 201, body: `{"run":{"id":"run-x"}}`}))
	srv := newFakeServer(t, always(reply{status: http.StatusTemporaryRedirect, header: map[string]string{
		"Location": elsewhere.URL + "/api/v1/rft/external-runs?token=abc",
	}}))
	given := &http.Client{}
	c, _ := newTestClient(t, srv.URL, func(o *Options) { o.HTTPClient = given })
	_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
	e := mustError(t, err)
	if e.Class != ClassProtocol || e.StatusCode != http.StatusTemporaryRedirect {
		t.Errorf("got %v / %d, want a protocol error with 307", e.Class, e.StatusCode)
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the redirect target got %d requests", n)
	}
	if !strings.Contains(e.Error(), "redirect not followed") || strings.Contains(e.Error(), "token=abc") {
		t.Errorf("error = %q", e)
	}
	if given.CheckRedirect != nil {
		t.Error("New changed the caller's HTTP client")
	}
}

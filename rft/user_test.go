package rft

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestWhoamiAsksWithBothHeadersUnderAPIV1AndReturnsTheUsersID(t *testing.T) {
	for _, base := range []string{"/api/v1/rft", "/api/internal/rft"} {
		t.Run(base, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 200, body: `{"data":{"id":"user-7","email":"a@b"}}`}))
			c, _ := newTestClient(t, srv.URL+base)
			u, err := c.Whoami(context.Background())
			if err != nil || u.ID != "user-7" {
				t.Fatalf("Whoami() = %+v, %v", u, err)
			}
			r := srv.requests()[0]
			if r.Method != http.MethodGet || r.Path != "/api/v1/user/whoami" || len(r.Body) != 0 {
				t.Errorf("sent %s %s %q", r.Method, r.Path, r.Body)
			}
			if r.Header.Get("Authorization") != "Bearer "+testKey || r.Header.Get("x-api-key") != testKey {
				t.Errorf("headers %v", r.Header)
			}
		})
	}
}

func TestWhoamisAnswersAreClassified(t *testing.T) {
	cases := []struct {
		name  string
		reply reply
		class Class
	}{
		{"a refused key", reply{status: 401, body: `{"detail":"Invalid API key"}`}, ClassUnauthorized},
		{"an answer without an id", reply{status: 200, body: `{"data":{}}`}, ClassProtocol},
		{"not JSON", reply{status: 200, body: `<html>`}, ClassProtocol},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeServer(t, always(tc.reply))
			c, _ := newTestClient(t, srv.URL+"/api/v1/rft")
			_, err := c.Whoami(context.Background())
			rerr, ok := AsError(err)
			if !ok || rerr.Class != tc.class {
				t.Fatalf("err = %v, want class %v", err, tc.class)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("the key leaked: %v", err)
			}
		})
	}
}

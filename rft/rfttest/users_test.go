package rfttest

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// whoamiRequest asks who key belongs to, with key in both headers.
func (c *client) whoamiRequest(key string) *http.Request {
	c.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, c.s.URL()+"/api/v1/user/whoami", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return as(req, key)
}

func (c *client) whoamiAs(key string) response {
	c.t.Helper()
	return c.do(c.whoamiRequest(key))
}

// whoamiID is the data.id of a whoami answer.
func whoamiID(t *testing.T, res response) string {
	t.Helper()
	d, _ := res.json(t)["data"].(map[string]any)
	id, _ := d["id"].(string)
	return id
}

func TestWhoamiNamesTheUserOfEachKey(t *testing.T) {
	tests := []struct {
		name   string
		req    func(c *client) *http.Request
		status int
		id     string
	}{
		{"the default key", func(c *client) *http.Request { return c.whoamiRequest(c.s.APIKey()) }, http.StatusOK, UserID},
		{"alice's key", func(c *client) *http.Request { return c.whoamiRequest(aliceKey) }, http.StatusOK, "alice"},
		{"bob's key", func(c *client) *http.Request { return c.whoamiRequest(bobKey) }, http.StatusOK, "bob"},
		{"a key nobody has", func(c *client) *http.Request { return c.whoamiRequest("nobody-key") }, http.StatusUnauthorized, ""},
		{"alice's Bearer with bob's x-api-key", func(c *client) *http.Request {
			req := c.whoamiRequest(aliceKey)
			req.Header.Set("x-api-key", bobKey)
			return req
		}, http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, c := start(t, twoUsers())
			res := c.do(tt.req(c))
			wantStatus(t, "whoami", res, tt.status)
			if tt.status == http.StatusOK && whoamiID(t, res) != tt.id {
				t.Errorf("whoami = %s, want id %q", res.body, tt.id)
			}
		})
	}
}

func TestARevokedKeyIsRefusedOnEveryRouteWhileAnotherUsersKeyStillWorks(t *testing.T) {
	for _, revoked := range []struct{ name, key, owner string }{
		{"alice's key", aliceKey, "alice"},
		{"the default key", defaultAPIKey, UserID},
	} {
		setup := func(t *testing.T) (*Server, *client) {
			s, c := start(t, twoUsers())
			s.AddRunOwnedBy("run-1", revoked.owner)
			s.AddEvaluationOwnedBy("eval-1", revoked.owner)
			s.AddEnvironment(HubEnvironment{ID: "env-1", Owner: "primeintellect", Name: "gsm8k"})
			s.RevokeKey(revoked.key)
			return s, c
		}
		unchanged := func(t *testing.T, s *Server) {
			t.Helper()
			r := mustRun(t, s, "run-1")
			e := mustEval(t, s, "eval-1")
			if len(s.Runs()) != 1 || r.Status != StatusRunning || r.MetricPosts != 0 ||
				len(s.Evaluations()) != 1 || e.Status != StatusRunning || len(e.Samples) != 0 ||
				len(s.Environments()) != 1 || len(s.TraceUploads()) != 0 {
				t.Errorf("a revoked key's call changed state: runs %+v, evaluations %+v", s.Runs(), s.Evaluations())
			}
		}
		for _, pc := range platformCalls() {
			t.Run(revoked.name+"/"+string(pc.route), func(t *testing.T) {
				s, c := setup(t)
				wantStatus(t, string(pc.route), c.callAs(revoked.key, pc.method, pc.path, pc.body), http.StatusUnauthorized)
				unchanged(t, s)
			})
		}
		for _, ec := range evalCalls() {
			t.Run(revoked.name+"/"+string(ec.route)+" "+ec.body, func(t *testing.T) {
				s, c := setup(t)
				req := c.evalRequest(ec.method, ec.path, ec.body)
				req.Header.Set("Authorization", "Bearer "+revoked.key)
				wantStatus(t, string(ec.route), c.do(req), http.StatusUnauthorized)
				unchanged(t, s)
			})
		}
		t.Run(revoked.name+"/traces", func(t *testing.T) {
			s, c := setup(t)
			res := c.uploadTraces(validTraceParts(episodeA), map[string]string{"Authorization": "Bearer " + revoked.key})
			wantStatus(t, "traces", res, http.StatusUnauthorized)
			if res.code() != "unauthenticated" {
				t.Errorf("code %q, want unauthenticated", res.code())
			}
			unchanged(t, s)
		})
		t.Run(revoked.name+"/whoami, and bob still works", func(t *testing.T) {
			s, c := setup(t)
			res := c.whoamiAs(revoked.key)
			wantStatus(t, "whoami", res, http.StatusUnauthorized)
			if strings.Contains(string(res.body), revoked.key) {
				t.Errorf("the 401 echoes the key: %s", res.body)
			}
			unchanged(t, s)
			if res := c.whoamiAs(bobKey); res.status != http.StatusOK || whoamiID(t, res) != "bob" {
				t.Errorf("bob's whoami: %d %s", res.status, res.body)
			}
			if r := mustRun(t, s, c.createRunAs(bobKey)); r.Owner != "bob" {
				t.Errorf("bob's run is %q's", r.Owner)
			}
			res = c.uploadTraces(validTraceParts(episodeA), map[string]string{"Authorization": "Bearer " + bobKey})
			wantStatus(t, "bob's traces", res, http.StatusCreated)
		})
	}
}

func TestAUsersTeamsNarrowTheTeamsItMayCreateRunsFor(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string // Options.AllowedTeams
		teams   []string // alice's
		team    string
		want    int
	}{
		{"no list at all lets any team in", nil, nil, "team-9", http.StatusCreated},
		{"a team of the user's", nil, []string{"team-1", "team-2"}, "team-2", http.StatusCreated},
		{"a team not of the user's", nil, []string{"team-1"}, "team-2", http.StatusForbidden},
		{"an empty list lets no team in", nil, []string{}, "team-1", http.StatusForbidden},
		{"a team of both lists", []string{"team-1", "team-2"}, []string{"team-2", "team-3"}, "team-2", http.StatusCreated},
		{"a team of the user's the server does not allow", []string{"team-1", "team-2"}, []string{"team-2", "team-3"}, "team-3", http.StatusForbidden},
		{"a team the server allows but the user is not in", []string{"team-1", "team-2"}, []string{"team-2", "team-3"}, "team-1", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, Options{AllowedTeams: tt.allowed, Users: []User{{Key: aliceKey, ID: "alice", Teams: tt.teams}}})
			body := strings.Replace(minimalCreate, `"team-1"`, `"`+tt.team+`"`, 1)
			res := c.callAs(aliceKey, http.MethodPost, "/rft/external-runs", body)
			wantStatus(t, "create", res, tt.want)
			if created := len(s.Runs()) == 1; created != (tt.want == http.StatusCreated) {
				t.Errorf("%d runs after a %d", len(s.Runs()), res.status)
			}
			if tt.want == http.StatusForbidden && res.detail() != "External training runs are not enabled for this team" {
				t.Errorf("detail %q", res.detail())
			}
			// The default user's creates are not narrowed by alice's teams.
			if tt.allowed == nil {
				wantStatus(t, "the default user's create", c.callAs(s.APIKey(), http.MethodPost, "/rft/external-runs", body), http.StatusCreated)
			}
		})
	}
}

func TestEachRequestRecordsTheUserWhoseKeyItCarried(t *testing.T) {
	metrics := `{"run_id":"run-1","metrics":{"step":1,"loss":0.5}}`
	tests := []struct {
		name string
		send func(c *client)
		want string
	}{
		{"the default key on a platform route", func(c *client) { c.callAs(c.s.APIKey(), http.MethodPost, "/rft/metrics", metrics) }, UserID},
		{"alice's key on a platform route", func(c *client) { c.callAs(aliceKey, http.MethodPost, "/rft/metrics", metrics) }, "alice"},
		{"bob's key on alice's run (refused, but bob's key)", func(c *client) { c.callAs(bobKey, http.MethodPost, "/rft/metrics", metrics) }, "bob"},
		{"bob's key on whoami", func(c *client) { c.whoamiAs(bobKey) }, "bob"},
		{"alice's key as a Bearer token on the evaluations API", func(c *client) {
			req := c.evalRequest(http.MethodPost, "/environmentshub/resolve", `{"name":"gsm8k"}`)
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			c.do(req)
		}, "alice"},
		{"bob's key on Prime Traces", func(c *client) {
			c.uploadTraces(validTraceParts(episodeA), map[string]string{"Authorization": "Bearer " + bobKey})
		}, "bob"},
		{"a key nobody has", func(c *client) { c.callAs("nobody-key", http.MethodPost, "/rft/metrics", metrics) }, ""},
		{"alice's key in the Bearer header only", func(c *client) {
			req := as(c.platformRequest(context.Background(), http.MethodPost, "/rft/metrics", metrics), aliceKey)
			req.Header.Del("x-api-key")
			c.do(req)
		}, ""},
		{"a revoked key", func(c *client) {
			c.s.RevokeKey(bobKey)
			c.callAs(bobKey, http.MethodPost, "/rft/metrics", metrics)
		}, ""},
		{"a storage PUT", func(c *client) {
			res := c.callAs(aliceKey, http.MethodPost, "/rft/samples/presign", `{"run_id":"run-1","step":1}`)
			d, _ := res.json(c.t)["data"].(map[string]any)
			u, _ := d["presignedUrl"].(string)
			c.do(storagePut(c.t, u, "PAR1"))
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := start(t, twoUsers())
			s.AddRunOwnedBy("run-1", "alice")
			tt.send(c)
			reqs := s.Requests()
			if len(reqs) == 0 {
				t.Fatal("no request recorded")
			}
			if got := reqs[len(reqs)-1].UserID; got != tt.want {
				t.Errorf("UserID = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAnAddedUserCanCallAtOnce(t *testing.T) {
	s, c := start(t, Options{})
	wantStatus(t, "whoami before AddUser", c.whoamiAs("carol-key"), http.StatusUnauthorized)
	s.AddUser(User{Key: "carol-key", ID: "carol"})
	if res := c.whoamiAs("carol-key"); res.status != http.StatusOK || whoamiID(t, res) != "carol" {
		t.Fatalf("whoami after AddUser: %d %s", res.status, res.body)
	}
	if r := mustRun(t, s, c.createRunAs("carol-key")); r.Owner != "carol" {
		t.Errorf("carol's run is %q's", r.Owner)
	}
}

func TestUsersATestCannotTrustArePanics(t *testing.T) {
	tests := []struct {
		name string
		do   func(s *Server) // s has alice and bob; alice's key is revoked
	}{
		{"AddUser without a Key", func(s *Server) { s.AddUser(User{ID: "carol"}) }},
		{"AddUser without an ID", func(s *Server) { s.AddUser(User{Key: "carol-key"}) }},
		{"AddUser with the default key", func(s *Server) { s.AddUser(User{Key: defaultAPIKey, ID: "carol"}) }},
		{"AddUser with a key in use", func(s *Server) { s.AddUser(User{Key: bobKey, ID: "carol"}) }},
		{"AddUser with a revoked key", func(s *Server) { s.AddUser(User{Key: aliceKey, ID: "carol"}) }},
		// NewServer panics before it starts listening: nothing to close.
		{"Options.Users with one key twice", func(*Server) {
			NewServer(Options{Users: []User{{Key: "k", ID: "a"}, {Key: "k", ID: "b"}}})
		}},
		{"Options.Users with the configured APIKey", func(*Server) {
			NewServer(Options{APIKey: "k", Users: []User{{Key: "k", ID: "a"}}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := start(t, twoUsers())
			s.RevokeKey(aliceKey)
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tt.do(s)
		})
	}
}

package rfttest

import (
	"context"
	"net/http"
	"reflect"
	"sync"
	"testing"
)

// The keys of two users beside the default one.
const (
	aliceKey = "alice-key"
	bobKey   = "bob-key"
)

// twoUsers is a fake with alice and bob beside the default user.
func twoUsers() Options {
	return Options{Users: []User{{Key: aliceKey, ID: "alice"}, {Key: bobKey, ID: "bob"}}}
}

// as sets both of the platform's key headers to key.
func as(req *http.Request, key string) *http.Request {
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("x-api-key", key)
	return req
}

// callAs sends a platform call with key in both headers.
func (c *client) callAs(key, method, path, body string) response {
	c.t.Helper()
	return c.do(as(c.platformRequest(context.Background(), method, path, body), key))
}

// createRunAs creates a run for team-1 with key and returns its id.
func (c *client) createRunAs(key string) string {
	c.t.Helper()
	res := c.callAs(key, http.MethodPost, "/rft/external-runs", minimalCreate)
	wantStatus(c.t, "create", res, http.StatusCreated)
	run, _ := res.json(c.t)["run"].(map[string]any)
	id, _ := run["id"].(string)
	return id
}

// uploadAs presigns step 1 of runID with key and PUTs an object there,
// without confirming; it returns the object's key.
func (c *client) uploadAs(key, runID string) string {
	c.t.Helper()
	res := c.callAs(key, http.MethodPost, "/rft/samples/presign", `{"run_id":"`+runID+`","step":1}`)
	wantStatus(c.t, "presign", res, http.StatusOK)
	d, _ := res.json(c.t)["data"].(map[string]any)
	u, _ := d["presignedUrl"].(string)
	wantStatus(c.t, "put", c.do(storagePut(c.t, u, "PAR1")), http.StatusOK)
	s3Key, _ := d["s3Key"].(string)
	return s3Key
}

func (s *Server) presignedKeys() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.objects)
}

func TestEachUserOwnsTheRunsItsKeyCreates(t *testing.T) {
	s, c := start(t, twoUsers())
	want := map[string]string{
		c.createRunAs(aliceKey):   "alice",
		c.createRunAs(bobKey):     "bob",
		c.createRunAs(aliceKey):   "alice",
		c.createRunAs(s.APIKey()): UserID,
	}
	s.AddRunOwnedBy("hosted-1", "bob")
	s.AddRun("hosted-2")
	want["hosted-1"], want["hosted-2"] = "bob", UserID
	got := map[string]string{}
	for _, r := range s.Runs() {
		got[r.ID] = r.Owner
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("owners = %v, want %v", got, want)
	}
	for id, owner := range want {
		key := map[string]string{"alice": aliceKey, "bob": bobKey, UserID: s.APIKey()}[owner]
		res := c.callAs(key, http.MethodPost, "/rft/metrics", `{"run_id":"`+id+`","metrics":{"step":1,"loss":0.5}}`)
		wantStatus(t, "its owner's metrics on "+id, res, http.StatusOK)
	}
}

func TestAnotherUsersRequestOnARunIsNotFoundAndChangesNothing(t *testing.T) {
	calls := []struct {
		name         string
		method, path string
		body         func(runID, s3Key string) string
		ownersStatus int // what the same call answers the owner afterwards
	}{
		{"metrics", http.MethodPost, "/rft/metrics", func(id, _ string) string {
			return `{"run_id":"` + id + `","metrics":{"step":2,"loss":0.1}}`
		}, http.StatusOK},
		{"presign", http.MethodPost, "/rft/samples/presign", func(id, _ string) string {
			return `{"run_id":"` + id + `","step":2}`
		}, http.StatusOK},
		{"confirm", http.MethodPost, "/rft/samples/confirm", func(id, k string) string {
			return `{"run_id":"` + id + `","step":1,"s3_key":"` + k + `"}`
		}, http.StatusOK},
		{"finalize", http.MethodPost, "/rft/finalize", func(id, _ string) string {
			return `{"run_id":"` + id + `","exit_code":0}`
		}, http.StatusOK},
		{"status", http.MethodPut, "/rft/external-runs/{id}/status", func(string, string) string {
			return `{"status":"failed","error_message":"not yours"}`
		}, http.StatusOK},
	}
	for _, closed := range []bool{false, true} {
		for _, call := range calls {
			name := call.name + " on a running run"
			if closed {
				name = call.name + " on a closed run"
			}
			t.Run(name, func(t *testing.T) {
				s, c := start(t, twoUsers())
				runID := c.createRunAs(aliceKey)
				wantStatus(t, "alice's metrics", c.callAs(aliceKey, http.MethodPost, "/rft/metrics",
					`{"run_id":"`+runID+`","metrics":{"step":1,"loss":0.5}}`), http.StatusOK)
				s3Key := c.uploadAs(aliceKey, runID)
				ownersStatus := call.ownersStatus
				if closed {
					wantStatus(t, "alice's status", c.callAs(aliceKey, http.MethodPut,
						"/rft/external-runs/"+runID+"/status", `{"status":"completed"}`), http.StatusOK)
					ownersStatus = http.StatusConflict // a closed run refuses its owner's writes
				}
				path := call.path
				if call.name == "status" {
					path = "/rft/external-runs/" + runID + "/status"
				}
				before, keys := mustRun(t, s, runID), s.presignedKeys()

				res := c.callAs(bobKey, call.method, path, call.body(runID, s3Key))
				wantStatus(t, "bob's "+call.name, res, http.StatusNotFound)
				if res.detail() != "Run not found" {
					t.Errorf("detail %q, want the platform's %q", res.detail(), "Run not found")
				}
				if after := mustRun(t, s, runID); !reflect.DeepEqual(after, before) || s.presignedKeys() != keys {
					t.Errorf("bob's refused %s changed alice's run:\nbefore %+v\nafter  %+v", call.name, before, after)
				}
				// The same call was a valid one: alice's is answered as hers.
				wantStatus(t, "alice's "+call.name, c.callAs(aliceKey, call.method, path, call.body(runID, s3Key)), ownersStatus)
			})
		}
	}
}

func TestAnotherUsersRequestOnAnEvaluationIsNotFoundAndChangesNothing(t *testing.T) {
	calls := []struct {
		name, method, path, body string
	}{
		{"samples", http.MethodPost, "/evaluations/eval-1/samples", `{"samples":[{"sample_id":"a"}]}`},
		{"a summary update", http.MethodPut, "/evaluations/eval-1", `{"metrics":{"avg_reward":0.5}}`},
		{"a status update", http.MethodPut, "/evaluations/eval-1", `{"status":"FAILED"}`},
		{"finalize", http.MethodPost, "/evaluations/eval-1/finalize", `{"metrics":{"avg_reward":1}}`},
	}
	bearer := func(req *http.Request, key string) *http.Request {
		req.Header.Set("Authorization", "Bearer "+key)
		return req
	}
	for _, call := range calls {
		t.Run(call.name, func(t *testing.T) {
			s, c := start(t, twoUsers())
			s.AddEnvironment(HubEnvironment{ID: "env-1", Owner: "primeintellect", Name: "gsm8k"})
			res := c.do(bearer(c.evalRequest(http.MethodPost, "/evaluations/", minimalEval), aliceKey))
			wantStatus(t, "alice's create", res, http.StatusCreated)
			before := mustEval(t, s, "eval-1")
			if before.Owner != "alice" {
				t.Fatalf("Owner = %q, want alice", before.Owner)
			}

			res = c.do(bearer(c.evalRequest(call.method, call.path, call.body), bobKey))
			wantStatus(t, "bob's "+call.name, res, http.StatusNotFound)
			if after := mustEval(t, s, "eval-1"); !reflect.DeepEqual(after, before) {
				t.Errorf("bob's refused %s changed alice's evaluation:\nbefore %+v\nafter  %+v", call.name, before, after)
			}
			res = c.do(bearer(c.evalRequest(call.method, call.path, call.body), aliceKey))
			wantStatus(t, "alice's "+call.name, res, http.StatusOK)
		})
	}
}

func TestARunIsItsOwnersWhicheverOfTheirKeysCalls(t *testing.T) {
	s, c := start(t, Options{Users: []User{
		{Key: aliceKey, ID: "alice"},
		{Key: "alice-second-key", ID: "alice"},
	}})
	runID := c.createRunAs(aliceKey)
	s.RevokeKey(aliceKey)
	res := c.callAs("alice-second-key", http.MethodPost, "/rft/metrics", `{"run_id":"`+runID+`","metrics":{"step":1,"loss":0.5}}`)
	wantStatus(t, "metrics with alice's other key", res, http.StatusOK)
	if r := mustRun(t, s, runID); r.Owner != "alice" || r.MetricPosts != 1 {
		t.Errorf("run = %+v, want alice's with one post", r)
	}
}

func TestUsersCallingAtOnceKeepTheirOwnRunsWhileAKeyIsRevoked(t *testing.T) {
	s, c := start(t, Options{Users: []User{
		{Key: aliceKey, ID: "alice"}, {Key: bobKey, ID: "bob"}, {Key: "carol-key", ID: "carol"},
	}})
	const perUser = 8
	var wg sync.WaitGroup
	for _, key := range []string{aliceKey, bobKey} {
		for i := range perUser {
			wg.Go(func() {
				res := c.callAs(key, http.MethodPost, "/rft/external-runs", minimalCreate)
				if res.status != http.StatusCreated {
					t.Errorf("create %d with %s: %d %s", i, key, res.status, res.body)
				}
			})
		}
	}
	wg.Go(func() { s.RevokeKey("carol-key") })
	wg.Go(func() { _ = c.whoamiAs("carol-key") })
	wg.Wait()
	owners := map[string]int{}
	for _, r := range s.Runs() {
		owners[r.Owner]++
	}
	if want := map[string]int{"alice": perUser, "bob": perUser}; !reflect.DeepEqual(owners, want) {
		t.Errorf("runs per owner = %v, want %v", owners, want)
	}
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost && r.UserID != "alice" && r.UserID != "bob" {
			t.Errorf("create recorded for user %q", r.UserID)
		}
	}
}

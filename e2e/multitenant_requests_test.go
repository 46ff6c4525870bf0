package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// What the fake platform recorded, read for multitenant_test.go: which
// key each request carried, its route, the run it was about, and the
// table the test logs.

// mtKeyNames names each key as the table shows it.
func mtKeyNames() map[string]string {
	return map[string]string{mtAliceKey: "alice", mtBobKey: "bob", mtCarolKey: "carol", mtWrongKey: "wrong key"}
}

// keyOf names the key a platform request carried: a tenant, "wrong key",
// "no key", or the presigned URL of a storage PUT, which carries none.
func keyOf(req rfttest.Request) string {
	if strings.HasPrefix(req.Path, "/storage/") {
		return "presigned URL"
	}
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return "no key"
	}
	if name, ok := mtKeyNames()[token]; ok {
		return name
	}
	return "another key"
}

// routeOf names a platform request's route.
func routeOf(req rfttest.Request) string {
	p := req.Path
	switch {
	case strings.HasPrefix(p, "/storage/"):
		return "put"
	case strings.HasSuffix(p, "/user/whoami"):
		return "whoami"
	case strings.HasSuffix(p, "/rft/external-runs"):
		return "create"
	case strings.HasSuffix(p, "/rft/metrics"):
		return "metrics"
	case strings.HasSuffix(p, "/rft/samples/presign"):
		return "presign"
	case strings.HasSuffix(p, "/rft/samples/confirm"):
		return "confirm"
	case strings.HasSuffix(p, "/rft/finalize"):
		return "finalize"
	case strings.HasSuffix(p, "/status"):
		return "status"
	}
	return req.Method + " " + p
}

// runOf is the run a platform request is about ("" for whoami): the run
// id of its body, path or object key; for a create, the team's owner's
// new run, told by the create's team.
func runOf(req rfttest.Request, createdFor map[string]string) string {
	switch routeOf(req) {
	case "whoami":
		return ""
	case "put":
		id, _, _ := strings.Cut(strings.TrimPrefix(req.Path, "/storage/runs/"), "/")
		return id
	case "status":
		rest, _ := strings.CutSuffix(req.Path, "/status")
		return rest[strings.LastIndex(rest, "/")+1:]
	}
	var body struct {
		RunID  string `json:"run_id"`
		TeamID string `json:"team_id"`
	}
	_ = json.Unmarshal(req.Body, &body)
	if routeOf(req) == "create" {
		return createdFor[body.TeamID]
	}
	return body.RunID
}

// mtRow is one line of the request table.
type mtRow struct {
	owner, route string
}

// requestTable counts the platform's requests by the owner of the run
// each was about and its route, and by the key each carried; whoami, a
// key check about no run, is listed under "(key check)".
func requestTable(reqs []rfttest.Request, owners, createdFor map[string]string) string {
	counts := map[mtRow]map[string]int{}
	for _, req := range reqs {
		owner := "(key check)"
		if id := runOf(req, createdFor); id != "" {
			owner = owners[id]
			if owner == "" {
				owner = "unknown run " + id
			}
		}
		row := mtRow{owner, routeOf(req)}
		if counts[row] == nil {
			counts[row] = map[string]int{}
		}
		counts[row][keyOf(req)]++
	}
	rows := make([]mtRow, 0, len(counts))
	for row := range counts {
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b mtRow) int { return strings.Compare(a.owner+"\x00"+a.route, b.owner+"\x00"+b.route) })
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %-9s %8s  %s\n", "run of", "route", "requests", "with the key of")
	for _, row := range rows {
		keys := make([]string, 0, len(counts[row]))
		n := 0
		for k, c := range counts[row] {
			keys = append(keys, fmt.Sprintf("%s ×%d", k, c))
			n += c
		}
		slices.Sort(keys)
		fmt.Fprintf(&b, "%-12s %-9s %8d  %s\n", row.owner, row.route, n, strings.Join(keys, ", "))
	}
	return b.String()
}

// runsOwnedBy returns the platform's runs of one user.
func runsOwnedBy(platform *rfttest.Server, user string) []rfttest.Run {
	var out []rfttest.Run
	for _, r := range platform.Runs() {
		if r.Owner == user {
			out = append(out, r)
		}
	}
	return out
}

// tenantRunsCompleted is true when each of users owns exactly one run on
// the platform, completed with steps steps.
func tenantRunsCompleted(platform *rfttest.Server, steps int, users ...string) bool {
	for _, user := range users {
		runs := runsOwnedBy(platform, user)
		if len(runs) != 1 || runs[0].Status != rfttest.StatusCompleted || len(runs[0].Metrics) != steps {
			return false
		}
	}
	return true
}

// carried counts the platform requests that carried key, from index from
// on.
func carried(reqs []rfttest.Request, key string, from int) int {
	n := 0
	for _, req := range reqs[min(from, len(reqs)):] {
		if req.Header.Get("Authorization") == "Bearer "+key {
			n++
		}
	}
	return n
}

// askAgain sends a recorded request to the platform again as it was, and
// returns the answer: the fake keeps no response, and a request on another
// user's run changes nothing, so asking again shows what it was answered.
func askAgain(t *testing.T, platform *rfttest.Server, req rfttest.Request) (int, string) {
	t.Helper()
	r, err := http.NewRequest(req.Method, platform.URL()+req.Path, bytes.NewReader(req.Body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header = req.Header.Clone()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// routesOf counts by route the requests that carried a tenant's key.
func routesOf(reqs []rfttest.Request, tenant string) map[string]int {
	out := map[string]int{}
	for _, req := range reqs {
		if keyOf(req) == tenant {
			out[routeOf(req)]++
		}
	}
	return out
}

// checkNoKeyIn fails when any of the test's keys is in out.
func checkNoKeyIn(t *testing.T, c *collector, out string) {
	t.Helper()
	for key, name := range mtKeyNames() {
		if strings.Contains(out, key) {
			fatalf(t, c, "%s's key appears in the collector's output", name)
		}
	}
}

// firstRefusedRequest is when the platform first refused a request carrying
// key (its user unknown: the key refused); zero when it never did.
func firstRefusedRequest(reqs []rfttest.Request, key string) time.Time {
	for _, req := range reqs {
		if req.Header.Get("Authorization") == "Bearer "+key && req.UserID == "" {
			return req.Time
		}
	}
	return time.Time{}
}

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The multi-tenant gateway (deploy/multitenant/gateway.yaml as shipped,
// docs/multitenant.md) run as the built collector over TLS against the fake
// platform, which knows three users (alice, bob, carol), each with a key of
// its own, and refuses one user's requests on another's run with a 404. The
// gateway holds no key: every trainer sends its own as Authorization:
// Bearer, through the OTel SDK's OTEL_EXPORTER_OTLP_HEADERS.
//
// The shipped config serves the collector's own metrics on 127.0.0.1:8888,
// which it takes from no variable: no other test may hold that port while
// this one runs, so it is not parallel (nor is any other test that binds
// 8888, and parallel tests only start once the sequential ones are done).

// The tenants' platform keys, and a key the platform never issued. Each is
// looked for in every output the test can read.
const (
	mtAliceKey = "sk-alice-SECRET-5f1c09e4"
	mtBobKey   = "sk-bob-SECRET-8e2d47aa"
	mtCarolKey = "sk-carol-SECRET-a93b1077"
	mtWrongKey = "sk-mallory-NOT-A-KEY-77c1d2"
)

// mtRunKey is the prime.run.key every tenant sends: one key, a run per tenant.
const mtRunKey = "shared-experiment"

// mtMetricsPort is where the shipped config serves the collector's metrics.
const mtMetricsPort = "8888"

// mtGateway is the running multi-tenant gateway and what a sender needs to
// reach it.
type mtGateway struct {
	c        *collector
	otelcol  string
	config   string
	env      []string // what the collector is set with: a restart keeps it
	httpAddr string   // OTLP/HTTP over TLS
	grpcAddr string   // OTLP/gRPC over TLS
	caFile   string   // the CA that signed the receivers' certificate
	roots    *x509.CertPool
}

// startMultitenantGateway runs deploy/multitenant/gateway.yaml as shipped,
// set only through its environment variables, against platform.
func startMultitenantGateway(t *testing.T, otelcol string, platform *rfttest.Server) *mtGateway {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "multitenant", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := net.Listen("tcp", "127.0.0.1:"+mtMetricsPort); err != nil {
		t.Fatalf("127.0.0.1:%s is taken, and deploy/multitenant/gateway.yaml serves its metrics there: %v", mtMetricsPort, err)
	} else {
		l.Close()
	}
	auth := newFleetAuth(t) // a CA of its own and a certificate for 127.0.0.1
	g := &mtGateway{
		otelcol: otelcol, config: string(raw),
		httpAddr: freeAddr(t), grpcAddr: freeAddr(t), caFile: auth.caFile, roots: x509.NewCertPool(),
	}
	pem, err := os.ReadFile(auth.caFile)
	if err != nil || !g.roots.AppendCertsFromPEM(pem) {
		t.Fatalf("reading the test CA: %v", err)
	}
	g.env = []string{
		"PRIME_API_BASE=" + platform.URL(),
		"PRIME_OTLP_HTTP=" + g.httpAddr, "PRIME_OTLP_GRPC=" + g.grpcAddr,
		"PRIME_HEALTH_ENDPOINT=" + freeAddr(t),
		"PRIME_STORAGE_DIR=" + filepath.Join(t.TempDir(), "storage"),
		"PRIME_TLS_CERT_FILE=" + auth.certFile, "PRIME_TLS_KEY_FILE=" + auth.keyFile,
	}
	g.c = startCollector(t, otelcol, g.config, g.env...)
	return g
}

// restart stops the collector with SIGTERM and starts it again as it was,
// on the same ports and PRIME_STORAGE_DIR, calling between in between (to
// lift the platform's outage, say). It returns the output of the
// collector that stopped.
func (g *mtGateway) restart(t *testing.T, between func()) string {
	t.Helper()
	g.c.stop()
	out := g.c.out.String()
	between()
	g.c = startCollector(t, g.otelcol, g.config, g.env...)
	return out
}

// trainerCmd is the demo trainer sending to the gateway over TLS with key
// (none when ""), as any OTel SDK is set up from the environment. The
// test's own OTEL_* variables are left out, so only these reach it.
func (g *mtGateway) trainerCmd(ctx context.Context, trainer, key string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, trainer, append([]string{"-endpoint", "https://" + g.httpAddr, "-eval-every", "0"}, args...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OTEL_") })
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_CERTIFICATE="+g.caFile)
	if key != "" {
		cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20"+key)
	}
	return cmd
}

// train plays a run to its end and returns the trainer's output and exit.
func (g *mtGateway) train(t *testing.T, trainer, key string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := g.trainerCmd(ctx, trainer, key, args...).CombinedOutput()
	return string(out), err
}

// trainerResult is how a trainer in the background ended.
type trainerResult struct {
	out string
	err error
}

// trainInBackground starts a run and hands its end over the channel.
func (g *mtGateway) trainInBackground(t *testing.T, trainer, key string, args ...string) <-chan trainerResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	done := make(chan trainerResult, 1)
	cmd := g.trainerCmd(ctx, trainer, key, args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		err := cmd.Wait()
		cancel()
		done <- trainerResult{out.String(), err}
	}()
	t.Cleanup(func() { cancel() })
	return done
}

// healthWatch asks GET /status every 100 ms until stopped and keeps every
// answer other than 200.
type healthWatch struct {
	stopOnce sync.Once
	stopCh   chan struct{}
	done     chan struct{}
	polls    int
	bad      []string
}

func watchHealth(addr string) *healthWatch {
	w := &healthWatch{stopCh: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: 5 * time.Second}
	go func() {
		defer close(w.done)
		for {
			resp, err := client.Get("http://" + addr + "/status")
			switch {
			case err != nil:
				w.bad = append(w.bad, err.Error())
			default:
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					w.bad = append(w.bad, fmt.Sprintf("%d %s", resp.StatusCode, body))
				}
			}
			w.polls++
			select {
			case <-w.stopCh:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return w
}

// stop ends the watch and returns how many answers it read and the ones
// other than 200.
func (w *healthWatch) stop() (int, []string) {
	w.stopOnce.Do(func() { close(w.stopCh) })
	<-w.done
	return w.polls, w.bad
}

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
func requestTable(reqs []rfttest.Request, owners, createdFor map[string]string) (map[mtRow]map[string]int, string) {
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
	return counts, b.String()
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

func TestMultitenantGatewaySendsEachTenantsRunsWithItsOwnKeyAndKeepsThemApart(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
		{Key: mtBobKey, ID: "bob", Teams: []string{"team-bob"}},
		{Key: mtCarolKey, ID: "carol", Teams: []string{"team-carol"}},
	}})
	defer platform.Close()
	g := startMultitenantGateway(t, otelcol, platform)
	c := g.c
	health := watchHealth(c.health)
	defer health.stop()

	// Carol's run goes on for a while; her key is revoked once it has
	// steps on the platform.
	carolDone := g.trainInBackground(t, trainer, mtCarolKey,
		"-run-key", mtRunKey, "-team-id", "team-carol", "-steps", "300", "-step-delay", "100ms")
	var carolRun rfttest.Run
	waitFor(t, c, "carol's run with three steps", time.Minute, func() bool {
		runs := runsOwnedBy(platform, "carol")
		if len(runs) == 1 && len(runs[0].Metrics) >= 3 {
			carolRun = runs[0]
			return true
		}
		return false
	})
	platform.RevokeKey(mtCarolKey)
	revokedAt := len(platform.Requests())
	t.Logf("carol's key revoked with her run %s at %d steps", carolRun.ID, len(carolRun.Metrics))

	// 1. alice and bob train with the same run key at once.
	const steps = 20
	aliceDone := g.trainInBackground(t, trainer, mtAliceKey,
		"-run-key", mtRunKey, "-team-id", "team-alice", "-steps", itoa(steps), "-step-delay", "150ms")
	bobDone := g.trainInBackground(t, trainer, mtBobKey,
		"-run-key", mtRunKey, "-team-id", "team-bob", "-steps", itoa(steps), "-step-delay", "150ms")
	var aliceRun rfttest.Run
	waitFor(t, c, "alice's run on the platform", time.Minute, func() bool {
		runs := runsOwnedBy(platform, "alice")
		if len(runs) == 1 && len(runs[0].Metrics) >= 1 {
			aliceRun = runs[0]
			return true
		}
		return false
	})

	// 2. While alice's run is open, bob sends into it by its id and ends
	// it failed.
	attackAt := len(platform.Requests())
	out, err := g.train(t, trainer, mtBobKey, "-run-id", aliceRun.ID, "-run-key=", "-team-id", "team-bob",
		"-steps", "3", "-seed", "99", "-status", "failed", "-error", "bob ends alice's run")
	t.Logf("bob's trainer sending into alice's run %s ended with %v (the receiver takes the data; the exporter refuses it)", aliceRun.ID, err)
	if err != nil {
		fatalf(t, c, "bob's trainer was let in, so its export should succeed: %v\n%s", err, out)
	}
	for name, done := range map[string]<-chan trainerResult{"alice": aliceDone, "bob": bobDone} {
		if r := <-done; r.err != nil {
			fatalf(t, c, "%s's trainer failed: %v\n%s", name, r.err, r.out)
		}
	}
	waitFor(t, c, "alice's and bob's runs completed", time.Minute, func() bool {
		a, b := runsOwnedBy(platform, "alice"), runsOwnedBy(platform, "bob")
		return len(a) == 1 && len(b) == 1 && a[0].Status == rfttest.StatusCompleted && b[0].Status == rfttest.StatusCompleted
	})
	waitFor(t, c, "bob's refusal counted", 30*time.Second, func() bool {
		return scrapeCounters(t, c, mtMetricsPort).sum("otelcol_exporter_prime_records_rejected", "reason", "run_refused") > 0
	})

	// 3. Carol's later data is dropped at the exporter: her guard tripped
	// on the platform's 401 (confirmed by whoami), and it sends nothing
	// more with her key while her trainer goes on.
	waitFor(t, c, "carol's refused key in the log", 30*time.Second, func() bool {
		return logHasLine(c.out.String(), "The platform refused the API key", `"tenant": "carol"`)
	})
	time.Sleep(time.Second)
	carolAfterTrip := carried(platform.Requests(), mtCarolKey, revokedAt)
	droppedAtTrip := scrapeCounters(t, c, mtMetricsPort).sum("otelcol_exporter_prime_records_rejected", "reason", "unauthorized")
	if r := <-carolDone; r.err != nil {
		fatalf(t, c, "carol's trainer: the receiver still lets her key in (prime_auth's cache), so its export should succeed: %v\n%s", r.err, r.out)
	}
	// Her prime.run.end waits finalize_grace (10 s) before its close-out,
	// which her refused key must not send either.
	time.Sleep(13 * time.Second)
	polls, notReady := health.stop()

	reqs := platform.Requests()
	rejected := scrapeCounters(t, c, mtMetricsPort)

	owners := map[string]string{}
	createdFor := map[string]string{}
	for _, r := range platform.Runs() {
		owners[r.ID] = r.Owner
		if team, ok := r.Spec["team_id"].(string); ok {
			createdFor[team] = r.ID
		}
	}
	runs := map[string]rfttest.Run{}
	for _, user := range []string{"alice", "bob", "carol"} {
		own := runsOwnedBy(platform, user)
		if len(own) != 1 {
			fatalf(t, c, "%s should own exactly one run, got %d: %+v", user, len(own), own)
		}
		runs[user] = own[0]
	}
	if n := len(platform.Runs()); n != 3 {
		fatalf(t, c, "three tenants with one run key make three runs; the platform has %d", n)
	}

	// 1. Each of alice's and bob's runs: its own, whole, completed, every
	// request with its owner's key.
	for _, user := range []string{"alice", "bob"} {
		run := runs[user]
		if run.Status != rfttest.StatusCompleted || !run.Finalized || run.ErrorMessage != "" {
			fatalf(t, c, "%s's run should be completed and finalized: %+v", user, run)
		}
		if got := run.Spec["team_id"]; got != "team-"+user {
			fatalf(t, c, "%s's run was created for team %v", user, got)
		}
		if len(run.Metrics) != steps {
			fatalf(t, c, "%s's run has %d steps, want %d: %v", user, len(run.Metrics), steps, keys(run.Metrics))
		}
		for step := int64(1); step <= steps; step++ {
			for _, name := range []string{"loss", "reward/mean", "lr"} {
				if _, ok := run.Metrics[step][name]; !ok {
					fatalf(t, c, "%s's step %d has no %q: %v", user, step, name, run.Metrics[step])
				}
			}
		}
		for _, o := range run.Objects {
			if !o.Confirmed {
				fatalf(t, c, "%s's object %s was uploaded but never confirmed", user, o.Key)
			}
		}
		if len(run.Objects) == 0 {
			fatalf(t, c, "%s's run has no sample objects", user)
		}
	}
	perRoute := map[string]map[string]int{"alice": {}, "bob": {}}
	for i, req := range reqs {
		owner := owners[runOf(req, createdFor)]
		if owner != "alice" && owner != "bob" || routeOf(req) == "put" {
			continue
		}
		if i >= attackAt && req.UserID == "bob" && owner == "alice" {
			continue // bob's refused attach, checked below
		}
		if req.UserID != owner {
			fatalf(t, c, "a %s request on %s's run carried the key of %q: %s %s", routeOf(req), owner, req.UserID, req.Method, req.Path)
		}
		perRoute[owner][routeOf(req)]++
	}
	for user, routes := range perRoute {
		for _, route := range []string{"create", "metrics", "presign", "confirm", "finalize"} {
			if routes[route] == 0 {
				fatalf(t, c, "%s's run had no %s request with %s's key: %v", user, route, user, routes)
			}
		}
	}

	// 2. Alice's run is untouched by bob: its steps are her 1..20, it is
	// completed without an error, and what bob sent into it is one attach
	// probe with his own key, which the platform answered 404.
	var bobOnAlice []rfttest.Request
	aliceClosed := len(reqs)
	for i, req := range reqs {
		if keyOf(req) == "bob" && runOf(req, createdFor) == aliceRun.ID {
			bobOnAlice = append(bobOnAlice, req)
			if aliceClosed < i {
				fatalf(t, c, "bob's %s on alice's run came after her close-out: the run was not open to him", routeOf(req))
			}
		}
		if keyOf(req) == "alice" && routeOf(req) == "finalize" {
			aliceClosed = min(aliceClosed, i)
		}
	}
	if len(bobOnAlice) == 0 {
		fatalf(t, c, "bob's data never reached the platform as bob's: no request with his key names alice's run")
	}
	for _, req := range bobOnAlice {
		if routeOf(req) != "presign" || req.UserID != "bob" {
			fatalf(t, c, "bob's key reached alice's run with a %s (user %q): only the attach probe may", routeOf(req), req.UserID)
		}
		status, body := askAgain(t, platform, req)
		if status != http.StatusNotFound || !strings.Contains(body, "Run not found") {
			fatalf(t, c, "bob's %s on alice's run, sent again, answers %d %s; want 404 Run not found", routeOf(req), status, body)
		}
	}
	if run := runs["alice"]; run.Status != rfttest.StatusCompleted || run.ErrorMessage != "" || slices.Max(keys(run.Metrics)) != steps {
		fatalf(t, c, "alice's run was touched: status %s, error %q, steps %v", run.Status, run.ErrorMessage, keys(run.Metrics))
	}
	if n := rejected.sum("otelcol_exporter_prime_records_rejected", "reason", "run_refused"); n == 0 {
		fatalf(t, c, "bob's refused data is not counted: %v", rejected.byReason("otelcol_exporter_prime_records_rejected"))
	}
	if !strings.Contains(c.out.String(), aliceRun.ID) || !logHasLine(c.out.String(), "Run not found") {
		fatalf(t, c, "the collector's log does not say that bob's attach to %s was refused", aliceRun.ID)
	}

	// 3. Carol: her run stays open (her close-out could not be sent), her
	// key stopped reaching the platform once her guard tripped, and her
	// dropped data is counted while alice and bob flowed.
	carolTotal := carried(reqs, mtCarolKey, revokedAt)
	if carolTotal != carolAfterTrip {
		fatalf(t, c, "carol's revoked key kept reaching the platform after her guard tripped: %d requests then, %d at the end", carolAfterTrip, carolTotal)
	}
	if carolTotal == 0 || carolTotal > 20 {
		fatalf(t, c, "after the revocation carol's key should reach the platform a few times (the 401s in flight and whoami's), got %d", carolTotal)
	}
	if run := runs["carol"]; run.Status != rfttest.StatusRunning {
		fatalf(t, c, "carol's run closed with a revoked key: %+v", run)
	}
	if dropped := rejected.sum("otelcol_exporter_prime_records_rejected", "reason", "unauthorized"); dropped <= droppedAtTrip || droppedAtTrip == 0 {
		fatalf(t, c, "carol's later data should be dropped and counted as unauthorized: %v at the trip, %v at the end", droppedAtTrip, dropped)
	}
	if len(notReady) > 0 || polls < 100 {
		fatalf(t, c, "readiness should answer 200 throughout; %d polls, these were not: %v", polls, notReady)
	}

	t.Logf("after the revocation carol's key reached the platform %d times, all before her guard tripped: %v", carolTotal, routesOf(reqs[revokedAt:], "carol"))
	_, table := requestTable(reqs, owners, createdFor)
	t.Logf("every platform request, by the run it was about, its route and the key it carried:\n%s", table)
	t.Logf("health: %d GET /status polls, all 200; rejected records: %v", polls, rejected.byReason("otelcol_exporter_prime_records_rejected"))
	checkNoKeyIn(t, c, c.out.String())
	c.stop()
	checkNoKeyIn(t, c, c.out.String())
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

func TestMultitenantGatewayRefusesSendersWithNoKeyOrAWrongKeyOverHTTPAndGRPC(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
	}})
	defer platform.Close()
	g := startMultitenantGateway(t, otelcol, platform)
	c := g.c

	// A positive control first: the same clients with alice's key are let
	// in, so a refusal below is the key's and not the client's.
	if status, body := g.postLogs(t, mtAliceKey, nil); status != http.StatusOK {
		fatalf(t, c, "OTLP/HTTP with alice's key: %d %s", status, body)
	}
	if code, msg := g.exportLogsGRPC(t, mtAliceKey, nil); code != "0" {
		fatalf(t, c, "OTLP/gRPC with alice's key: grpc-status %s %s", code, msg)
	}

	payload := intruderLogs("intruder", "team-alice")
	for _, sender := range []struct{ name, key string }{{"no key", ""}, {"a wrong key", mtWrongKey}} {
		status, body := g.postLogs(t, sender.key, payload)
		if status != http.StatusUnauthorized {
			fatalf(t, c, "OTLP/HTTP POST /v1/logs with %s: want 401, got %d %s", sender.name, status, body)
		}
		code, msg := g.exportLogsGRPC(t, sender.key, payload)
		if code != "16" { // codes.Unauthenticated
			fatalf(t, c, "OTLP/gRPC Export with %s: want grpc-status 16 (Unauthenticated), got %s %s", sender.name, code, msg)
		}
		out, err := g.train(t, trainer, sender.key, "-run-key", mtRunKey, "-team-id", "team-alice", "-steps", "2", "-step-delay", "0s")
		if err == nil || !strings.Contains(out, "401") {
			fatalf(t, c, "the demo trainer with %s should fail on the collector's 401: %v\n%s", sender.name, err, out)
		}
		for _, said := range []string{body, msg, out} {
			if sender.key != "" && strings.Contains(said, sender.key) {
				fatalf(t, c, "a refusal of %s repeats the key: %s", sender.name, said)
			}
		}
		t.Logf("%s: OTLP/HTTP %d %q; OTLP/gRPC grpc-status %s %q; the demo trainer exits with %v", sender.name, status, statusMessage(body), code, msg, err)
	}

	// Nothing of theirs reached the platform: no run, and no request other
	// than whoami's check of the wrong key carried it or came without one.
	if runs := platform.Runs(); len(runs) != 0 {
		fatalf(t, c, "refused senders made runs: %+v", runs)
	}
	reqs := platform.Requests()
	for _, req := range reqs {
		if k := keyOf(req); (k == "wrong key" || k == "no key") && routeOf(req) != "whoami" {
			fatalf(t, c, "a %s request with %s reached the platform", routeOf(req), k)
		}
	}
	refused := scrapeCounters(t, c, mtMetricsPort)
	for _, reason := range []string{"no_key", "refused"} {
		if refused.sum("otelcol_prime_auth_refused", "reason", reason) == 0 {
			fatalf(t, c, "prime_auth counted no refusal with reason %s", reason)
		}
	}
	_, table := requestTable(reqs, nil, nil)
	t.Logf("every platform request, by the run it was about, its route and the key it carried:\n%s", table)
	checkNoKeyIn(t, c, c.out.String())
	c.stop()
	checkNoKeyIn(t, c, c.out.String())
}

// postLogs sends an OTLP/HTTP logs request over TLS with key as a Bearer
// token (no Authorization header when ""); body nil is an empty request.
func (g *mtGateway) postLogs(t *testing.T, key string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "https://"+g.httpAddr+"/v1/logs", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := g.client(false).Do(req)
	if err != nil {
		fatalf(t, g.c, "POST /v1/logs: %v", err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(reply)
}

// statusMessage is the message of a protobuf google.rpc.Status, the body
// of an OTLP/HTTP refusal; the body as it is when it is none.
func statusMessage(body string) string {
	fields, err := wireFields([]byte(body))
	if err != nil {
		return body
	}
	for _, f := range fields {
		if f.Num == 2 { // message
			return string(f.B)
		}
	}
	return body
}

// exportLogsGRPC calls LogsService/Export over TLS as a gRPC client does on
// the wire (HTTP/2, a length-prefixed message, the status in the
// trailers), with key as Bearer metadata (none when ""), and returns the
// grpc-status and grpc-message. The e2e module has no gRPC client; the
// wire form is small and is what any client sends.
func (g *mtGateway) exportLogsGRPC(t *testing.T, key string, msg []byte) (code, message string) {
	t.Helper()
	frame := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(frame[1:], uint32(len(msg)))
	frame = append(frame, msg...)
	req, err := http.NewRequest(http.MethodPost, "https://"+g.grpcAddr+"/opentelemetry.proto.collector.logs.v1.LogsService/Export", bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := g.client(true).Do(req)
	if err != nil {
		fatalf(t, g.c, "gRPC Export: %v", err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil && !errors.Is(err, io.EOF) {
		fatalf(t, g.c, "gRPC Export: reading the answer: %v", err)
	}
	if resp.ProtoMajor != 2 {
		fatalf(t, g.c, "gRPC Export was answered over HTTP/%d", resp.ProtoMajor)
	}
	// A refusal comes as trailers only, which arrive as the headers.
	for _, h := range []http.Header{resp.Trailer, resp.Header} {
		if code := h.Get("Grpc-Status"); code != "" {
			return code, h.Get("Grpc-Message")
		}
	}
	fatalf(t, g.c, "gRPC Export: no grpc-status in %v / %v", resp.Header, resp.Trailer)
	return "", ""
}

// client trusts the gateway's CA; http2 forces HTTP/2, as gRPC needs.
func (g *mtGateway) client(http2 bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: g.roots, MinVersion: tls.VersionTLS13}}
	if http2 {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP2(true)
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// intruderLogs is an OTLP ExportLogsServiceRequest (protobuf) that would
// make a run if it were let in: a resource naming a run key and a team, a
// step's prime.metrics event and the run's prime.run.end.
func intruderLogs(runKey, team string) []byte {
	str := func(s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), s)
	}
	kv := func(key string, value []byte) []byte {
		b := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), key)
		return protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), value)
	}
	field := func(b []byte, num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
	}
	now := uint64(time.Now().UnixNano())
	record := func(event string, attrs ...[]byte) []byte {
		b := protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), now)
		for _, a := range attrs {
			b = field(b, 6, a)
		}
		return protowire.AppendString(protowire.AppendTag(b, 12, protowire.BytesType), event)
	}
	step := protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1)
	var resource []byte
	for _, a := range [][2]string{{"prime.run.key", runKey}, {"prime.run.team_id", team}, {"prime.run.model", "Qwen/Qwen3-0.6B"}} {
		resource = field(resource, 1, kv(a[0], str(a[1])))
	}
	var scope []byte
	scope = field(scope, 2, record("prime.metrics", kv("prime.step", step), kv("loss", protowire.AppendFixed64(protowire.AppendTag(nil, 4, protowire.Fixed64Type), 0x3FE0000000000000))))
	scope = field(scope, 2, record("prime.run.end", kv("prime.run.status", str("completed"))))
	rl := field(field(nil, 1, resource), 2, scope)
	return field(nil, 1, rl)
}

func TestMultitenantGatewayRestartedMidRunClosesEachTenantsRunWithItsKey(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{
		{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}},
		{Key: mtBobKey, ID: "bob", Teams: []string{"team-bob"}},
	}})
	defer platform.Close()
	g := startMultitenantGateway(t, otelcol, platform)

	// Each tenant's first five steps land; then the platform goes down,
	// and the rest of each run, its prime.run.end included, waits in the
	// persistent queue.
	const first, steps = 5, 10
	users := map[string]string{"alice": mtAliceKey, "bob": mtBobKey}
	play := func(args ...string) {
		done := map[string]<-chan trainerResult{}
		for user, key := range users {
			done[user] = g.trainInBackground(t, trainer, key, append([]string{"-run-key", mtRunKey, "-team-id", "team-" + user}, args...)...)
		}
		for user, d := range done {
			if r := <-d; r.err != nil {
				fatalf(t, g.c, "%s's trainer (%v): %v\n%s", user, args, r.err, r.out)
			}
		}
	}
	play("-steps", itoa(first), "-status", "none", "-step-delay", "20ms")
	waitFor(t, g.c, "both runs' first steps on the platform", time.Minute, func() bool {
		a, b := runsOwnedBy(platform, "alice"), runsOwnedBy(platform, "bob")
		return len(a) == 1 && len(b) == 1 && len(a[0].Metrics) == first && len(b[0].Metrics) == first
	})
	platform.SetOutage(&rfttest.Fault{Status: http.StatusServiceUnavailable})
	// The queue takes the rest during the outage: the exports succeed.
	play("-start-step", itoa(first+1), "-steps", itoa(steps), "-step-delay", "20ms")
	for user := range users {
		if run := runsOwnedBy(platform, user)[0]; run.Status != rfttest.StatusRunning || len(run.Metrics) != first {
			fatalf(t, g.c, "%s's run should be open with its first %d steps before the restart: %s with %d", user, first, run.Status, len(run.Metrics))
		}
	}

	// SIGTERM, the platform back, the same storage: no trainer sends
	// again, so what closes the runs comes from the queue and the tenant
	// index.
	var restartedAt int
	before := g.restart(t, func() {
		platform.SetOutage(nil)
		restartedAt = len(platform.Requests())
	})
	waitFor(t, g.c, "both runs whole and completed after the restart", 2*time.Minute, func() bool {
		for _, user := range []string{"alice", "bob"} {
			runs := runsOwnedBy(platform, user)
			if len(runs) != 1 || runs[0].Status != rfttest.StatusCompleted || len(runs[0].Metrics) != steps {
				return false
			}
		}
		return true
	})
	reqs := platform.Requests()[restartedAt:]
	owners, createdFor := map[string]string{}, map[string]string{}
	for _, r := range platform.Runs() {
		owners[r.ID] = r.Owner
	}
	if n := len(platform.Runs()); n != 2 {
		fatalf(t, g.c, "the restart made runs of its own: %d on the platform", n)
	}
	finalized := map[string]bool{}
	for _, req := range reqs {
		route := routeOf(req)
		if route == "put" {
			continue
		}
		owner := owners[runOf(req, createdFor)]
		if route != "whoami" && (owner == "" || req.UserID != owner) {
			fatalf(t, g.c, "after the restart a %s on %s's run carried the key of %q", route, owner, req.UserID)
		}
		if route == "whoami" && req.UserID != "alice" && req.UserID != "bob" {
			fatalf(t, g.c, "after the restart whoami was asked with the key of %q", req.UserID)
		}
		if route == "finalize" {
			finalized[owner] = true
		}
	}
	if !finalized["alice"] || !finalized["bob"] {
		fatalf(t, g.c, "each run should be closed out after the restart with its tenant's key; finalized: %v", finalized)
	}
	_, table := requestTable(reqs, owners, createdFor)
	t.Logf("the platform requests after the restart, by run, route and key:\n%s", table)
	checkNoKeyIn(t, g.c, before)
	g.c.stop()
	checkNoKeyIn(t, g.c, g.c.out.String())
}

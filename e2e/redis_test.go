package e2e

import (
	"bufio"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// redisServer is a real redis-server process on a loopback port, for the
// shared run registry (shared_registry: {redis: {endpoint}}).
type redisServer struct {
	t          *testing.T
	cmd        *exec.Cmd
	out        *syncBuffer
	done       chan error
	addr, dir  string
	appendonly bool
}

// startRedis runs redis-server on addr (host:port; a fresh port when
// empty) with its files in dir; appendonly turns on its persistence (the
// setting docs/operations.md's Scaling out asks for). It fails, never skips, when
// redis-server is not installed.
func startRedis(t *testing.T, addr, dir string, appendonly bool) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH (apt-get install redis-server): %v", err)
	}
	if addr == "" {
		addr = freeAddr(t)
	}
	if dir == "" {
		dir = t.TempDir()
	}
	host, port, _ := net.SplitHostPort(addr)
	aof := "no"
	if appendonly {
		aof = "yes"
	}
	r := &redisServer{t: t, out: &syncBuffer{}, done: make(chan error, 1), addr: addr, dir: dir, appendonly: appendonly}
	r.cmd = exec.Command(bin, "--bind", host, "--port", port, "--dir", dir, "--save", "",
		"--appendonly", aof, "--daemonize", "no", "--protected-mode", "no", "--logfile", "")
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for !r.ping() {
		select {
		case err := <-r.done:
			t.Fatalf("redis-server exited before it answered: %v\n%s", err, r.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer PING on %s in 15s:\n%s", addr, r.out.String())
		}
	}
	return r
}

// ping is true when the server answers PING with PONG (not -LOADING).
func (r *redisServer) ping() bool {
	conn, err := net.DialTimeout("tcp", r.addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

// stop sends SIGTERM (redis-server then writes and syncs its append-only
// file) and waits for it to exit.
func (r *redisServer) stop() {
	r.t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		r.t.Fatalf("redis-server did not stop in 15s:\n%s", r.out.String())
	}
}

// restart starts a new redis-server on the same port and directory, with
// the same persistence.
func (r *redisServer) restart() *redisServer {
	r.t.Helper()
	return startRedis(r.t, r.addr, r.dir, r.appendonly)
}

// sharedGatewayConfig is a gateway of deploy/gateway.yaml, online against
// the fake platform, with the shared registry on the test's Redis, no file
// storage anywhere, the sample cadence every 10 steps and short timings.
// PRIME_WAIT_FOR_RESULT picks wait_for_result (the gateway answers a sender
// only after delivery, as behind the agents) or an in-memory queue that
// answers on enqueue (a node collector, as a trainer's sidecar). Its gRPC
// receiver, where the shipped agent sends, takes TLS and the fleet's token
// as deploy/gateway.yaml's does (fleetauth_test.go); the HTTP one, for the
// tests' trainers, stays plain on loopback.
func sharedGatewayConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "gateway", collectorParams{
		Team: "team-e2e", SharedRedis: true, StepInterval: "10",
		FinalizeGrace: "${env:PRIME_FINALIZE_GRACE}", FinalizeTimeout: "${env:PRIME_FINALIZE_TIMEOUT}",
		Queue:         queueParams{WaitForResult: "${env:PRIME_WAIT_FOR_RESULT}", Size: "5000", FlushTimeout: "100ms"},
		Retry:         &retryParams{InitialInterval: "200ms", MaxInterval: "1s", MaxElapsedTime: "0"},
		LogsUnsampled: true,
	})
}

// sharedGateway is one running gateway of a fleet.
type sharedGateway struct {
	*collector
	http, grpc string
}

// startSharedGateway starts a gateway on fresh ports against platform and
// the Redis at redisAddr; env may override PRIME_FINALIZE_TIMEOUT (2m, the
// default).
func startSharedGateway(t *testing.T, otelcol string, platform *rfttest.Server, redisAddr, grace string, waitForResult bool, env ...string) *sharedGateway {
	t.Helper()
	g := &sharedGateway{http: freeAddr(t), grpc: freeAddr(t)}
	// Later entries win (os/exec keeps the last value of a key).
	g.collector = startCollector(t, otelcol, sharedGatewayConfig(t), append(newFleetAuth(t).gatewayEnv(), append([]string{
		"PRIME_OTLP_HTTP=" + g.http, "PRIME_OTLP_GRPC=" + g.grpc,
		"PRIME_API_BASE=" + platform.BaseURL(), "PRIME_API_KEY=" + e2eKey,
		"REDIS_ENDPOINT=" + redisAddr, "PRIME_FINALIZE_GRACE=" + grace,
		"PRIME_WAIT_FOR_RESULT=" + strconv.FormatBool(waitForResult), "PRIME_FINALIZE_TIMEOUT=2m",
	}, env...)...)...)
	return g
}

// countRequests counts the platform requests of one method whose path ends
// with suffix.
func countRequests(platform *rfttest.Server, method, suffix string) int {
	n := 0
	for _, r := range platform.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

// closeRequests counts the close-out requests: finalize and status.
func closeRequests(platform *rfttest.Server) int {
	return countRequests(platform, "POST", "/rft/finalize") + countRequests(platform, "PUT", "/status")
}

// createRequests counts the run creates.
func createRequests(platform *rfttest.Server) int {
	return countRequests(platform, "POST", "/rft/external-runs")
}

// confirmedByStep groups a run's confirmed objects by step.
func confirmedByStep(run rfttest.Run) map[int64][][]byte {
	out := map[int64][][]byte{}
	for _, o := range run.Objects {
		if o.Confirmed {
			out[o.Step] = append(out[o.Step], o.Body)
		}
	}
	return out
}

// stepsLanded is true when every step in [from, to] has its "loss" metric
// and every cadence step's confirmed rows number want[step] (rows are
// counted by unique sample_id; checkStepRows makes the full check).
func stepsLanded(t *testing.T, run rfttest.Run, from, to int64, want func(step int64) int64) bool {
	for step := from; step <= to; step++ {
		if _, ok := run.Metrics[step]["loss"]; !ok {
			return false
		}
	}
	objects := confirmedByStep(run)
	for step := from; step <= to; step++ {
		if step%10 != 0 {
			continue
		}
		rows := int64(0)
		for _, body := range objects[step] {
			rows += int64(len(readObject(t, body)))
		}
		if rows < want(step) {
			return false
		}
	}
	return true
}

// sumDispatch adds the train episodes the manifests say were dispatched at
// step.
func sumDispatch(step int64, ms ...manifest) int64 {
	n := int64(0)
	for _, m := range ms {
		n += m.TrainByDispatch[strconv.FormatInt(step, 10)]
	}
	return n
}

// checkRunWhole asserts every step of each range has its metrics, every
// cadence step (step_interval 10) holds exactly the dispatched episodes,
// once, with unique sample_ids, and no other step has an object.
func checkRunWhole(t *testing.T, run rfttest.Run, ranges [][2]int64, ms []manifest, dump func() string) {
	t.Helper()
	objects := confirmedByStep(run)
	inRange := map[int64]bool{}
	for _, rg := range ranges {
		for step := rg[0]; step <= rg[1]; step++ {
			inRange[step] = true
			if _, ok := run.Metrics[step]["loss"]; !ok {
				t.Fatalf("run %s: step %d has no metrics\n%s", run.ID, step, dump())
			}
			if step%10 == 0 {
				checkStepRows(t, run.ID, step, objects[step], sumDispatch(step, ms...))
			}
		}
	}
	for step := range objects {
		if step%10 != 0 || !inRange[step] {
			t.Fatalf("run %s: objects for step %d, which is not a cadence step the trainers played\n%s", run.ID, step, dump())
		}
	}
	for _, o := range run.Objects {
		if !o.Confirmed {
			t.Fatalf("run %s: object %s was uploaded but never confirmed\n%s", run.ID, o.Key, dump())
		}
	}
}

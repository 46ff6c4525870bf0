package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The health check of the shipped gateway (deploy/gateway.yaml as shipped,
// docs/operations.md#health): readiness is GET /status, whose code the
// kubelet reads; GET /status?verbose names every component's status. These
// tests read both over HTTP from the built collector, in the three states:
// healthy, a recoverable error (the platform answering 503, Redis down),
// and a permanent one (the platform refusing the API key).

// healthGateway starts deploy/gateway.yaml as shipped against platform and
// a Redis of its own. The shipped gateway takes only OTLP/gRPC (from the
// agents, over TLS with a token: fleetauth_test.go writes its files); the
// demo trainer speaks OTLP/HTTP, so a plain HTTP receiver on loopback is
// added, and nothing else changes.
func healthGateway(t *testing.T, otelcol string, platform *rfttest.Server, key string) (*collector, *redisServer) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const grpc = "    protocols:\n      grpc:\n"
	config := string(raw)
	if !strings.Contains(config, grpc) {
		t.Fatalf("deploy/gateway.yaml has no %q to add the HTTP receiver to", grpc)
	}
	config = strings.Replace(config, grpc, "    protocols:\n      http:\n        endpoint: ${env:PRIME_OTLP_HTTP}\n      grpc:\n", 1)
	redis := startRedis(t, "", "", false)
	_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
	c := startCollector(t, otelcol, config, append(newFleetAuth(t).gatewayEnv(),
		"PRIME_OTLP_HTTP="+freeAddr(t), "PRIME_OTLP_GRPC="+freeAddr(t),
		"PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+key, "PRIME_TEAM_ID=team-e2e",
		"REDIS_ENDPOINT="+redis.addr, "PRIME_GATEWAY_METRICS_PORT="+metricsPort)...)
	if c.health == "" {
		t.Fatal("deploy/gateway.yaml has no health check on ${env:PRIME_HEALTH_ENDPOINT}")
	}
	return c, redis
}

// healthAnswer is one answer of the health check.
type healthAnswer struct {
	code int
	body string
	st   healthStatus
}

// healthStatus is healthcheckv2's JSON body: the collector's status, and
// with ?verbose each pipeline's and each component's.
type healthStatus struct {
	Healthy    bool                    `json:"healthy"`
	Status     string                  `json:"status"`
	Error      string                  `json:"error"`
	Components map[string]healthStatus `json:"components"`
}

// prime is the prime exporter's status in every pipeline that has it.
func (s healthStatus) prime() map[string]healthStatus {
	out := map[string]healthStatus{}
	for name, p := range s.Components {
		if e, ok := p.Components["exporter:prime"]; ok {
			out[name] = e
		}
	}
	return out
}

// primeIs reports whether the prime exporter has status in the logs and
// the metrics pipeline, with an error that contains errPart.
func (s healthStatus) primeIs(status, errPart string) bool {
	p := s.prime()
	if len(p) != 2 {
		return false
	}
	for _, e := range p {
		if e.Status != status || !strings.Contains(e.Error, errPart) {
			return false
		}
	}
	return true
}

func (a healthAnswer) String() string { return itoa(a.code) + " " + a.body }

// getHealth asks the collector's health check for path.
func getHealth(t *testing.T, c *collector, path string) healthAnswer {
	t.Helper()
	resp, err := http.Get("http://" + c.health + path)
	if err != nil {
		fatalf(t, c, "GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fatalf(t, c, "GET %s: %v", path, err)
	}
	a := healthAnswer{code: resp.StatusCode, body: string(body)}
	if err := json.Unmarshal(body, &a.st); err != nil {
		fatalf(t, c, "GET %s: %d %q is not the health check's JSON: %v", path, a.code, body, err)
	}
	return a
}

// healthWhen polls GET /status?verbose until cond holds, and returns that
// answer with the readiness probe's answer (GET /status) right after it.
// every checks each verbose answer on the way.
func healthWhen(t *testing.T, c *collector, what string, cond, every func(healthAnswer) bool) (verbose, ready healthAnswer) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		v := getHealth(t, c, "/status?verbose")
		if every != nil && !every(v) {
			fatalf(t, c, "while waiting for %s, the health check answered %s", what, v)
		}
		if cond(v) {
			return v, getHealth(t, c, "/status")
		}
		if time.Now().After(deadline) {
			fatalf(t, c, "%s did not happen within 90s; the last answer: %s", what, v)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// trainInBackground plays a run of steps against c and forgets its
// outcome (during an outage or with a refused key, the trainer's own
// export may time out); the test's end stops it. The shipped gateway
// answers each request after its 5 s batch flush, so steps come slowly.
func trainInBackground(t *testing.T, trainer string, c *collector, key string, steps int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, trainer, "-endpoint", c.addr, "-run-key", key,
		"-steps", itoa(steps), "-step-delay", "200ms", "-eval-every", "0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
}

func TestHealthIsReadyWithStatusOKOnAGatewayThatDelivers(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	c, _ := healthGateway(t, otelcol, platform, e2eKey)

	// The shipped gateway answers a sender once its batch is delivered
	// (wait_for_result, a 5 s flush): the first step is enough.
	trainInBackground(t, trainer, c, "healthy", 4)
	waitFor(t, c, "a step on the platform", time.Minute, func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Metrics) >= 1
	})
	verbose, ready := healthWhen(t, c, "status OK", func(a healthAnswer) bool {
		return a.st.Status == "StatusOK" && a.st.primeIs("StatusOK", "")
	}, nil)
	if ready.code != http.StatusOK || ready.st.Status != "StatusOK" || !ready.st.Healthy {
		fatalf(t, c, "readiness of a healthy gateway: want 200 StatusOK, got %s", ready)
	}
	// Only /status is served: a probe on / (v1's path) is a 404.
	resp, err := http.Get("http://" + c.health + "/")
	if err != nil {
		fatalf(t, c, "GET /: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		fatalf(t, c, "GET / answered %d; docs/operations.md#health says 404", resp.StatusCode)
	}
	t.Logf("healthy: GET /status → %s", ready)
	t.Logf("healthy: GET /status?verbose → %s", verbose)
}

func TestHealthStaysReadyWhileThePlatformAnswers503OrRedisIsDownAndTheBodyNamesTheErrorUntilItEnds(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey})
	defer platform.Close()
	c, redis := healthGateway(t, otelcol, platform, e2eKey)
	healthWhen(t, c, "status OK", func(a healthAnswer) bool { return a.st.Status == "StatusOK" }, nil)
	alwaysReady := func(a healthAnswer) bool { return a.code == http.StatusOK && a.st.Healthy }

	platform.SetOutage(&rfttest.Fault{Status: http.StatusServiceUnavailable})
	trainInBackground(t, trainer, c, "outage", 600)
	verbose, ready := healthWhen(t, c, "the platform's outage in the status", func(a healthAnswer) bool {
		return a.st.Status == "StatusRecoverableError" && a.st.primeIs("StatusRecoverableError", "platform API: ")
	}, alwaysReady)
	if ready.code != http.StatusOK || ready.st.Status != "StatusRecoverableError" || !strings.Contains(ready.st.Error, "503") {
		fatalf(t, c, "readiness during a platform outage: want 200 with the 503 named, got %s", ready)
	}
	t.Logf("recoverable: GET /status → %s", ready)
	t.Logf("recoverable: GET /status?verbose → %s", verbose)

	platform.SetOutage(nil)
	verbose, ready = healthWhen(t, c, "status OK after the outage", func(a healthAnswer) bool {
		return a.st.Status == "StatusOK" && a.st.primeIs("StatusOK", "")
	}, alwaysReady)
	if ready.code != http.StatusOK {
		fatalf(t, c, "readiness after the outage: want 200, got %s", ready)
	}
	t.Logf("recovered: GET /status?verbose → %s", verbose)

	// Redis is read by pushes (the heartbeat's failures are not reported):
	// a trainer keeps data coming.
	redis.stop()
	trainInBackground(t, trainer, c, "redis-down", 600)
	verbose, ready = healthWhen(t, c, "Redis's outage in the status", func(a healthAnswer) bool {
		return a.st.Status == "StatusRecoverableError" && a.st.primeIs("StatusRecoverableError", "run registry: ")
	}, alwaysReady)
	if ready.code != http.StatusOK {
		fatalf(t, c, "readiness with Redis down: want 200, got %s", ready)
	}
	t.Logf("Redis down: GET /status?verbose → %s", verbose)
	redis.restart()
	healthWhen(t, c, "status OK after Redis is back", func(a healthAnswer) bool {
		return a.st.Status == "StatusOK" && a.st.primeIs("StatusOK", "")
	}, alwaysReady)
}

func TestHealthFailsReadinessNamingTheErrorWhenThePlatformRefusesTheKeyWhileThePortStaysUp(t *testing.T) {
	otelcol, trainer := binaries(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: "sk-the-platforms-key"})
	defer platform.Close()
	c, _ := healthGateway(t, otelcol, platform, e2eKey) // not the platform's key
	healthWhen(t, c, "status OK", func(a healthAnswer) bool { return a.st.Status == "StatusOK" }, nil)

	trainInBackground(t, trainer, c, "refused", 20)
	verbose, ready := healthWhen(t, c, "the refused key in the status", func(a healthAnswer) bool {
		return a.st.Status == "StatusPermanentError"
	}, nil)
	if !verbose.st.primeIs("StatusPermanentError", "the platform refused the API key (401)") {
		fatalf(t, c, "the prime exporter in both pipelines should name the refused key: %s", verbose)
	}
	if ready.code != http.StatusInternalServerError || ready.st.Healthy || !strings.Contains(ready.st.Error, "set a valid api_key") {
		fatalf(t, c, "readiness with a refused key: want 500 naming the key, got %s", ready)
	}
	if strings.Contains(verbose.body, e2eKey) {
		fatalf(t, c, "the health check's body shows the API key")
	}
	// Liveness is a TCP check on the health port: it stays up, since a
	// restart would not make the key valid.
	conn, err := net.DialTimeout("tcp", c.health, time.Second)
	if err != nil {
		fatalf(t, c, "the health port is down with a refused key: %v", err)
	}
	conn.Close()
	t.Logf("permanent: GET /status → %s", ready)
	t.Logf("permanent: GET /status?verbose → %s", verbose)
}

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// The run status route (the prime_status extension): a trainer's
// prime.run.start record makes its run, and the route tells the trainer
// the run's id and dashboard, or why the platform refused it.

// statusConfig is onlineConfig's collector with the status route.
func statusConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-e2e", Status: true, Queue: queueParams{FlushTimeout: "200ms"},
	})
}

// runStatus is the route's answer.
type runStatus struct {
	State     string `json:"state"`
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	URL       string `json:"url"`
	Directory string `json:"directory"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
	Error     string `json:"error"`
}

// statusCollector starts the built collector on statusConfig against
// platform, the key it sends being key; it returns the collector and the
// status route's address.
func statusCollector(t *testing.T, platform *rfttest.Server, key string) (*collector, string) {
	t.Helper()
	otelcol, _ := binaries(t)
	status := freeAddr(t)
	c := startCollector(t, otelcol, statusConfig(t), "PRIME_OTLP_HTTP="+freeAddr(t), "PRIME_STATUS_ENDPOINT="+status,
		"PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+key)
	return c, status
}

// sendRunStart posts prime_otel's init() record over OTLP/HTTP JSON: a
// prime.run.start event under the run's resource.
func sendRunStart(t *testing.T, addr, key string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"resourceLogs": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{
			otlpKV("prime.run.key", key), otlpKV("prime.run.kind", "train"), otlpKV("prime.run.model", "Qwen/Qwen3-0.6B"),
		}},
		"scopeLogs": []any{map[string]any{"scope": map[string]any{"name": "prime_otel"}, "logRecords": []any{
			otlpRecord(fmt.Sprint(time.Now().UnixNano()), "prime.run.start", nil),
		}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://"+addr+"/v1/logs", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		reply, _ := io.ReadAll(resp.Body)
		t.Fatalf("the collector answered the start record %d: %s", resp.StatusCode, reply)
	}
}

// getStatus asks a status route; code is the HTTP status.
func getStatus(t *testing.T, addr, query string) (code int, st runStatus, body string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/prime/v1/runs/status?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("the status route answered %d with no JSON: %s", resp.StatusCode, raw)
	}
	return resp.StatusCode, st, string(raw)
}

// settledStatus polls the route until the run is neither unknown nor
// pending, within 20 s: what prime_otel's init() waits for.
func settledStatus(t *testing.T, c *collector, addr, query string) runStatus {
	t.Helper()
	var st runStatus
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, got, body := getStatus(t, addr, query)
		if code != http.StatusOK {
			fatalf(t, c, "the status route answered %d: %s", code, body)
		}
		st = got
		if st.State != "unknown" && st.State != "pending" {
			return st
		}
		if time.Now().After(deadline) {
			fatalf(t, c, "the run is still %s after 20s", st.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTheStatusRouteTellsATrainerItsRunOrWhyItWasRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		platform rfttest.Options
		want     func(p *rfttest.Server) runStatus
		// message is part of the refusal's error: the platform's words.
		message string
	}{
		{"the run is created: running, with its dashboard",
			rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}},
			func(p *rfttest.Server) runStatus {
				runs := p.Runs()
				if len(runs) != 1 {
					return runStatus{State: fmt.Sprintf("%d runs on the platform", len(runs))}
				}
				return runStatus{State: "running", Kind: "train", ID: runs[0].ID, URL: "https://app.primeintellect.ai/dashboard/training/" + runs[0].ID}
			}, ""},
		{"the platform refuses the key: refused, unauthorized",
			rfttest.Options{APIKey: "the-platform-wants-another-key"},
			func(*rfttest.Server) runStatus {
				return runStatus{State: "refused", Kind: "train", Reason: "unauthorized"}
			},
			"Invalid or missing API key"},
		{"the platform refuses the team: refused, forbidden",
			rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"another-team"}},
			func(*rfttest.Server) runStatus {
				return runStatus{State: "refused", Kind: "train", Reason: "forbidden"}
			},
			"External training runs are not enabled for this team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			platform := rfttest.NewServer(tc.platform)
			defer platform.Close()
			c, status := statusCollector(t, platform, e2eKey)
			if _, st, _ := getStatus(t, status, "kind=train&key=status-run"); st.State != "unknown" {
				fatalf(t, c, "before its start record the run is %q, want unknown", st.State)
			}
			sendRunStart(t, c.addr, "status-run")
			st := settledStatus(t, c, status, "kind=train&key=status-run")
			if !strings.Contains(st.Error, tc.message) {
				fatalf(t, c, "the answer's error %q does not carry %q", st.Error, tc.message)
			}
			if strings.Contains(st.Error, e2eKey) {
				fatalf(t, c, "the answer carries the API key: %q", st.Error)
			}
			st.Error = ""
			if want := tc.want(platform); st != want {
				fatalf(t, c, "status = %+v, want %+v", st, want)
			}
			if code, st, body := getStatus(t, status, "kind=train"); code != http.StatusBadRequest || !strings.Contains(st.Error, "key or id") {
				fatalf(t, c, "a query without key or id answered %d: %s", code, body)
			}
			c.stop()
		})
	}
}

// prime_otel's init() against the built collector, with Debian's python3
// and the package from the tree (python/src): a refused key makes init()
// raise with the platform's message, within the trainer's bounded wait.
func TestPrimeOtelInitRaisesWithThePlatformsMessageWhenTheKeyIsRefused(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s is needed (apt-get install python3): %v", python, err)
	}
	src, err := filepath.Abs(filepath.Join("..", "python", "src"))
	if err != nil {
		t.Fatal(err)
	}
	platform := rfttest.NewServer(rfttest.Options{APIKey: "the-platform-wants-another-key"})
	defer platform.Close()
	c, status := statusCollector(t, platform, e2eKey)

	script := filepath.Join(t.TempDir(), "init.py")
	if err := os.WriteFile(script, []byte(`import prime_otel as pr
pr.init(kind="train", model="m", environments=["gsm8k"])
print("init() returned")
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, script)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PYTHONPATH=" + src, "PYTHONDONTWRITEBYTECODE=1",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + c.addr,
		"PRIME_STATUS_ENDPOINT=http://" + status,
		"PRIME_RUN_KEY=init-refused-" + fmt.Sprint(time.Now().UnixNano()),
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	took := time.Since(start)
	switch {
	case err == nil:
		fatalf(t, c, "init() returned for a refused key (%s):\nstdout:\n%s\nstderr:\n%s", took, stdout.String(), stderr.String())
	case ctx.Err() != nil:
		fatalf(t, c, "init() did not return within 60s:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	case took > 20*time.Second:
		fatalf(t, c, "init() took %s to raise, want within 20s:\nstderr:\n%s", took, stderr.String())
	}
	if !strings.Contains(stderr.String(), "Invalid or missing API key") {
		fatalf(t, c, "init()'s error does not carry the platform's message:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), e2eKey) {
		fatalf(t, c, "the trainer's output carries the API key:\n%s", stderr.String())
	}
}

// The agent tier (deploy/agent.yaml and deploy/gateway.yaml as shipped, the
// agent sending over TLS with a token: fleetauth_test.go): the agent has no
// prime exporter, so its status route asks the gateways'.
// A run created through the agent is found through it, whichever gateway
// took it.
func TestTheAgentsStatusRouteAnswersForARunCreatedThroughIt(t *testing.T) {
	otelcol, _ := binaries(t)
	agentBin := agentBinary(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	redis := startRedis(t, "", t.TempDir(), false)
	gatewayConfig, err := os.ReadFile(filepath.Join("..", "deploy", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	auth := newFleetAuth(t)
	var grpcs, statuses []string
	for range 2 {
		grpc, status := freeAddr(t), freeAddr(t)
		_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
		// PRIME_OTLP_HTTP is only what startCollector waits for: the
		// gateway's one receiver, gRPC.
		startCollector(t, otelcol, string(gatewayConfig), append(auth.gatewayEnv(),
			"PRIME_OTLP_GRPC="+grpc, "PRIME_OTLP_HTTP="+grpc, "PRIME_STATUS_ENDPOINT="+status,
			"PRIME_API_BASE="+platform.BaseURL(), "PRIME_API_KEY="+e2eKey, "PRIME_TEAM_ID=team-e2e",
			"REDIS_ENDPOINT="+redis.addr, "PRIME_GATEWAY_METRICS_PORT="+metricsPort)...)
		grpcs, statuses = append(grpcs, grpc), append(statuses, "http://"+status)
	}
	agentConfig, err := os.ReadFile(filepath.Join("..", "deploy", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, agentStatus := freeAddr(t), freeAddr(t)
	_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
	agent := startCollector(t, agentBin, string(agentConfig), append(auth.agentEnv(),
		"PRIME_OTLP_HTTP="+httpAddr, "PRIME_OTLP_GRPC="+freeAddr(t), "PRIME_GATEWAYS="+strings.Join(grpcs, ","),
		"PRIME_AGENT_STORAGE="+t.TempDir(), "PRIME_AGENT_METRICS_PORT="+metricsPort,
		"PRIME_STATUS_ENDPOINT="+agentStatus, "PRIME_STATUS_GATEWAYS="+strings.Join(statuses, ","))...)

	if code, st, body := getStatus(t, agentStatus, "key=agent-status-run"); code != http.StatusOK || st.State != "unknown" {
		fatalf(t, agent, "before its start record the agent answered %d: %s", code, body)
	}
	sendRunStart(t, httpAddr, "agent-status-run")
	st := settledStatus(t, agent, agentStatus, "key=agent-status-run")
	runs := platform.Runs()
	if len(runs) != 1 {
		fatalf(t, agent, "want one run on the platform, got %d", len(runs))
	}
	want := runStatus{State: "running", Kind: "train", ID: runs[0].ID, URL: "https://app.primeintellect.ai/dashboard/training/" + runs[0].ID}
	if st != want {
		fatalf(t, agent, "the agent's status = %+v, want %+v", st, want)
	}
	if _, byID, _ := getStatus(t, agentStatus, "id="+runs[0].ID); byID.State != "running" {
		fatalf(t, agent, "asked by its id the run is %+v", byID)
	}
}

// With no gateway reachable the agent's route says so: a 502, not unknown.
func TestTheAgentsStatusRouteIsA502WhenNoGatewayAnswers(t *testing.T) {
	agentBin := agentBinary(t)
	agentConfig, err := os.ReadFile(filepath.Join("..", "deploy", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, agentStatus := freeAddr(t), freeAddr(t)
	_, metricsPort, _ := net.SplitHostPort(freeAddr(t))
	agent := startCollector(t, agentBin, string(agentConfig), append(newFleetAuth(t).agentEnv(),
		"PRIME_OTLP_HTTP="+httpAddr, "PRIME_OTLP_GRPC="+freeAddr(t), "PRIME_GATEWAYS="+freeAddr(t),
		"PRIME_AGENT_STORAGE="+t.TempDir(), "PRIME_AGENT_METRICS_PORT="+metricsPort,
		"PRIME_STATUS_ENDPOINT="+agentStatus, "PRIME_STATUS_GATEWAYS=http://"+freeAddr(t))...)
	code, st, body := getStatus(t, agentStatus, "key=nowhere")
	if code != http.StatusBadGateway || st.State != "unavailable" || !strings.Contains(st.Error, "no gateway answered") {
		fatalf(t, agent, "with no gateway up the agent answered %d: %s", code, body)
	}
	agent.stop()
}

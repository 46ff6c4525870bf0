//go:build image

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The gateway image (deploy/image/Containerfile) run with podman, as
// scripts/image.sh --test does: the baked config deploy/image/gateway.yaml,
// unchanged, against the fake platform on loopback (--network=host), its
// file_storage directory on a host volume. Its receivers take TLS only and a
// bearer token on every request: the test's certificate, key and token
// (fleetauth_test.go) are mounted read-only, and the demo trainer sends over
// https with the token in OTEL_EXPORTER_OTLP_HEADERS, as a user's would.

// imageSteps is long enough for two sample-table steps at the config's
// default samples.step_interval of 10.
const (
	imageSteps        = 20
	imageStepInterval = 10
	imageStorage      = "/var/lib/otelcol-prime" // the image's storage directory
	imageUID          = 10001                    // the image's user
	imageCredentials  = "/run/secrets/prime"     // where the test mounts the credential files
)

// gatewayImage returns the image to run and the demo trainer, failing the
// test when podman or either of them is missing: these tests never skip.
// podman needs, on these machines, a containers.conf without default
// ulimits (setting RLIMIT_NPROC/RLIMIT_NOFILE is refused): scripts/image.sh
// names one in CONTAINERS_CONF; run on its own, the test writes one.
func gatewayImage(t *testing.T) (image, trainer string) {
	t.Helper()
	if _, err := exec.LookPath("podman"); err != nil {
		t.Fatalf("podman is not installed (%v): run bash scripts/image.sh --test, which installs it", err)
	}
	image, trainer = os.Getenv("PRIME_GATEWAY_IMAGE"), os.Getenv("PRIME_DEMOTRAINER")
	if image == "" || trainer == "" {
		t.Fatal("PRIME_GATEWAY_IMAGE and PRIME_DEMOTRAINER must name the built image and trainer: run bash scripts/image.sh --test")
	}
	if os.Getenv("CONTAINERS_CONF") == "" {
		conf := filepath.Join(t.TempDir(), "containers.conf")
		if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("CONTAINERS_CONF", conf)
	}
	return image, trainer
}

// podman runs podman with runc (crun refuses these machines' hybrid
// cgroups).
func podman(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", append([]string{"--runtime", "runc"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("podman %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// gatewayPorts are the container's listening addresses on the host's
// loopback: free ports, so that the test does not meet other collectors.
type gatewayPorts struct{ otlpHTTP, otlpGRPC, health, metrics string }

func freeGatewayPorts(t *testing.T) gatewayPorts {
	return gatewayPorts{freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)}
}

// container is a gateway container the test started.
type container struct {
	t     *testing.T
	name  string
	ports gatewayPorts
	auth  fleetAuth // the files on the host
}

// imageAuth writes the credential files into a directory the image's user
// can read (as a Secret volume with fsGroup gives them to it), and points the
// trainers the test starts at the gateway's CA and token.
func imageAuth(t *testing.T) (fleetAuth, string) {
	t.Helper()
	a := newFleetAuth(t)
	dir := volume(t)
	for _, f := range []string{a.caFile, a.certFile, a.keyFile, a.tokenFile} {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(f))
		if err := os.WriteFile(dst, body, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dst, imageUID, imageUID); err != nil {
			t.Fatal(err)
		}
	}
	// The OTel SDK's own variables: the demo trainer trusts the test's CA
	// and sends the token (%20: the header value is URL-encoded).
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", a.caFile)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20"+e2eGatewayToken)
	return a, dir
}

// httpsEndpoint is the URL the demo trainer sends to.
func (c *container) httpsEndpoint() string { return "https://" + c.ports.otlpHTTP }

// startGateway runs the image detached on the host's network, with storage
// mounted at the image's storage directory and the platform's URL and key
// in the environment, and waits until its OTLP/HTTP port answers.
func startGateway(t *testing.T, image, name, storage string, platform *rfttest.Server, ports gatewayPorts, auth fleetAuth, authDir string) *container {
	t.Helper()
	_, metricsPort, _ := net.SplitHostPort(ports.metrics)
	c := &container{t: t, name: name, ports: ports, auth: auth}
	_, _ = podman(t, "rm", "--force", name) // a leftover of an interrupted run
	if _, err := podman(t, "run", "--detach", "--name", name, "--network=host",
		"--volume", storage+":"+imageStorage, "--volume", authDir+":"+imageCredentials+":ro",
		"--env", "PRIME_TLS_CERT_FILE="+imageCredentials+"/tls.crt", "--env", "PRIME_TLS_KEY_FILE="+imageCredentials+"/tls.key",
		"--env", "PRIME_INGEST_TOKEN_FILE="+imageCredentials+"/token",
		"--env", "PRIME_API_BASE="+platform.BaseURL(), "--env", "PRIME_API_KEY="+e2eKey, "--env", "PRIME_TEAM_ID=team-e2e",
		"--env", "PRIME_OTLP_HTTP="+ports.otlpHTTP, "--env", "PRIME_OTLP_GRPC="+ports.otlpGRPC,
		"--env", "PRIME_HEALTH_ENDPOINT="+ports.health,
		"--env", "PRIME_GATEWAY_METRICS_HOST=127.0.0.1", "--env", "PRIME_GATEWAY_METRICS_PORT="+metricsPort,
		image); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("container %s's output:\n%s", name, c.logs())
		}
		_, _ = podman(t, "rm", "--force", "--time", "0", name)
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", ports.otlpHTTP, 100*time.Millisecond)
		if err == nil {
			conn.Close()
			return c
		}
		if !c.running() {
			t.Fatalf("container %s exited before it listened", name)
		}
		if time.Now().After(deadline) {
			t.Fatalf("container %s did not listen on %s in 60s", name, ports.otlpHTTP)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *container) logs() string {
	out, err := podman(c.t, "logs", c.name)
	if err != nil {
		return err.Error()
	}
	return out
}

func (c *container) state(format string) string {
	out, err := podman(c.t, "inspect", "--format", format, c.name)
	if err != nil {
		c.t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func (c *container) running() bool { return c.state("{{.State.Running}}") == "true" }

// kill is kill -9 of the container's collector: no shutdown, no drain.
func (c *container) kill() {
	c.t.Helper()
	if _, err := podman(c.t, "kill", "--signal", "KILL", c.name); err != nil {
		c.t.Fatal(err)
	}
	c.waitExited(10 * time.Second)
	if code := c.state("{{.State.ExitCode}}"); code != "137" {
		c.t.Fatalf("container %s killed with SIGKILL exited with %s, want 137", c.name, code)
	}
}

// stop is podman stop (SIGTERM); the collector must exit cleanly.
func (c *container) stop() {
	c.t.Helper()
	if _, err := podman(c.t, "stop", "--time", "30", c.name); err != nil {
		c.t.Fatal(err)
	}
	c.waitExited(5 * time.Second)
	if code := c.state("{{.State.ExitCode}}"); code != "0" {
		c.t.Fatalf("container %s exited with %s on SIGTERM", c.name, code)
	}
}

func (c *container) waitExited(d time.Duration) {
	c.t.Helper()
	for deadline := time.Now().Add(d); c.running(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("container %s still runs %s after being stopped", c.name, d)
		}
	}
}

// health is the answer of GET /status on the health port.
func (c *container) health() (int, string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + c.ports.health + "/status")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), err
}

// fileUID is the owner of path.
func fileUID(t *testing.T, path string) int {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(info.Sys().(*syscall.Stat_t).Uid)
}

// waitUntil polls cond until it holds, failing after d (the containers'
// output is logged when the test fails).
func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// volume is a host directory for the container's storage, owned by the
// image's user as a Kubernetes fsGroup or a chown in an init step would
// make it. The test runs as root (CI does).
func volume(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chown(dir, imageUID, imageUID); err != nil {
		t.Fatalf("chown %s to the image's user %d: %v (run the test as root, as CI does)", dir, imageUID, err)
	}
	return dir
}

// containerName is unique to this test process.
func containerName(role string) string {
	return "prime-image-test-" + strconv.Itoa(os.Getpid()) + "-" + role
}

// checkImageRun checks the run on the platform after a close-out: one run,
// completed, every step's metrics (the same values however often posted),
// every sample-table step's episodes once in confirmed objects and no
// object for another step.
func checkImageRun(t *testing.T, c *container, platform *rfttest.Server, sent manifest, steps int) rfttest.Run {
	t.Helper()
	runs := platform.Runs()
	if len(runs) != 1 {
		t.Fatalf("want exactly one run, got %d", len(runs))
	}
	run := runs[0]
	if run.Status != rfttest.StatusCompleted || !run.Finalized {
		t.Fatalf("want a completed, finalized run, got status %s finalized %v", run.Status, run.Finalized)
	}
	// A step's metrics accepted again after the kill (the queue hands back
	// a batch whose first steps had landed) carry the same values.
	posts := acceptedMetricPosts(t, platform.Requests())
	for step := int64(1); step <= int64(steps); step++ {
		for _, key := range []string{"loss", "reward/mean", "lr", "grad_norm"} {
			got := posts[step][key]
			if _, ok := run.Metrics[step][key]; !ok || len(got) == 0 {
				t.Fatalf("step %d has no %q: %v", step, key, run.Metrics[step])
			}
			for _, post := range got[1:] {
				if post.value != got[0].value {
					t.Fatalf("step %d's %q was accepted with different values: %v", step, key, got)
				}
			}
		}
	}
	byStep := map[int64][][]byte{}
	for _, o := range run.Objects {
		if !o.Confirmed {
			t.Fatalf("object %s was uploaded but never confirmed", o.Key)
		}
		if o.Step%imageStepInterval != 0 {
			t.Fatalf("an object for step %d, off the sample-table cadence of %d", o.Step, imageStepInterval)
		}
		byStep[o.Step] = append(byStep[o.Step], o.Body)
	}
	for step := int64(imageStepInterval); step <= int64(steps); step += imageStepInterval {
		checkStepRows(t, run.ID, step, byStep[step], sent.TrainByDispatch[itoa(int(step))])
	}
	if strings.Contains(c.logs(), e2eKey) {
		t.Fatal("the API key appears in the container's output")
	}
	if strings.Contains(c.logs(), e2eGatewayToken) {
		t.Fatal("the ingest token appears in the container's output")
	}
	return run
}

func TestTheGatewayImageDeliversADemoRunAsANonRootUserAndAnswersHealthy(t *testing.T) {
	image, trainer := gatewayImage(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	storage := volume(t)
	auth, authDir := imageAuth(t)
	c := startGateway(t, image, containerName("gateway"), storage, platform, freeGatewayPorts(t), auth, authDir)

	waitUntil(t, "health 200 on GET /status", 30*time.Second, func() bool {
		code, _, err := c.health()
		return err == nil && code == http.StatusOK
	})
	manifestPath := filepath.Join(t.TempDir(), "manifest.json")
	runTrainer(t, trainer, c.httpsEndpoint(), "-steps", itoa(imageSteps), "-run-key", "image-run", "-step-delay", "5ms", "-manifest", manifestPath)
	sent := readManifest(t, manifestPath)
	waitUntil(t, "the run's close-out", 90*time.Second, func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	})
	code, body, err := c.health()
	if err != nil || code != http.StatusOK {
		t.Fatalf("after the run, GET /status answered %d %v:\n%s", code, err, body)
	}
	run := checkImageRun(t, c, platform, sent, imageSteps)

	// The collector ran as the image's user: what it wrote on the volume is
	// that user's.
	entries, err := os.ReadDir(storage)
	if err != nil || len(entries) == 0 {
		t.Fatalf("file_storage wrote nothing on the volume: %v", err)
	}
	for _, e := range entries {
		if uid := fileUID(t, filepath.Join(storage, e.Name())); uid != imageUID {
			t.Fatalf("%s on the volume belongs to uid %d, want the image's user %d", e.Name(), uid, imageUID)
		}
	}
	if user := c.state("{{.Config.User}}"); user != "10001:10001" {
		t.Fatalf("the container's user is %q, want 10001:10001", user)
	}
	c.stop()
	t.Logf("run %s: %d steps, %d objects, health 200 %s; on the volume: %d files of uid %d",
		run.ID, imageSteps, len(run.Objects), strings.TrimSpace(body), len(entries), imageUID)
}

func TestTheGatewayImageKilledDuringAnOutageRestartsOnItsVolumeAndLosesNothing(t *testing.T) {
	image, trainer := gatewayImage(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	storage := volume(t)
	ports := freeGatewayPorts(t)
	auth, authDir := imageAuth(t)
	first := startGateway(t, image, containerName("first"), storage, platform, ports, auth, authDir)

	const steps = 30
	manifestPath := filepath.Join(t.TempDir(), "manifest.json")
	type exit struct {
		out string
		err error
	}
	done := make(chan exit, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		out, err := exec.CommandContext(ctx, trainer, "-endpoint", "https://"+ports.otlpHTTP, "-steps", itoa(steps), "-run-key", "image-kill",
			"-step-delay", "300ms", "-manifest", manifestPath).CombinedOutput()
		done <- exit{string(out), err}
	}()
	// The platform goes down mid-run, once the run and its first steps are
	// on it (the first batch, after the queue's 5 s flush_timeout); the
	// trainer goes on into the outage, and the gateway queues the rest on
	// the volume.
	waitUntil(t, "the run's first step on the platform", time.Minute, func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Metrics) >= 1
	})
	platform.SetOutage(&rfttest.Fault{Status: http.StatusServiceUnavailable})
	stepsBefore := len(platform.Runs()[0].Metrics)
	if e := <-done; e.err != nil {
		t.Fatalf("the trainer failed: %v\n%s", e.err, e.out)
	}
	sent := readManifest(t, manifestPath)
	refused := func() int { return platform.Outages()[0].Refused }
	waitUntil(t, "a refused request", time.Minute, func() bool { return refused() > 0 })
	// A recoverable error keeps the gateway ready.
	if code, body, err := first.health(); err != nil || code != http.StatusOK {
		t.Fatalf("during the outage, GET /status answered %d %v, want 200:\n%s", code, err, body)
	}
	first.kill()
	atKill := refused()
	if stepsBefore >= steps {
		t.Fatalf("every step had landed before the outage: the kill proves nothing")
	}

	second := startGateway(t, image, containerName("second"), storage, platform, ports, auth, authDir)
	waitUntil(t, "a refused request from the new container", time.Minute, func() bool { return refused() > atKill })
	platform.SetOutage(nil)
	waitUntil(t, "the run's close-out after the outage", 3*time.Minute, func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && runs[0].Status == rfttest.StatusCompleted
	})
	run := checkImageRun(t, second, platform, sent, steps)
	if !strings.Contains(second.logs(), "Restored runs from storage") {
		t.Fatal("the new container did not restore its runs from the volume")
	}
	second.stop()
	outage := platform.Outages()[0]
	t.Logf("run %s: %d of %d steps landed before the outage; the trainer finished in it; %d requests refused (%v), the first container killed (SIGKILL) after %d; the second, on the same volume, delivered the rest: every step's metrics, %d objects, each episode once",
		run.ID, stepsBefore, steps, outage.Refused, outage.ByRoute, atKill, len(run.Objects))
}

// The image's receivers refuse a sender without the token: 401 over
// OTLP/HTTP for no token and for a wrong one (whose value the answer and the
// container's output never repeat), and no answer at all over plain HTTP;
// the same request with the token is taken.
func TestTheGatewayImageRefusesASenderWithoutItsToken(t *testing.T) {
	image, _ := gatewayImage(t)
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	auth, authDir := imageAuth(t)
	c := startGateway(t, image, containerName("auth"), volume(t), platform, freeGatewayPorts(t), auth, authDir)

	ca, err := os.ReadFile(auth.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("the test CA does not parse")
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	// An empty ExportLogsServiceRequest: a valid OTLP/HTTP body.
	post := func(scheme, authorization string) (int, string, error) {
		req, err := http.NewRequest(http.MethodPost, scheme+"://"+c.ports.otlpHTTP+"/v1/logs", strings.NewReader(""))
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		return resp.StatusCode, string(body), nil
	}
	const wrongToken = "not-the-ingest-token-31"
	for _, tc := range []struct {
		name, scheme, authorization string
		want                        int
	}{
		{"no token", "https", "", http.StatusUnauthorized},
		{"a wrong token", "https", "Bearer " + wrongToken, http.StatusUnauthorized},
		{"the token without its scheme", "https", e2eGatewayToken, http.StatusUnauthorized},
		{"the token", "https", "Bearer " + e2eGatewayToken, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := post(tc.scheme, tc.authorization)
			if err != nil || code != tc.want {
				t.Fatalf("POST /v1/logs with %s: %d %v, want %d:\n%s", tc.name, code, err, tc.want, body)
			}
			if strings.Contains(body, wrongToken) || strings.Contains(body, e2eGatewayToken) {
				t.Fatalf("the answer repeats the token: %s", body)
			}
		})
	}
	if code, _, err := post("http", "Bearer "+e2eGatewayToken); err == nil && code == http.StatusOK {
		t.Fatal("the receiver took a request over plain HTTP")
	}
	logs := c.logs()
	if strings.Contains(logs, wrongToken) || strings.Contains(logs, e2eGatewayToken) {
		t.Fatalf("a token appears in the container's output:\n%s", logs)
	}
	c.stop()
}

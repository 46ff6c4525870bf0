package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
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

// The multi-tenant gateway of multitenant_test.go as a process, and its
// senders: the demo trainer set up from the OTel environment variables,
// and plain OTLP/HTTP and OTLP/gRPC requests with or without a key.

// mtGateway is the running multi-tenant gateway and what a sender needs to
// reach it.
type mtGateway struct {
	c        *collector
	otelcol  string
	config   string
	env      []string // what the collector is set with: a restart keeps it
	httpAddr string   // OTLP/HTTP over TLS
	grpcAddr string   // OTLP/gRPC over TLS
	// statusAddr is the run status route, over TLS behind prime_auth.
	statusAddr string
	caFile     string // the CA that signed the receivers' certificate
	// metricsPort is where the collector serves its own metrics.
	metricsPort string
	roots       *x509.CertPool
}

// startMultitenantGateway runs deploy/multitenant/gateway.yaml as shipped,
// set only through its environment variables, against platform.
func startMultitenantGateway(t *testing.T, otelcol string, platform *rfttest.Server) *mtGateway {
	t.Helper()
	return startMultitenantGatewayEdited(t, otelcol, platform, func(config string) string { return config })
}

// startMultitenantGatewayEdited is startMultitenantGateway on the shipped
// config as edit changes it.
func startMultitenantGatewayEdited(t *testing.T, otelcol string, platform *rfttest.Server, edit func(string) string) *mtGateway {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "deploy", "multitenant", "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	g, auth := newMTCollector(t, otelcol, edit(string(raw)))
	g.env = []string{
		"PRIME_API_BASE=" + platform.URL(),
		"PRIME_OTLP_HTTP=" + g.httpAddr, "PRIME_OTLP_GRPC=" + g.grpcAddr, "PRIME_STATUS_ENDPOINT=" + g.statusAddr,
		"PRIME_HEALTH_ENDPOINT=" + freeAddr(t),
		"PRIME_STORAGE_DIR=" + filepath.Join(t.TempDir(), "storage"),
		"PRIME_TLS_CERT_FILE=" + auth.certFile, "PRIME_TLS_KEY_FILE=" + auth.keyFile,
		"PRIME_METRICS_PORT=" + g.metricsPort,
	}
	g.c = startCollector(t, otelcol, g.config, g.env...)
	return g
}

// newMTCollector is a collector on config that takes keys as a
// multi-tenant gateway does, before it starts: free ports for its TLS
// receivers, status route and metrics, and the test CA its senders trust;
// auth holds its certificate.
func newMTCollector(t *testing.T, otelcol, config string) (*mtGateway, fleetAuth) {
	t.Helper()
	auth := newFleetAuth(t) // a CA of its own and a certificate for 127.0.0.1
	g := &mtGateway{
		otelcol: otelcol, config: config,
		httpAddr: freeAddr(t), grpcAddr: freeAddr(t), statusAddr: freeAddr(t), caFile: auth.caFile, roots: x509.NewCertPool(),
	}
	_, g.metricsPort, _ = net.SplitHostPort(freeAddr(t))
	pem, err := os.ReadFile(auth.caFile)
	if err != nil || !g.roots.AppendCertsFromPEM(pem) {
		t.Fatalf("reading the test CA: %v", err)
	}
	return g, auth
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

package primeauthextension

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	authmeta "github.com/primeintellect/primeexporter/primeauthextension/internal/metadata"
)

const (
	aliceKey = "sk-alice-forwarded-1f2e"
	bobKey   = "sk-bob-forwarded-9a8b"
)

// forwarder is a prime_auth extension as the host hands it to a client:
// created, not started (forwarding asks the platform nothing).
func forwarder(t *testing.T) *authExtension {
	t.Helper()
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(authmeta.Type), createDefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	return ext.(*authExtension)
}

// received is a request's context as a receiver with include_metadata:
// true leaves it: the sender's headers in client.Info.Metadata.
func received(headers map[string][]string) context.Context {
	return client.NewContext(context.Background(), client.Info{Metadata: client.NewMetadata(headers)})
}

func bearer(key string) map[string][]string {
	return map[string][]string{"authorization": {"Bearer " + key}}
}

// tlsPair is a server certificate for 127.0.0.1 and the pool that trusts it.
func tlsPair(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	s := httptest.NewUnstartedServer(http.NotFoundHandler())
	s.StartTLS()
	defer s.Close()
	roots := x509.NewCertPool()
	roots.AddCert(s.Certificate())
	return s.TLS.Certificates[0], roots
}

// grpcGateway is a gRPC server over TLS that records the authorization
// metadata of every RPC it is sent.
type grpcGateway struct {
	addr  string
	roots *x509.CertPool
	mu    sync.Mutex
	seen  []string
}

func (g *grpcGateway) calls() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.seen...)
}

func startGRPCGateway(t *testing.T) *grpcGateway {
	t.Helper()
	cert, roots := tlsPair(t)
	g := &grpcGateway{roots: roots}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			g.mu.Lock()
			g.seen = append(g.seen, strings.Join(md.Get("authorization"), ","))
			g.mu.Unlock()
			return next(ctx, req)
		}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return g
}

func TestEachForwardedRPCCarriesTheKeyOfTheRequestItForwards(t *testing.T) {
	g := startGRPCGateway(t)
	creds, err := forwarder(t).PerRPCCredentials()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: g.roots, MinVersion: tls.VersionTLS13})),
		grpc.WithPerRPCCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	// Two trainers' requests over one connection: each goes with its own.
	for _, key := range []string{aliceKey, bobKey, aliceKey} {
		if _, err := hc.Check(received(bearer(key)), &healthpb.HealthCheckRequest{}); err != nil {
			t.Fatalf("an RPC forwarding a request with a key: %v", err)
		}
	}
	want := []string{"Bearer " + aliceKey, "Bearer " + bobKey, "Bearer " + aliceKey}
	if got := g.calls(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the gateway was sent %q, want %q", got, want)
	}

	// A request without a key is not sent: the RPC fails before it leaves.
	_, err = hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err == nil || !strings.Contains(err.Error(), "include_metadata: true") {
		t.Fatalf("an RPC forwarding a request without a key: %v, want the error naming include_metadata", err)
	}
	if n := len(g.calls()); n != len(want) {
		t.Fatalf("a request without a key reached the gateway (%d calls)", n)
	}
}

func TestAForwardedKeyIsNeverSentOverAPlainGRPCConnection(t *testing.T) {
	g := startGRPCGateway(t)
	creds, err := forwarder(t).PerRPCCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if !creds.RequireTransportSecurity() {
		t.Fatal("the credentials allow a plain connection")
	}
	conn, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(creds))
	if err == nil {
		defer conn.Close()
		_, err = healthpb.NewHealthClient(conn).Check(received(bearer(aliceKey)), &healthpb.HealthCheckRequest{})
	}
	if err == nil {
		t.Fatal("a key was sent over a plain connection")
	}
	if strings.Contains(err.Error(), aliceKey) {
		t.Fatalf("the error repeats the key: %v", err)
	}
	if n := len(g.calls()); n != 0 {
		t.Fatalf("the gateway was reached over a plain connection (%d calls)", n)
	}
}

// recordingServer answers 204 and records each request's Authorization.
func recordingServer(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func TestAnHTTPClientWithPrimeAuthSendsTheKeyOfTheRequestItForwards(t *testing.T) {
	s, seen := recordingServer(t)
	// As a collector's component builds its client: confighttp with
	// auth: {authenticator: prime_auth}.
	id := component.NewID(authmeta.Type)
	cfg := confighttp.NewDefaultClientConfig()
	cfg.Auth = configoptional.Some(configauth.Config{AuthenticatorID: id})
	hc, err := cfg.ToClient(context.Background(), map[component.ID]component.Component{id: forwarder(t)}, componenttest.NewNopTelemetrySettings())
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	for _, key := range []string{aliceKey, bobKey} {
		req, err := http.NewRequestWithContext(received(bearer(key)), http.MethodGet, s.URL+"/status", http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		// Whatever the component set is replaced, and its request kept.
		req.Header.Set("Authorization", "Bearer the-components-own")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := req.Header.Get("Authorization"); got != "Bearer the-components-own" {
			t.Fatalf("the caller's request was changed: %q", got)
		}
	}
	if got := seen(); len(got) != 2 || got[0] != "Bearer "+aliceKey || got[1] != "Bearer "+bobKey {
		t.Fatalf("the server was sent %q, want alice's key then bob's", got)
	}
}

// failingTransport fails the test when a request gets past prime_auth.
type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.t.Errorf("%s was sent on", req.URL)
	return nil, errors.New("not sent")
}

// okTransport answers 204 to anything.
type okTransport struct{}

func (okTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusNoContent, Body: http.NoBody}, nil
}

func TestAnHTTPRequestIsNotSentOnWithoutOneWellFormedKeyOrInClearTextOffLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		headers   map[string][]string
		want      string // "" when it is sent
	}{
		{"https to another host", "https://gw-0.gw:4320/s", bearer(aliceKey), ""},
		{"http to 127.0.0.1", "http://127.0.0.1:4320/s", bearer(aliceKey), ""},
		{"http to [::1]", "http://[::1]:4320/s", bearer(aliceKey), ""},
		{"http to localhost", "http://localhost:4320/s", bearer(aliceKey), ""},
		{"http to another host", "http://gw-0.gw:4320/s", bearer(aliceKey), "clear text"},
		{"no metadata", "https://gw-0.gw:4320/s", nil, "include_metadata: true"},
		{"metadata without a key", "https://gw-0.gw:4320/s", map[string][]string{"content-type": {"application/json"}}, "include_metadata: true"},
		{"two keys", "https://gw-0.gw:4320/s", map[string][]string{"authorization": {"Bearer " + aliceKey, "Bearer " + bobKey}}, "not one"},
		{"another scheme", "https://gw-0.gw:4320/s", map[string][]string{"authorization": {"Basic " + aliceKey}}, "not one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var base http.RoundTripper = okTransport{}
			if tc.want != "" {
				base = failingTransport{t}
			}
			rt, err := forwarder(t).RoundTripper(base)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequestWithContext(received(tc.headers), http.MethodGet, tc.url, http.NoBody)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("not sent: %v", err)
				}
				resp.Body.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), aliceKey) || strings.Contains(err.Error(), bobKey) {
				t.Fatalf("the error repeats a key: %v", err)
			}
		})
	}
}

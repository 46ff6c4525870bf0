package primestatusextension

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
)

// fakeGateway is a gateway's status route: it answers with code and body,
// after delay, and records the queries it was asked.
type fakeGateway struct {
	*httptest.Server
	mu      sync.Mutex
	queries []url.Values
}

func newFakeGateway(t *testing.T, code int, body string, delay time.Duration) *fakeGateway {
	t.Helper()
	g := &fakeGateway{}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.queries = append(g.queries, r.URL.Query())
		g.mu.Unlock()
		if r.URL.Path != Path {
			http.NotFound(w, r)
			return
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(g.Close)
	return g
}

// withGateways is an extension whose gateways are asked as Start would
// ask them, with extensions as the host's.
func withGateways(t *testing.T, cfg *Config, extensions map[component.ID]component.Component) *statusExtension {
	t.Helper()
	x := newTestExtension(cfg)
	g, err := newGateways(context.Background(), cfg, extensions, componenttest.NewNopTelemetrySettings())
	require.NoError(t, err)
	x.gateways = g
	t.Cleanup(g.close)
	return x
}

// deadGateway is a URL nothing listens on.
func deadGateway(t *testing.T) string {
	return "http://" + freeAddr(t)
}

const (
	unknownBody = `{"state":"unknown","kind":"train"}`
	runningBody = `{"state":"running","kind":"train","id":"run-1","url":"https://app/dashboard/training/run-1"}`
)

func TestTheAgentAsksItsGateways(t *testing.T) {
	for _, tc := range []struct {
		name     string
		gateways func(t *testing.T) []string
		code     int
		want     Status
		err      string
	}{
		{"one knows the run, one does not", func(t *testing.T) []string {
			return []string{newFakeGateway(t, 200, unknownBody, 0).URL, newFakeGateway(t, 200, runningBody, 0).URL}
		}, 200, Status{State: StateRunning, Kind: KindTrain, ID: "run-1", URL: "https://app/dashboard/training/run-1"}, ""},
		{"none knows it", func(t *testing.T) []string {
			return []string{newFakeGateway(t, 200, unknownBody, 0).URL, newFakeGateway(t, 200, unknownBody, 0).URL}
		}, 200, Status{State: StateUnknown, Kind: KindTrain}, ""},
		{"one unknown and one down is unknown", func(t *testing.T) []string {
			return []string{newFakeGateway(t, 200, unknownBody, 0).URL, deadGateway(t)}
		}, 200, Status{State: StateUnknown, Kind: KindTrain}, ""},
		{"the one that knows answers though another hangs", func(t *testing.T) []string {
			return []string{newFakeGateway(t, 200, unknownBody, time.Hour).URL, newFakeGateway(t, 200, runningBody, 0).URL}
		}, 200, Status{State: StateRunning, Kind: KindTrain, ID: "run-1", URL: "https://app/dashboard/training/run-1"}, ""},
		{"a base URL with a trailing slash", func(t *testing.T) []string {
			return []string{newFakeGateway(t, 200, runningBody, 0).URL + "/"}
		}, 200, Status{State: StateRunning, Kind: KindTrain, ID: "run-1", URL: "https://app/dashboard/training/run-1"}, ""},
		{"none reachable is a 502", func(t *testing.T) []string {
			return []string{deadGateway(t), deadGateway(t)}
		}, 502, Status{State: StateUnavailable}, "no gateway answered"},
		{"gateways that answer 502 or garbage are unreachable", func(t *testing.T) []string {
			return []string{newFakeGateway(t, 502, `{"state":"unavailable","error":"down"}`, 0).URL, newFakeGateway(t, 200, `<html>`, 0).URL}
		}, 502, Status{State: StateUnavailable}, "answered 502: down"},
		{"a gateway slower than the timeout is unreachable", func(t *testing.T) []string {
			return []string{newFakeGateway(t, 200, runningBody, time.Hour).URL}
		}, 502, Status{State: StateUnavailable}, "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Gateways = tc.gateways(t)
			cfg.GatewayClient.Timeout = 300 * time.Millisecond
			require.NoError(t, cfg.Validate())
			x := withGateways(t, cfg, nil)
			start := time.Now()
			code, st, body := get(t, x.handler(), Path+"?key=k")
			assert.Less(t, time.Since(start), 2*time.Second, "the answer waited past the timeout")
			assert.Equal(t, tc.code, code, body)
			assert.Contains(t, st.Error, tc.err)
			st.Error = ""
			assert.Equal(t, tc.want, st)
		})
	}
}

func TestAGatewayIsAskedTheSameQuery(t *testing.T) {
	g := newFakeGateway(t, 200, unknownBody, 0)
	cfg := createDefaultConfig().(*Config)
	cfg.Gateways = []string{g.URL}
	x := withGateways(t, cfg, nil)
	get(t, x.handler(), Path+"?kind=eval&id=ev-1")
	g.mu.Lock()
	defer g.mu.Unlock()
	require.Len(t, g.queries, 1)
	assert.Equal(t, url.Values{"kind": {"eval"}, "id": {"ev-1"}}, g.queries[0])
}

func TestALocalSourceIsAskedBeforeTheGateways(t *testing.T) {
	g := newFakeGateway(t, 200, runningBody, 0)
	cfg := createDefaultConfig().(*Config)
	cfg.Gateways = []string{g.URL}
	x := withGateways(t, cfg, nil)
	x.RegisterRunStatusSource(fakeSource{"train/k": {State: StateClosed, ID: "run-0", Status: "completed"}})
	_, st, _ := get(t, x.handler(), Path+"?key=k")
	assert.Equal(t, StateClosed, st.State)
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Empty(t, g.queries, "a gateway was asked for a run a local source knew")
}

func TestShutdownClosesTheConnectionsToTheGateways(t *testing.T) {
	// goleak (TestMain) fails the package if a keep-alive connection's
	// goroutines outlive the extension.
	g := newFakeGateway(t, 200, unknownBody, 0)
	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = freeAddr(t)
	cfg.Gateways = []string{g.URL}
	x := newTestExtension(cfg)
	require.NoError(t, x.Start(context.Background(), nopHost()))
	code, _, _ := getURL(t, "http://"+cfg.NetAddr.Endpoint+Path+"?key=k")
	assert.Equal(t, http.StatusOK, code)
	http.DefaultClient.CloseIdleConnections()
	require.NoError(t, x.Shutdown(context.Background()))
}

package primeexporter

import (
	"context"
	"errors"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// faultClientTimeout is the client timeout of the fault tests: a scripted
// Delay longer than it is a read timeout.
const faultClientTimeout = 300 * time.Millisecond

// faultHang is a scripted Delay past the client timeout. The fake ends it as
// soon as the client gives up, so no test waits for it.
const faultHang = time.Minute

// faultRig is a harness whose client retries in place instantly while
// recording the waits it was asked for, times out after
// faultClientTimeout, and reaches the platform through a network that can
// refuse a route's next connections.
type faultRig struct {
	*harness
	net *faultNet

	mu    sync.Mutex
	waits []time.Duration
}

func newFaultRig(t *testing.T) *faultRig {
	t.Helper()
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL() + "/rft"
	cfg.ClientConfig.Timeout = faultClientTimeout
	cfg.APIKey = configopaque.String(testAPIKey)
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.FinalizeTimeout = 5 * time.Second
	rig := &faultRig{net: newFaultNet(t)}
	rig.harness = newHarnessWithOptions(t, srv, cfg, componenttest.NewNopHost(), withClientOptions(func(o *rft.Options) {
		o.MaxAttempts = 2
		o.Sleep = rig.sleep
		o.HTTPClient = rig.net.wrap(o.HTTPClient)
		// The bare client of presigned PUTs: its own timeout (5 minutes by
		// default, for large objects) made as short as the platform's.
		putTransport := &http.Transport{}
		t.Cleanup(putTransport.CloseIdleConnections)
		o.PutClient = rig.net.wrap(&http.Client{Transport: putTransport, Timeout: faultClientTimeout})
	}), withCloseOutPause(func(ctx context.Context, _ time.Duration) error { return ctx.Err() })) // close-outs try again instantly too
	return rig
}

// sleep is the client's wait between in-place attempts: recorded, not slept.
func (r *faultRig) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

// inPlaceWaits are the waits the client asked for between attempts.
func (r *faultRig) inPlaceWaits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

// calls counts the requests the platform received per route, plus the
// connections the network refused (which the platform never saw).
func (r *faultRig) calls() map[rfttest.Route]int {
	out := map[rfttest.Route]int{}
	for _, req := range r.platform.Requests() {
		out[routeOf(req.Method, req.Path)]++
	}
	for route, n := range r.net.refusedCounts() {
		out[route] += n
	}
	return out
}

// waitCloseOut waits until the run's close-out finished, either way.
func (r *faultRig) waitCloseOut() {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		text := r.logText()
		return strings.Contains(text, "Closed out run") || strings.Contains(text, "Could not close out run")
	}, 10*time.Second, time.Millisecond, "the close-out never finished")
}

// routeOf names the platform operation of a request.
func routeOf(method, path string) rfttest.Route {
	switch {
	case strings.HasPrefix(path, "/storage/"):
		return rfttest.RoutePut
	case strings.HasSuffix(path, "/rft/external-runs"):
		return rfttest.RouteCreate
	case strings.HasSuffix(path, "/rft/metrics"):
		return rfttest.RouteMetrics
	case strings.HasSuffix(path, "/rft/samples/presign"):
		return rfttest.RoutePresign
	case strings.HasSuffix(path, "/rft/samples/confirm"):
		return rfttest.RouteConfirm
	case strings.HasSuffix(path, "/rft/finalize"):
		return rfttest.RouteFinalize
	case method == http.MethodPut && strings.HasSuffix(path, "/status"):
		return rfttest.RouteStatus
	}
	return ""
}

// faultNet stands between the exporter and the platform. It can refuse the
// next connections of a route the way a host with nothing listening does:
// the dial itself fails with ECONNREFUSED, through the real net/http stack.
type faultNet struct {
	refusing *http.Transport // dials a port nobody listens on

	mu      sync.Mutex
	refuse  map[rfttest.Route]int // connections still to refuse
	refused map[rfttest.Route]int
}

func newFaultNet(t *testing.T) *faultNet {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	return &faultNet{
		refusing: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, closed)
		}},
		refuse:  map[rfttest.Route]int{},
		refused: map[rfttest.Route]int{},
	}
}

// refuseNext makes the next n connections of route fail to connect.
func (n *faultNet) refuseNext(route rfttest.Route, count int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refuse[route] += count
}

func (n *faultNet) refusedCounts() map[rfttest.Route]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[rfttest.Route]int, len(n.refused))
	for k, v := range n.refused {
		out[k] = v
	}
	return out
}

func (n *faultNet) take(route rfttest.Route) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.refuse[route] == 0 {
		return false
	}
	n.refuse[route]--
	n.refused[route]++
	return true
}

// wrap returns a copy of c whose requests go through the network.
func (n *faultNet) wrap(c *http.Client) *http.Client {
	cp := *c
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if n.take(routeOf(req.Method, req.URL.Path)) {
			return n.refusing.RoundTrip(req)
		}
		return next.RoundTrip(req)
	})
	return &cp
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// throttleOf is the wait a push asks exporterhelper for before its retry
// (exporterhelper.NewThrottleRetry), or 0 when it asks for none.
func throttleOf(err error) time.Duration {
	throttle := reflect.TypeOf(exporterhelper.NewThrottleRetry(errors.New(""), 0))
	for e := err; e != nil; e = errors.Unwrap(e) {
		if reflect.TypeOf(e) == throttle {
			return time.Duration(reflect.ValueOf(e).FieldByName("delay").Int())
		}
	}
	return 0
}

package rft

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixedProxy is an environment that names raw as the proxy for every
// request, or none when raw is empty.
func fixedProxy(t *testing.T, raw string) proxyFunc {
	t.Helper()
	if raw == "" {
		return func(*http.Request) (*url.URL, error) { return nil, nil }
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return http.ProxyURL(u)
}

func TestAnObjectPUTGoesThroughProxyURLElseTheEnvironmentsProxyElseStraightToStorage(t *testing.T) {
	tests := []struct {
		name     string
		proxyURL func(proxy string) string
		env      func(t *testing.T, proxy string) proxyFunc // nil: the process's, through NewObjectClient
		viaProxy bool
	}{
		{
			name:     "proxy_url, even when the environment names another proxy",
			proxyURL: func(proxy string) string { return proxy },
			env:      func(t *testing.T, _ string) proxyFunc { return fixedProxy(t, "http://"+closedAddr(t)) },
			viaProxy: true,
		},
		{
			name:     "the environment's proxy when proxy_url is empty",
			proxyURL: func(string) string { return "" },
			env:      func(t *testing.T, proxy string) proxyFunc { return fixedProxy(t, proxy) },
			viaProxy: true,
		},
		{
			name:     "straight to storage with neither",
			proxyURL: func(string) string { return "" },
			env:      func(t *testing.T, _ string) proxyFunc { return fixedProxy(t, "") },
		},
		{
			// Whatever the process's environment says: it never proxies a
			// loopback address.
			name:     "straight to storage through NewObjectClient without proxy_url",
			proxyURL: func(string) string { return "" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeServer(t, always(reply{status: 200}))
			// A forward proxy that answers itself is enough: what matters
			// is what it was asked to forward.
			proxy := newFakeServer(t, always(reply{status: 200}))
			var put *http.Client
			var err error
			if tt.env == nil {
				put, err = NewObjectClient(tt.proxyURL(proxy.URL), 0)
			} else {
				put, err = newObjectClient(tt.proxyURL(proxy.URL), 0, tt.env(t, proxy.URL))
			}
			if err != nil {
				t.Fatal(err)
			}
			c, _ := newTestClient(t, "https://platform.invalid", func(o *Options) { o.PutClient = put })
			target := store.URL + "/bucket/runs/r/step_10_x.parquet?X-Amz-Signature=abc"
			body := []byte("PAR1\x00\x01parquet-bytes")
			if err := c.Put(context.Background(), target, body); err != nil {
				t.Fatal(err)
			}
			got, other := store, proxy
			if tt.viaProxy {
				got, other = proxy, store
			}
			if n := len(other.requests()); n != 0 {
				t.Errorf("%d requests went around the expected route", n)
			}
			reqs := got.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodPut || r.Host != strings.TrimPrefix(store.URL, "http://") || !bytes.Equal(r.Body, body) {
				t.Errorf("got %s for %s with %q", r.Method, r.Host, r.Body)
			}
			if tt.viaProxy && r.URI != target {
				t.Errorf("the proxy was asked for %q, want the absolute %q", r.URI, target)
			}
			assertNoPlatformHeaders(t, r)
		})
	}
}

func TestNewObjectClientRefusesAProxyURLNetHTTPCannotUseNamingProxyURLWithoutRepeatingIt(t *testing.T) {
	for _, tt := range []struct {
		proxyURL string
		ok       bool
	}{
		{"http://proxy.example:3128", true},
		{"https://user:s3cret@proxy.example", true},
		{"socks5://127.0.0.1:1080", true},
		{"socks5h://proxy.example:1080", true},
		{"proxy.example:3128", false}, // no scheme: read as scheme "proxy.example"
		{"//proxy.example:3128", false},
		{"ftp://proxy.example", false},
		{"http://", false},
		{"http://user:s3cret@proxy.example:%zz", false},
		{"http://user:s3cret@proxy.example:3128\n", false},
	} {
		t.Run(tt.proxyURL, func(t *testing.T) {
			hc, err := NewObjectClient(tt.proxyURL, 0)
			switch {
			case tt.ok && err != nil:
				t.Errorf("refused: %v", err)
			case tt.ok:
				hc.CloseIdleConnections()
			case err == nil:
				t.Error("accepted")
			case !strings.Contains(err.Error(), "proxy_url") || strings.Contains(err.Error(), "s3cret"):
				t.Errorf("error = %q, want one naming proxy_url without its password", err)
			}
		})
	}
}

func TestEachObjectClientHasATransportOfItsOwnAndBoundsEachAttempt(t *testing.T) {
	for _, tt := range []struct{ timeout, want time.Duration }{
		{0, 5 * time.Minute},
		{30 * time.Second, 30 * time.Second},
	} {
		t.Run(tt.timeout.String(), func(t *testing.T) {
			a, err := NewObjectClient("", tt.timeout)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := NewObjectClient("", tt.timeout)
			if a.Transport == nil || a.Transport == http.DefaultTransport || a.Transport == b.Transport {
				t.Error("the transport is shared")
			}
			if a.Timeout != tt.want {
				t.Errorf("Timeout = %v, want %v", a.Timeout, tt.want)
			}
		})
	}
}

func TestCloseIdleConnectionsClosesTheObjectStoresKeepAliveConnectionAndOnlyItsOwnPoolHoldsIt(t *testing.T) {
	platform := newFakeServer(t, always(reply{status: 200, body: `{"data":{"status":"success"}}`}))
	store := newFakeServer(t, always(reply{status: 200}))
	put, err := NewObjectClient("", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newTestClient(t, platform.URL, func(o *Options) {
		o.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		o.PutClient = put
	})
	ctx := context.Background()
	if err := c.PostMetrics(ctx, "run-1", map[string]float64{"step": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, store.URL+"/k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	platform.waitOpenConns(t, 1)
	store.waitOpenConns(t, 1)

	put.CloseIdleConnections()
	store.waitOpenConns(t, 0)
	if n := platform.open.Load(); n != 1 {
		t.Errorf("closing the object client's idle connections closed the platform's: %d left", n)
	}

	if err := c.Put(ctx, store.URL+"/k", []byte("x")); err != nil {
		t.Fatal(err)
	}
	store.waitOpenConns(t, 1)
	c.CloseIdleConnections()
	store.waitOpenConns(t, 0)
	platform.waitOpenConns(t, 0)
}

func TestTheObjectClientFollowsNoRedirectEvenWithoutNew(t *testing.T) {
	other := newFakeServer(t, always(reply{status: 200}))
	store := newFakeServer(t, always(reply{status: http.StatusFound, header: map[string]string{"Location": other.URL + "/elsewhere"}}))
	hc, err := NewObjectClient("", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	req, _ := http.NewRequest(http.MethodPut, store.URL+"/k", strings.NewReader("x"))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound || len(other.requests()) != 0 {
		t.Errorf("got %d, and the redirect target %d requests", resp.StatusCode, len(other.requests()))
	}
}

func TestConcurrentPUTsReuseTheirConnectionsRatherThanDiallingAnew(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-release
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	hc, err := newObjectClient("", time.Minute, fixedProxy(t, ""))
	if err != nil {
		t.Fatal(err)
	}

	const inFlight = 16 // what a few consumers' pushes have at once
	round := func() {
		var wg sync.WaitGroup
		for range inFlight {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader("rows"))
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_ = resp.Body.Close()
			})
		}
		// All of them in flight at once, each on a connection of its own.
		for {
			mu.Lock()
			n := conns
			mu.Unlock()
			if n >= inFlight {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(release)
		wg.Wait()
		release = make(chan struct{})
	}
	round()
	round()
	mu.Lock()
	defer mu.Unlock()
	// Go's default of two idle connections a host would dial 14 anew in
	// the second round. A loaded machine (CI under -race) has been seen to
	// let a connection or two miss the pool (net/http gives up reusing one
	// whose request write it has not seen finish within 50 ms), so the
	// test allows a few, far below what the default costs.
	const slack = 4
	if conns < inFlight || conns > inFlight+slack {
		t.Fatalf("%d connections for two rounds of %d PUTs at once, want %d (at most %d more): the second round dialled anew", conns, inFlight, inFlight, slack)
	}
}

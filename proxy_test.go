package primeexporter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forwardProxy is a plain HTTP forward proxy on loopback that records what
// passed through it.
type forwardProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newForwardProxy(t *testing.T) *forwardProxy {
	p := &forwardProxy{}
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Host == "" {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.seen = append(p.seen, r.Clone(context.Background()))
		p.mu.Unlock()
		out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), strings.NewReader(string(body)))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := transport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(p.Close)
	return p
}

// puts are the PUT requests the proxy forwarded.
func (p *forwardProxy) puts() []*http.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*http.Request
	for _, r := range p.seen {
		if r.Method == http.MethodPut {
			out = append(out, r)
		}
	}
	return out
}

func TestObjectPUTsGoThroughTheConfiguredProxyWithoutPlatformHeaders(t *testing.T) {
	proxy := newForwardProxy(t)
	h := newHarness(t, func(c *Config) { c.ClientConfig.ProxyURL = proxy.URL })
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("proxied"), episode(10, "a"), episode(20, "b"))))

	run := h.onlyRun()
	require.Len(t, run.Objects, 2)
	puts := proxy.puts()
	require.Len(t, puts, 2, "both objects went through the proxy")
	for _, put := range puts {
		assert.Contains(t, put.URL.Path, "/storage/", "the PUT is for object storage")
		assert.Empty(t, put.Header.Get("Authorization"), "no platform auth on a presigned PUT")
		assert.Empty(t, put.Header.Get("X-Api-Key"))
		for k, vs := range put.Header {
			for _, v := range vs {
				assert.NotContains(t, v, testAPIKey, "header %s", k)
			}
		}
	}
	for _, obj := range run.Objects {
		assert.True(t, obj.Confirmed)
	}
	assert.Equal(t, []string{"step 10: q-a#0:0", "step 20: q-b#0:0"}, objects(t, run))
}

func TestWithoutAProxyObjectPUTsGoStraightToStorage(t *testing.T) {
	proxy := newForwardProxy(t)
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("direct"), episode(10, "a"))))
	require.Len(t, h.onlyRun().Objects, 1)
	assert.Empty(t, proxy.puts())
	var storagePuts int
	for _, r := range h.platform.Requests() {
		if r.Method == http.MethodPut {
			storagePuts++
		}
	}
	assert.Equal(t, 1, storagePuts)
}

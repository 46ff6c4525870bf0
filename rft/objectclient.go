package rft

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"
)

// proxyFunc picks the proxy for a request, as http.Transport.Proxy does.
type proxyFunc = func(*http.Request) (*url.URL, error)

// maxIdlePutConns is how many idle connections to one object store the
// client keeps.
const maxIdlePutConns = 32

// NewObjectClient builds the client for presigned object PUTs
// (Options.PutClient). The object store is reached like the platform, through
// proxyURL (the exporter's proxy_url) when it is set and through the
// environment's proxies (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) otherwise, but on
// a transport of its own: the platform client's headers and auth must never
// reach the store, and closing one client's idle connections must not cut
// the other's. timeout bounds each attempt; 0 means 5 minutes, because a
// stuck upload must not hold its push forever. Redirects are not followed.
func NewObjectClient(proxyURL string, timeout time.Duration) (*http.Client, error) {
	return newObjectClient(proxyURL, timeout, http.ProxyFromEnvironment)
}

// newObjectClient takes the environment's proxy function as a parameter
// because http.ProxyFromEnvironment reads the environment once per process,
// so a test cannot change it.
func newObjectClient(proxyURL string, timeout time.Duration, fromEnv proxyFunc) (*http.Client, error) {
	proxy := fromEnv
	if proxyURL != "" {
		u, err := url.Parse(proxyURL)
		if err != nil || u.Host == "" || !proxySchemes[u.Scheme] {
			// The value is not echoed: a proxy URL may carry a password.
			return nil, errors.New("prime: proxy_url must be an absolute http, https, socks5 or socks5h URL such as http://proxy.example:3128")
		}
		proxy = http.ProxyURL(u)
	}
	var tr *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = dt.Clone() // its dial, TLS and idle settings, not its pool
	} else {
		// Someone replaced the default with a wrapper we cannot clone.
		tr = &http.Transport{ForceAttemptHTTP2: true}
	}
	tr.Proxy = proxy
	// A PUT's body is written from where it lies (directConn).
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = dialDirect(dial)
	// Object stores speak HTTP/1.1, one PUT a connection: keep one per
	// upload in flight (the exporter sends many at once), not Go's two.
	tr.MaxIdleConnsPerHost = maxIdlePutConns
	if timeout <= 0 {
		timeout = defaultPutTimeout
	}
	hc := withoutRedirects(nil, timeout) // even when used without New
	hc.Transport = tr
	return hc, nil
}

// proxySchemes are the proxy schemes net/http can speak; anything else
// would fail on every upload instead of at start.
var proxySchemes = map[string]bool{"http": true, "https": true, "socks5": true, "socks5h": true}

package rft

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"time"
)

// Defaults. The attempt counts are the SDK's; the timeouts only bound a
// stuck connection, since the collector's own HTTP client usually sets one.
const (
	defaultMaxAttempts = 5
	defaultPutAttempts = 3
	defaultTimeout     = 60 * time.Second
	defaultPutTimeout  = 5 * time.Minute
	defaultUserAgent   = "primeexporter-rft"
)

// Options configures a Client.
type Options struct {
	BaseURL     string                                           // any spelling NormalizeBaseURL accepts
	APIKey      string                                           // sent in both auth headers, nowhere else
	HTTPClient  *http.Client                                     // for platform routes; nil → a default client. Copied: New turns its redirects off
	PutClient   *http.Client                                     // for presigned PUTs, best from NewObjectClient; nil → NewObjectClient("", 0). Copied: New turns its redirects off
	MaxAttempts int                                              // per platform call, 0 → 5 (the SDK's); 1 = no in-place retry
	PutAttempts int                                              // per object PUT, 0 → 3
	Sleep       func(ctx context.Context, d time.Duration) error // nil → a real timer honoring ctx; tests inject
	Jitter      func() float64                                   // returns [0,1); nil → math/rand/v2; backoff factor = 0.5 + Jitter()
	Now         func() time.Time                                 // reads Retry-After dates; nil → time.Now
	UserAgent   string                                           // "" → primeexporter-rft
}

// String leaves the key out, so that printing Options cannot leak it.
func (o Options) String() string {
	key := "(none)"
	if o.APIKey != "" {
		key = "[REDACTED]"
	}
	return "rft.Options{BaseURL: " + o.BaseURL + ", APIKey: " + key + "}"
}

// GoString does the same for %#v.
func (o Options) GoString() string { return o.String() }

// Client speaks the platform's RFT API. It is safe for concurrent use.
type Client struct {
	prefix      string
	key         string
	http        *http.Client
	put         *http.Client
	maxAttempts int
	putAttempts int
	sleep       func(ctx context.Context, d time.Duration) error
	jitter      func() float64
	now         func() time.Time
	userAgent   string
}

// New checks opts and builds a Client. It makes no request.
func New(opts Options) (*Client, error) {
	prefix, err := NormalizeBaseURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	if err := checkKey(opts.APIKey); err != nil {
		return nil, err
	}
	switch {
	case opts.MaxAttempts < 0:
		return nil, errors.New("prime: MaxAttempts must not be negative (0 means the default, 5)")
	case opts.PutAttempts < 0:
		return nil, errors.New("prime: PutAttempts must not be negative (0 means the default, 3)")
	case !validHeaderValue(opts.UserAgent):
		return nil, errors.New("prime: UserAgent contains control characters")
	}
	put := opts.PutClient
	if put == nil {
		// Not a zero client: that would share http.DefaultTransport, and
		// with it CloseIdleConnections, with the rest of the process.
		if put, err = NewObjectClient("", 0); err != nil {
			return nil, err
		}
	}
	c := &Client{
		prefix:      prefix,
		key:         opts.APIKey,
		http:        withoutRedirects(opts.HTTPClient, defaultTimeout),
		put:         withoutRedirects(put, defaultPutTimeout),
		maxAttempts: cmp.Or(opts.MaxAttempts, defaultMaxAttempts),
		putAttempts: cmp.Or(opts.PutAttempts, defaultPutAttempts),
		sleep:       opts.Sleep,
		jitter:      opts.Jitter,
		now:         opts.Now,
		userAgent:   cmp.Or(opts.UserAgent, defaultUserAgent),
	}
	if c.sleep == nil {
		c.sleep = Sleep
	}
	if c.jitter == nil {
		c.jitter = rand.Float64
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// APIPrefix is the normalised API prefix every platform route hangs off,
// e.g. https://api.primeintellect.ai/api/v1.
func (c *Client) APIPrefix() string { return c.prefix }

// String names the client without its key.
func (c *Client) String() string { return "rft.Client{" + c.prefix + "}" }

// GoString does the same for %#v.
func (c *Client) GoString() string { return c.String() }

// CloseIdleConnections releases the connections both HTTP clients keep
// alive, the platform's and the object store's; call it at shutdown so that
// no keep-alive connection outlives the exporter.
func (c *Client) CloseIdleConnections() {
	c.http.CloseIdleConnections()
	c.put.CloseIdleConnections()
}

// withoutRedirects returns a copy of hc (or a default client) that follows
// no redirect: net/http would forward x-api-key to another host, downgrade a
// POST to a GET, and a presigned PUT must go where it was signed for. The
// caller's client is copied, not changed.
func withoutRedirects(hc *http.Client, timeout time.Duration) *http.Client {
	var cp http.Client
	if hc != nil {
		cp = *hc
	} else {
		cp.Timeout = timeout
	}
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

// validHeaderValue reports whether s can go into a header as is: no control
// characters other than tab. net/http would refuse it later, with an error
// about the header rather than the option.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

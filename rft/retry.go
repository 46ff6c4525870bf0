package rft

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff figures of the SDK this client replaces.
const (
	firstBackoff  = time.Second
	maxBackoff    = 30 * time.Second
	maxRetryAfter = 60 * time.Second
)

// retry runs once up to attempts times, sleeping between attempts, for as
// long as mayRetry accepts the failure and ctx is live. It returns the last
// failure with Attempts set.
func (c *Client) retry(ctx context.Context, op string, attempts int, mayRetry func(*Error) bool,
	once func(context.Context) (exchange, *Error),
) (exchange, error) {
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			// Only reachable before the first attempt: sleep reports a
			// cancellation during the wait below.
			return exchange{}, &Error{Op: op, Class: ClassTransportUnsent, Attempts: n - 1, Err: err}
		}
		ex, e := once(ctx)
		if e == nil {
			ex.attempts = n
			return ex, nil
		}
		e.Attempts = n
		if n >= attempts || !mayRetry(e) {
			return exchange{}, e
		}
		if err := c.sleep(ctx, c.backoff(n, e.RetryAfter)); err != nil {
			return exchange{}, e
		}
	}
}

// backoff is the wait after the n-th failed attempt: the server's
// Retry-After when it gave one, else exponential from 1 s capped at 30 s,
// times a jitter factor in [0.5, 1.5) so that many clients thrown off by the
// same outage do not come back in step.
func (c *Client) backoff(n int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, maxRetryAfter)
	}
	d := maxBackoff
	if n-1 < 5 { // 1 s << 5 = 32 s is already past the cap
		d = min(firstBackoff<<(n-1), maxBackoff)
	}
	j := c.jitter()
	if j < 0 || j >= 1 {
		j = 0.5 // an out-of-range jitter source must not stretch or zero the wait
	}
	return time.Duration(float64(d) * (0.5 + j))
}

// parseRetryAfter reads Retry-After as delta-seconds or an HTTP-date,
// capped at 60 s: a server must not park a short in-place retry for longer
// than the caller's own queue would wait. 0 means none, or already due.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		switch {
		case secs <= 0:
			return 0
		case secs >= int64(maxRetryAfter/time.Second):
			return maxRetryAfter
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d <= 0 {
			return 0
		}
		return min(d, maxRetryAfter)
	}
	return 0
}

// Sleep waits d or until ctx is done, whichever comes first, and returns
// ctx's error if it ended the wait. The client waits with it between
// attempts, and so does prime-sync between its rounds: one timer wait that
// stops its timer and honours cancellation, not a copy in each package.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return wait(ctx, nil, d)
}

// SleepUnless is Sleep that also ends, with ErrStopping, when stopping
// closes: the collector's shutdown notice, after which nothing waits in
// place, so that draining the queue does not wait out a backoff.
func SleepUnless(stopping <-chan struct{}) func(ctx context.Context, d time.Duration) error {
	return func(ctx context.Context, d time.Duration) error { return wait(ctx, stopping, d) }
}

// wait is the one timer wait of Sleep and SleepUnless; a nil stopping
// never closes.
func wait(ctx context.Context, stopping <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-stopping:
		return ErrStopping
	case <-t.C:
		return nil
	}
}

// ErrStopping ends a SleepUnless wait cut short by the shutdown notice.
var ErrStopping = errors.New("the collector is shutting down")

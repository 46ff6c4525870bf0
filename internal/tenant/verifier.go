package tenant

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"time"
)

// ErrRefused says the platform refused the key itself (whoami answered
// 401). Every other failure of a check is the platform being unreachable:
// not cached, and the caller's data waits rather than being refused.
var ErrRefused = errors.New("the platform refused the key (whoami answered 401)")

// Check asks the platform whose key this is and returns the user id. It
// wraps ErrRefused when the platform refuses the key.
type Check func(ctx context.Context, key string) (userID string, err error)

// Options bound the cache.
type Options struct {
	// TTL is how long a good key's user is trusted without asking again:
	// a revoked key keeps working this long.
	TTL time.Duration
	// RefusedTTL is how long a refused key stays refused without asking
	// again: a key just issued is refused this long at worst.
	RefusedTTL time.Duration
	// MaxKeys bounds the cache; past it the entries closest to expiry go.
	MaxKeys int
	// MaxStale is how long past its TTL a good key is still taken while
	// the platform cannot be asked: an outage of the platform's whoami
	// does not turn away trainers it knew a moment ago. A key the cache
	// has never seen good is not let in meanwhile.
	MaxStale time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Defaults for Options' zero values.
const (
	DefaultTTL        = 5 * time.Minute
	DefaultRefusedTTL = 30 * time.Second
	DefaultMaxKeys    = 10000
	DefaultMaxStale   = time.Hour
	// staleRetry is how long a stale answer is used before the platform
	// is asked again, so that an outage costs a call per key this often
	// rather than one per request.
	staleRetry = 10 * time.Second
)

// Verifier answers whose a key is, from its cache or from Check. It is
// safe for concurrent use; concurrent checks of one key make one call.
type Verifier struct {
	check Check
	opts  Options

	mu      sync.Mutex
	entries map[digest]*entry
}

type digest [sha256.Size]byte

type entry struct {
	user    string
	refused bool
	expires time.Time
	// goodUntil is how long the last good answer may stand in while the
	// platform cannot be asked (Options.MaxStale).
	goodUntil time.Time
	// done is closed when a check in flight ends; nil once settled.
	done chan struct{}
	err  error // a failed check's error, for the callers that waited on it
}

// NewVerifier builds a Verifier over check.
func NewVerifier(check Check, opts Options) *Verifier {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.RefusedTTL <= 0 {
		opts.RefusedTTL = DefaultRefusedTTL
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	if opts.MaxStale <= 0 {
		opts.MaxStale = DefaultMaxStale
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Verifier{check: check, opts: opts, entries: make(map[digest]*entry)}
}

// Verify returns the user id of key. The error wraps ErrRefused when the
// platform refuses the key; any other error says it could not be asked.
func (v *Verifier) Verify(ctx context.Context, key string) (string, error) {
	d := digest(sha256.Sum256([]byte(key)))
	for {
		v.mu.Lock()
		e, ok := v.entries[d]
		if ok && e.done == nil && v.opts.Now().Before(e.expires) {
			v.mu.Unlock()
			if e.refused {
				return "", ErrRefused
			}
			return e.user, nil
		}
		if ok && e.done != nil {
			done := e.done
			v.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		if !ok {
			e = &entry{}
			v.entries[d] = e
		}
		// An expired entry keeps its last answer while it is asked again.
		e.done = make(chan struct{})
		v.mu.Unlock()
		return v.ask(ctx, d, e, key)
	}
}

// Revoke takes key as refused for RefusedTTL, whatever was cached: the
// platform refused it on a request and whoami confirmed it, so a good
// answer cached before must not let the key in until its TTL ends. An ask
// in flight settles the entry anew when it answers.
func (v *Verifier) Revoke(key string) {
	d := digest(sha256.Sum256([]byte(key)))
	v.mu.Lock()
	defer v.mu.Unlock()
	e, ok := v.entries[d]
	if !ok {
		e = &entry{}
		v.entries[d] = e
	}
	e.user, e.refused, e.expires, e.goodUntil = "", true, v.opts.Now().Add(v.opts.RefusedTTL), time.Time{}
	v.evictLocked()
}

// ask runs the check for an entry this caller put in flight.
func (v *Verifier) ask(ctx context.Context, d digest, e *entry, key string) (string, error) {
	user, err := v.check(ctx, key)
	v.mu.Lock()
	defer v.mu.Unlock()
	done := e.done
	e.done = nil
	defer close(done)
	switch {
	case err == nil && user != "":
		e.user, e.refused, e.expires, e.goodUntil = user, false, v.opts.Now().Add(v.opts.TTL), v.opts.Now().Add(v.opts.TTL+v.opts.MaxStale)
	case errors.Is(err, ErrRefused):
		e.user, e.refused, e.expires = "", true, v.opts.Now().Add(v.opts.RefusedTTL)
		err = ErrRefused
	case e.user != "" && !e.refused && v.opts.Now().Before(e.goodUntil):
		// The platform cannot be asked; the key was good a moment ago.
		e.expires = v.opts.Now().Add(staleRetry)
		return e.user, nil
	default:
		if err == nil {
			err = errors.New("the platform's whoami named no user")
		}
		// Not settled: the next caller asks again.
		delete(v.entries, d)
		return "", err
	}
	v.evictLocked()
	return user, err
}

// evictLocked keeps the cache within MaxKeys: expired entries first, then
// those closest to expiry.
func (v *Verifier) evictLocked() {
	if len(v.entries) <= v.opts.MaxKeys {
		return
	}
	now := v.opts.Now()
	for d, e := range v.entries {
		if e.done == nil && !now.Before(e.expires) {
			delete(v.entries, d)
		}
	}
	for len(v.entries) > v.opts.MaxKeys {
		var oldest digest
		var at time.Time
		found := false
		for d, e := range v.entries {
			if e.done == nil && (!found || e.expires.Before(at)) {
				oldest, at, found = d, e.expires, true
			}
		}
		if !found {
			return
		}
		delete(v.entries, oldest)
	}
}

// Len is how many keys the cache holds, settled or in flight.
func (v *Verifier) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.entries)
}

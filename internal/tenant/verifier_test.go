package tenant

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// platform stands in for whoami: keys to users, and how often it was asked.
type platform struct {
	mu    sync.Mutex
	users map[string]string
	down  bool
	calls atomic.Int64
	gate  chan struct{} // when set, each check waits on it
}

func (p *platform) check(ctx context.Context, key string) (string, error) {
	p.calls.Add(1)
	if p.gate != nil {
		<-p.gate
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return "", errors.New("connection refused")
	}
	if u, ok := p.users[key]; ok {
		return u, nil
	}
	return "", fmt.Errorf("whoami: %w", ErrRefused)
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestAKeyIsAskedOnceAndTrustedForItsTTL(t *testing.T) {
	p := &platform{users: map[string]string{"ka": "user-a"}}
	c := &clock{t: time.Unix(0, 0)}
	v := NewVerifier(p.check, Options{TTL: time.Minute, Now: c.now})
	for range 3 {
		if u, err := v.Verify(context.Background(), "ka"); u != "user-a" || err != nil {
			t.Fatalf("Verify = %q, %v", u, err)
		}
	}
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("whoami asked %d times within the TTL, want 1", n)
	}
	p.mu.Lock()
	delete(p.users, "ka") // revoked
	p.mu.Unlock()
	c.advance(time.Minute)
	if _, err := v.Verify(context.Background(), "ka"); !errors.Is(err, ErrRefused) {
		t.Fatalf("a revoked key after the TTL: %v, want ErrRefused", err)
	}
}

func TestARefusedKeyIsRememberedForTheRefusedTTL(t *testing.T) {
	p := &platform{users: map[string]string{}}
	c := &clock{t: time.Unix(0, 0)}
	v := NewVerifier(p.check, Options{RefusedTTL: 10 * time.Second, Now: c.now})
	for range 5 {
		if _, err := v.Verify(context.Background(), "bad"); !errors.Is(err, ErrRefused) {
			t.Fatalf("Verify = %v, want ErrRefused", err)
		}
	}
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("a refused key was asked %d times, want 1", n)
	}
	p.mu.Lock()
	p.users["bad"] = "user-new" // issued since
	p.mu.Unlock()
	c.advance(10 * time.Second)
	if u, err := v.Verify(context.Background(), "bad"); u != "user-new" || err != nil {
		t.Fatalf("after the refused TTL: %q, %v", u, err)
	}
}

func TestAPlatformThatCannotBeAskedIsNotARefusalAndIsNotCached(t *testing.T) {
	p := &platform{users: map[string]string{"ka": "user-a"}, down: true}
	v := NewVerifier(p.check, Options{})
	_, err := v.Verify(context.Background(), "ka")
	if err == nil || errors.Is(err, ErrRefused) {
		t.Fatalf("platform down: %v, want an error that is not ErrRefused", err)
	}
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
	if u, err := v.Verify(context.Background(), "ka"); u != "user-a" || err != nil {
		t.Fatalf("platform back: %q, %v", u, err)
	}
}

func TestConcurrentChecksOfOneKeyMakeOneCall(t *testing.T) {
	p := &platform{users: map[string]string{"ka": "user-a"}, gate: make(chan struct{})}
	v := NewVerifier(p.check, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if u, err := v.Verify(context.Background(), "ka"); u != "user-a" || err != nil {
				errs <- fmt.Errorf("Verify = %q, %v", u, err)
			}
		})
	}
	for p.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the others reach the wait
	close(p.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("8 concurrent checks made %d calls, want 1", n)
	}
}

func TestTheCacheHoldsAtMostMaxKeys(t *testing.T) {
	p := &platform{users: map[string]string{}}
	for i := range 50 {
		p.users[fmt.Sprint("k", i)] = fmt.Sprint("u", i)
	}
	c := &clock{t: time.Unix(0, 0)}
	v := NewVerifier(p.check, Options{MaxKeys: 10, Now: c.now})
	for i := range 50 {
		c.advance(time.Second)
		if _, err := v.Verify(context.Background(), fmt.Sprint("k", i)); err != nil {
			t.Fatal(err)
		}
		if v.Len() > 10 {
			t.Fatalf("after %d keys the cache holds %d, want at most 10", i+1, v.Len())
		}
	}
	// The newest stay: asking k49 again costs no call.
	before := p.calls.Load()
	if _, err := v.Verify(context.Background(), "k49"); err != nil || p.calls.Load() != before {
		t.Fatalf("the newest key was evicted (calls %d → %d, %v)", before, p.calls.Load(), err)
	}
}

func TestAWaiterGivesUpWithItsContext(t *testing.T) {
	p := &platform{users: map[string]string{"ka": "user-a"}, gate: make(chan struct{})}
	v := NewVerifier(p.check, Options{})
	go func() { _, _ = v.Verify(context.Background(), "ka") }()
	for p.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Verify(ctx, "ka"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled waiter: %v", err)
	}
	close(p.gate)
}

func TestAKnownKeyIsTakenWhileThePlatformCannotBeAskedButNotPastMaxStale(t *testing.T) {
	p := &platform{users: map[string]string{"ka": "user-a"}}
	c := &clock{t: time.Unix(0, 0)}
	v := NewVerifier(p.check, Options{TTL: time.Minute, MaxStale: 10 * time.Minute, Now: c.now})
	if _, err := v.Verify(context.Background(), "ka"); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	c.advance(2 * time.Minute)
	if u, err := v.Verify(context.Background(), "ka"); u != "user-a" || err != nil {
		t.Fatalf("a known key during an outage: %q, %v", u, err)
	}
	calls := p.calls.Load()
	if _, err := v.Verify(context.Background(), "ka"); err != nil || p.calls.Load() != calls {
		t.Fatalf("a stale answer asked again at once (%d → %d calls, %v)", calls, p.calls.Load(), err)
	}
	if _, err := v.Verify(context.Background(), "unknown"); err == nil {
		t.Fatal("a key never seen good was let in during an outage")
	}
	c.advance(10 * time.Minute)
	if _, err := v.Verify(context.Background(), "ka"); err == nil || errors.Is(err, ErrRefused) {
		t.Fatalf("past max_stale during an outage: %v, want an unreachable error", err)
	}
}

func TestARevokedKeyIsRefusedAtOnceThoughItWasCachedGoodThenAskedAgainAfterRefusedTTL(t *testing.T) {
	p := &platform{users: map[string]string{"ka": "user-a", "kb": "user-b"}}
	c := &clock{t: time.Unix(0, 0)}
	v := NewVerifier(p.check, Options{TTL: 5 * time.Minute, RefusedTTL: 30 * time.Second, Now: c.now})
	if _, err := v.Verify(context.Background(), "ka"); err != nil {
		t.Fatal(err)
	}
	v.Revoke("ka")
	if _, err := v.Verify(context.Background(), "ka"); !errors.Is(err, ErrRefused) {
		t.Fatalf("a revoked key within its good TTL: %v, want ErrRefused", err)
	}
	if u, err := v.Verify(context.Background(), "kb"); u != "user-b" || err != nil {
		t.Fatalf("another key: %q, %v", u, err)
	}
	if n := p.calls.Load(); n != 2 {
		t.Fatalf("whoami asked %d times, want 2 (once a key; the revocation asks nothing)", n)
	}
	c.advance(30 * time.Second)
	if u, err := v.Verify(context.Background(), "ka"); u != "user-a" || err != nil {
		t.Fatalf("after refused_ttl the platform is asked again (and here still accepts it): %q, %v", u, err)
	}
}

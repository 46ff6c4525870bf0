package rft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"
)

var retryableStatuses = []int{429, 500, 502, 503, 504}

func TestReplayableRoutesAreRetriedInPlaceOnEveryRetryableStatus(t *testing.T) {
	for _, rc := range platformRoutes() {
		if !rc.replayable {
			continue
		}
		for _, code := range retryableStatuses {
			t.Run(fmt.Sprintf("%s %d", rc.name, code), func(t *testing.T) {
				srv := newFakeServer(t, failThen(reply{status: code}, 2, rc.ok))
				c, sl := newTestClient(t, srv.URL)
				if err := rc.call(context.Background(), c); err != nil {
					t.Fatalf("call: %v", err)
				}
				if n := len(srv.requests()); n != 3 {
					t.Errorf("got %d requests, want 3", n)
				}
				if w := sl.waits(); len(w) != 2 {
					t.Errorf("slept %v, want two waits", w)
				}
			})
		}
	}
}

func TestReplayableRoutesAreRetriedAfterTheConnectionDropsOnceTheRequestWasSent(t *testing.T) {
	for _, rc := range platformRoutes() {
		if !rc.replayable {
			continue
		}
		t.Run(rc.name, func(t *testing.T) {
			srv := newFakeServer(t, failThen(reply{hijack: true}, 1, rc.ok))
			c, _ := newTestClient(t, srv.URL)
			if err := rc.call(context.Background(), c); err != nil {
				t.Fatalf("call: %v", err)
			}
			if n := len(srv.requests()); n != 2 {
				t.Errorf("got %d requests, want 2", n)
			}
		})
	}
}

func TestCreateIsRetriedInPlaceAfterA429(t *testing.T) {
	ok := reply{status: 201, body: `{"run":{"id":"run-1"}}`}
	srv := newFakeServer(t, failThen(reply{status: 429}, 1, ok))
	c, _ := newTestClient(t, srv.URL)
	run, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != "run-1" || len(srv.requests()) != 2 {
		t.Errorf("run %+v after %d requests", run, len(srv.requests()))
	}
}

func TestCreateIsNotRetriedAfterAGatewayOrUnavailableAnswer(t *testing.T) {
	for _, code := range []int{500, 502, 503, 504} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: code}))
			c, sl := newTestClient(t, srv.URL)
			_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
			e := mustError(t, err)
			if n := len(srv.requests()); n != 1 {
				t.Errorf("got %d requests, want 1: a retry may register a second run", n)
			}
			if len(sl.waits()) != 0 {
				t.Errorf("slept %v", sl.waits())
			}
			// Not retried in place, but the caller may try again later,
			// warning that a duplicate may exist.
			if !e.Retryable() || !e.Ambiguous() || e.Attempts != 1 {
				t.Errorf("Retryable=%v Ambiguous=%v Attempts=%d", e.Retryable(), e.Ambiguous(), e.Attempts)
			}
		})
	}
}

func TestCreateIsNotRetriedAfterTheConnectionDropsOnceTheRequestWasSent(t *testing.T) {
	srv := newFakeServer(t, always(reply{hijack: true}))
	c, _ := newTestClient(t, srv.URL)
	_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
	e := mustError(t, err)
	if e.Class != ClassTransportAmbiguous || !e.Ambiguous() || !e.Retryable() {
		t.Errorf("class %v, ambiguous %v", e.Class, e.Ambiguous())
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("got %d requests, want 1", n)
	}
}

func TestCreateIsRetriedInPlaceWhenTheConnectionIsRefused(t *testing.T) {
	c, sl := newTestClient(t, "http://"+closedAddr(t))
	_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
	e := mustError(t, err)
	if e.Class != ClassTransportUnsent || e.Ambiguous() || !e.Retryable() {
		t.Errorf("class %v, ambiguous %v", e.Class, e.Ambiguous())
	}
	if e.Attempts != 5 || len(sl.waits()) != 4 {
		t.Errorf("%d attempts, waits %v; want 5 attempts and 4 waits", e.Attempts, sl.waits())
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Errorf("the dial error is not reachable through Unwrap: %v", err)
	}
}

func TestRejectionsAreNeverRetriedOnAnyRoute(t *testing.T) {
	for _, rc := range platformRoutes() {
		for _, code := range []int{400, 401, 403, 404, 422} {
			t.Run(fmt.Sprintf("%s %d", rc.name, code), func(t *testing.T) {
				srv := newFakeServer(t, always(reply{status: code, body: `{"detail":"no"}`}))
				c, sl := newTestClient(t, srv.URL)
				e := mustError(t, rc.call(context.Background(), c))
				if n := len(srv.requests()); n != 1 || len(sl.waits()) != 0 {
					t.Errorf("%d requests, waits %v; want 1 and none", n, sl.waits())
				}
				if !e.Permanent() || e.Op != rc.op || e.Message != "no" {
					t.Errorf("got %#v", e)
				}
			})
		}
	}
}

func TestA409IsAConflictOnRoutesWhereItIsNotASuccess(t *testing.T) {
	for _, rc := range platformRoutes() {
		if rc.op == opFinalize || rc.op == opSetStatus {
			continue
		}
		t.Run(rc.name, func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 409, body: `{"detail":"Cannot post metrics to run in 'COMPLETED' state."}`}))
			c, _ := newTestClient(t, srv.URL)
			e := mustError(t, rc.call(context.Background(), c))
			if e.Class != ClassConflict || !e.Permanent() || len(srv.requests()) != 1 {
				t.Errorf("class %v after %d requests", e.Class, len(srv.requests()))
			}
		})
	}
}

func TestRetriesStopAfterMaxAttempts(t *testing.T) {
	for _, tt := range []struct{ max, want int }{{0, 5}, {1, 1}, {3, 3}} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			srv := newFakeServer(t, always(reply{status: 503}))
			c, sl := newTestClient(t, srv.URL, func(o *Options) { o.MaxAttempts = tt.max })
			e := mustError(t, c.PostMetrics(context.Background(), "run-1", map[string]float64{"step": 1}))
			if n := len(srv.requests()); n != tt.want || e.Attempts != tt.want || len(sl.waits()) != tt.want-1 {
				t.Errorf("%d requests, Attempts %d, %d waits; want %d, %d, %d",
					n, e.Attempts, len(sl.waits()), tt.want, tt.want, tt.want-1)
			}
		})
	}
}

func TestBackoffWithoutRetryAfterDoublesFromOneSecondUpToThirtySeconds(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 502}))
	c, sl := newTestClient(t, srv.URL, func(o *Options) { o.MaxAttempts = 9 })
	_ = c.PostMetrics(context.Background(), "run-1", map[string]float64{"step": 1})
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i := range want {
		want[i] *= time.Second
	}
	if got := sl.waits(); !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
}

func TestBackoffIsMultipliedByAJitterFactorBetweenHalfAndOneAndAHalf(t *testing.T) {
	tests := []struct {
		jitter float64
		want   []time.Duration
	}{
		{0, []time.Duration{500 * time.Millisecond, time.Second, 15 * time.Second}},
		{0.75, []time.Duration{1250 * time.Millisecond, 2500 * time.Millisecond, 37500 * time.Millisecond}},
		{1.7, []time.Duration{time.Second, 2 * time.Second, 30 * time.Second}}, // out of range: factor 1
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.jitter), func(t *testing.T) {
			c, _ := newTestClient(t, "https://h", func(o *Options) { o.Jitter = func() float64 { return tt.jitter } })
			got := []time.Duration{c.backoff(1, 0), c.backoff(2, 0), c.backoff(7, 0)}
			if !slices.Equal(got, tt.want) {
				t.Errorf("backoff %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRetryAfterIsWaitedInsteadOfTheBackoffAndCappedAtSixtySeconds(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name, header string
		want         time.Duration
	}{
		{"seconds", "7", 7 * time.Second},
		{"seconds past the cap", "3600", 60 * time.Second},
		{"HTTP-date", now.Add(12 * time.Second).Format(http.TimeFormat), 12 * time.Second},
		{"HTTP-date past the cap", now.Add(time.Hour).Format(http.TimeFormat), 60 * time.Second},
		{"HTTP-date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"garbage", "soon", 0},
		{"zero", "0", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := reply{status: 200}
			srv := newFakeServer(t, failThen(reply{status: 429, header: map[string]string{"Retry-After": tt.header}}, 1, ok))
			c, _ := newTestClient(t, srv.URL, func(o *Options) {
				o.MaxAttempts = 1
				o.Now = func() time.Time { return now }
			})
			e := mustError(t, c.Confirm(context.Background(), "run-1", 1, "k"))
			if e.RetryAfter != tt.want {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.want)
			}

			// And the same answer, retried: the wait is Retry-After, or the
			// 1 s backoff when there is none.
			srv2 := newFakeServer(t, failThen(reply{status: 429, header: map[string]string{"Retry-After": tt.header}}, 1, ok))
			c2, sl2 := newTestClient(t, srv2.URL, func(o *Options) { o.Now = func() time.Time { return now } })
			if err := c2.Confirm(context.Background(), "run-1", 1, "k"); err != nil {
				t.Fatal(err)
			}
			wantWait := tt.want
			if wantWait == 0 {
				wantWait = time.Second
			}
			if got := sl2.waits(); !slices.Equal(got, []time.Duration{wantWait}) {
				t.Errorf("waits %v, want [%v]", got, wantWait)
			}
		})
	}
}

func TestRetriesStopWhenTheContextIsCancelledDuringTheWait(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 503}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waits int
	c, _ := newTestClient(t, srv.URL, func(o *Options) {
		o.Sleep = func(ctx context.Context, _ time.Duration) error {
			waits++
			cancel()
			return ctx.Err()
		}
	})
	e := mustError(t, c.PostMetrics(ctx, "run-1", map[string]float64{"step": 1}))
	if n := len(srv.requests()); n != 1 || waits != 1 {
		t.Errorf("%d requests and %d waits after the cancellation; want 1 and 1", n, waits)
	}
	if e.StatusCode != 503 || e.Attempts != 1 {
		t.Errorf("got %v, want the last answer", e)
	}
}

func TestNothingIsSentWithAContextAlreadyDone(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200}))
	c, _ := newTestClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := mustError(t, c.PostMetrics(ctx, "run-1", map[string]float64{"step": 1}))
	if len(srv.requests()) != 0 || e.Class != ClassTransportUnsent || !errors.Is(e, context.Canceled) {
		t.Errorf("%d requests, error %v", len(srv.requests()), e)
	}
}

func TestTheDefaultSleepReturnsAsSoonAsTheContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// An hour-long wait that returns at once proves the context is honoured.
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep = %v, want context.Canceled", err)
	}
	if err := Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
}

// roundTripFunc is a transport that fires no trace events.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTransportFailuresAreToldApartByHowFarTheRequestGot(t *testing.T) {
	dnsFail := &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
		return nil, &net.DNSError{Err: "no such host", Name: "platform.invalid", IsNotFound: true}
	}}
	t.Cleanup(dnsFail.CloseIdleConnections)
	tests := []struct {
		name      string
		transport http.RoundTripper
		want      Class
	}{
		{"a failed name lookup was never sent", dnsFail, ClassTransportUnsent},
		{"a dial error from an untraced transport was never sent",
			roundTripFunc(func(*http.Request) (*http.Response, error) {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
			}), ClassTransportUnsent},
		{"any other error from an untraced transport may have been processed",
			roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, io.ErrUnexpectedEOF }),
			ClassTransportAmbiguous},
		{"a read error from an untraced transport may have been processed",
			roundTripFunc(func(*http.Request) (*http.Response, error) {
				return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
			}), ClassTransportAmbiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestClient(t, "http://platform.invalid", func(o *Options) {
				o.HTTPClient = &http.Client{Transport: tt.transport}
				o.MaxAttempts = 1
			})
			_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
			if e := mustError(t, err); e.Class != tt.want {
				t.Errorf("class %v, want %v (%v)", e.Class, tt.want, e)
			}
		})
	}
}

func TestAnAnswerCutOffMidBodyMayHaveBeenProcessed(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 201, header: map[string]string{"Content-Length": "100"}, body: `{"run":`}))
	c, _ := newTestClient(t, srv.URL)
	_, err := c.CreateRun(context.Background(), CreateRunRequest{BaseModel: "m", TeamID: "t"})
	e := mustError(t, err)
	if e.Class != ClassTransportAmbiguous || len(srv.requests()) != 1 {
		t.Errorf("class %v after %d requests", e.Class, len(srv.requests()))
	}
}

package platform

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// outageWarnAfter is how long a service fails before the warning.
const outageWarnAfter = time.Minute

// The outage log lines' messages.
const (
	msgOutage     = "Outage: every call to the service has failed for over a minute; unsent data waits in the collector's queue and is retried"
	msgOutageOver = "Outage over: the service answers again"
)

// outageWatch follows one service's outages; what it logs and tells, and
// when, is in the package doc (Outages). It is safe for concurrent use.
type outageWatch struct {
	service     string
	logger      *zap.Logger
	now         func() time.Time
	backlog     Backlog
	backlogUnit string
	health      func(service string, err error)

	down atomic.Bool // an outage is open: Succeeded's fast path

	mu       sync.Mutex
	current  *outage   // nil while the service answers
	answered time.Time // when the last outage ended
}

// outage is one outage of a service.
type outage struct {
	began    time.Time
	routes   []string // in the order they first failed
	failures int
	warned   bool
}

// OutageOption configures the outage watches of Online and OnlineTraces.
type OutageOption func(*outageWatch)

// WithOutageClock replaces time.Now.
func WithOutageClock(now func() time.Time) OutageOption {
	return func(w *outageWatch) { w.now = now }
}

// Backlog says what waits for a service: the collector's sending queues'
// fill (queuefill.Queues), in unit, the queue's sizer.
type Backlog interface {
	Describe(ctx context.Context, unit string) string
}

// WithOutageBacklog adds what waits for the service, as the field queue,
// to the warning.
func WithOutageBacklog(b Backlog, unit string) OutageOption {
	return func(w *outageWatch) { w.backlog, w.backlogUnit = b, unit }
}

// WithOutageHealth is told of every outage: health(service, err) at its
// first failure, health(service, nil) at the success that ends it.
func WithOutageHealth(health func(service string, err error)) OutageOption {
	return func(w *outageWatch) { w.health = health }
}

// newOutageWatch watches the service named service (e.g. "platform API"),
// logging to logger.
func newOutageWatch(service string, logger *zap.Logger, opts ...OutageOption) *outageWatch {
	w := &outageWatch{
		service: service, logger: logger, now: time.Now,
		health: func(string, error) {},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

// Now is the watch's clock: a caller reads it when a call begins, and
// passes it to Failed.
func (w *outageWatch) Now() time.Time { return w.now() }

// Failed records a call on route, begun at begun, that failed because the
// service is down; err is the failure, for the warning.
func (w *outageWatch) Failed(route string, begun time.Time, err error) {
	now := w.now()
	w.mu.Lock()
	if begun.Before(w.answered) {
		// The call began before the last outage ended: this outage began
		// no earlier than that.
		begun = w.answered
	}
	e := w.current
	began := e == nil
	if began {
		e = &outage{began: begun}
		w.current = e
		w.down.Store(true)
	}
	e.began = minTime(e.began, begun)
	e.failures++
	if !slices.Contains(e.routes, route) {
		e.routes = append(e.routes, route)
	}
	warn := !e.warned && now.Sub(e.began) > outageWarnAfter
	e.warned = e.warned || warn
	fields := []zap.Field{
		zap.String("service", w.service), zap.String("routes", strings.Join(e.routes, ", ")),
		zap.String("down_for", readable(now.Sub(e.began))), zap.Int("failures", e.failures),
	}
	w.mu.Unlock()
	if began {
		w.health(w.service, err)
	}
	if warn {
		if w.backlog != nil {
			fields = append(fields, zap.String("queue", w.backlog.Describe(context.Background(), w.backlogUnit)))
		}
		w.logger.Warn(msgOutage, append(fields, zap.Error(err))...)
	}
}

// Succeeded records a call the service answered: an open outage is over.
func (w *outageWatch) Succeeded() {
	if !w.down.Load() {
		return
	}
	now := w.now()
	w.mu.Lock()
	e := w.current
	w.current = nil
	w.down.Store(false)
	if e != nil {
		w.answered = now
	}
	w.mu.Unlock()
	if e == nil {
		return
	}
	w.health(w.service, nil)
	w.logger.Info(msgOutageOver, zap.String("service", w.service), zap.String("lasted", readable(now.Sub(e.began))),
		zap.Int("failures", e.failures), zap.String("routes", strings.Join(e.routes, ", ")))
}

// readable is d for a person, to a tenth of a second: "10m21.3s" (the
// collector's log encodes a zap.Duration as seconds, 621.3042).
func readable(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

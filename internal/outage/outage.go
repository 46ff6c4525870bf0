// Package outage tells the operator about a long outage of a service the
// exporter calls (the platform's API, its object storage, Prime Traces) in
// two log lines: one warning once the service has failed every call for
// over a minute, naming the routes that failed and how full the collector's
// sending queue is, and one info line at the first success after that,
// saying how long the outage lasted. exporterhelper already logs every
// failed push; these lines tell one outage from many failures, and say
// whether the queue is filling while the exporter waits. A Watch also
// tells a health callback (WithHealth) when an outage begins and ends, at
// once rather than after a minute: the exporter's component status, which
// a health check reads, says what holds data back now.
//
// A Watch knows nothing of errors: its caller (internal/platform) decides
// which failure says the service is down and reports it with Failed, and
// reports every success with Succeeded. An outage begins when the first
// call that failed with it began (a call may spend up to a minute in the
// client's in-place retries before it reports), and the warning is logged
// at the first failure after a minute: exporterhelper's back-off (at most
// 30 s by default) keeps failures coming while the outage lasts.
package outage

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// WarnAfter is how long a service fails before the warning.
const WarnAfter = time.Minute

// The log lines' messages.
const (
	msgDown = "Outage: every call to the service has failed for over a minute; unsent data waits in the collector's queue and is retried"
	msgOver = "Outage over: the service answers again"
)

// Watch follows one service's outages. It is safe for concurrent use.
type Watch struct {
	service string
	logger  *zap.Logger
	now     func() time.Time
	backlog func() []zap.Field
	health  func(service string, err error)

	down atomic.Bool // an outage is open: Succeeded's fast path

	mu       sync.Mutex
	current  *episode  // nil while the service answers
	answered time.Time // when the last outage ended
}

// episode is one outage.
type episode struct {
	began    time.Time
	routes   []string // in the order they first failed
	failures int
	warned   bool
}

// Option configures a Watch.
type Option func(*Watch)

// WithClock replaces time.Now.
func WithClock(now func() time.Time) Option { return func(w *Watch) { w.now = now } }

// WithBacklog adds fields that say what waits for the service (the
// queue's fill) to the warning.
func WithBacklog(f func() []zap.Field) Option { return func(w *Watch) { w.backlog = f } }

// WithHealth is told of every outage: health(service, err) at its first
// failure, health(service, nil) at the success that ends it.
func WithHealth(health func(service string, err error)) Option {
	return func(w *Watch) { w.health = health }
}

// New watches the service named service (e.g. "platform API"), logging to
// logger.
func New(service string, logger *zap.Logger, opts ...Option) *Watch {
	w := &Watch{
		service: service, logger: logger, now: time.Now,
		backlog: func() []zap.Field { return nil }, health: func(string, error) {},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

// Now is the watch's clock: a caller reads it when a call begins, and
// passes it to Failed.
func (w *Watch) Now() time.Time { return w.now() }

// Failed records a call on route, begun at begun, that failed because the
// service is down; err is the failure, for the warning.
func (w *Watch) Failed(route string, begun time.Time, err error) {
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
		e = &episode{began: begun}
		w.current = e
		w.down.Store(true)
	}
	e.began = minTime(e.began, begun)
	e.failures++
	if !slices.Contains(e.routes, route) {
		e.routes = append(e.routes, route)
	}
	warn := !e.warned && now.Sub(e.began) > WarnAfter
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
		w.logger.Warn(msgDown, append(append(fields, w.backlog()...), zap.Error(err))...)
	}
}

// Succeeded records a call the service answered: an open outage is over.
func (w *Watch) Succeeded() {
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
	w.logger.Info(msgOver, zap.String("service", w.service), zap.String("lasted", readable(now.Sub(e.began))),
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

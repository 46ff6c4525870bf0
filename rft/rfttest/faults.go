package rfttest

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"
)

// Fault scripts how the server answers one request of a route.
type Fault struct {
	// Status answers with this status code; 0 means no status fault.
	Status int
	// RetryAfter is sent as the Retry-After header, if not empty.
	RetryAfter string
	// RetryAfterDate, when RetryAfter is empty, sends Retry-After as the
	// HTTP-date this long after the answer: measured from when the fault
	// is served, not when it was scripted, however long the request took
	// to come.
	RetryAfterDate time.Duration
	// Body is the answer's body; "" means {"detail": "injected fault: …"},
	// or the Prime Traces error body when Code is set.
	Body string
	// Code, with Body "", answers {"error": {"code": Code, "message":
	// "injected fault: …"}}, the way Prime Traces refuses.
	Code string
	// AfterProcessing processes the request normally first (state changes
	// happen), then gives the fault's answer: a lost response, such as a
	// gateway timeout after the platform did the work.
	AfterProcessing bool
	// Delay waits this long before answering (after processing, with
	// AfterProcessing). It ends early when the client goes away or the
	// server closes; then the connection is dropped, and a request not yet
	// processed is not processed at all.
	Delay time.Duration
	// DropConnection closes the connection without an answer (after
	// processing, with AfterProcessing). It wins over Status.
	DropConnection bool
}

// Inject queues faults for a route; each later request matching the route
// consumes the next one, in order. It panics on an unknown route, since a
// fault that can never fire would let a test pass for the wrong reason.
func (s *Server) Inject(route Route, faults ...Fault) {
	if !route.known() {
		panic(fmt.Sprintf("rfttest: Inject on unknown route %q", route))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[route] = append(s.faults[route], faults...)
}

// PendingFaults is how many injected faults of a route are not yet consumed.
func (s *Server) PendingFaults(route Route) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.faults[route])
}

// SetOutage makes every request of every route, object storage included,
// answer through f until SetOutage(nil): the platform is down. Faults
// queued with Inject wait for the outage to end, since an outage is a
// state of the platform rather than a script of requests. The fault is
// copied. The switch is recorded (Outages, and Request.Outage on each
// request it refused): SetOutage with a fault while one is set changes the
// answer of the same outage.
func (s *Server) SetOutage(f *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if f == nil {
		if s.outage != nil {
			s.outages[len(s.outages)-1].Ended = now
		}
		s.outage = nil
		return
	}
	c := *f
	if s.outage == nil {
		s.outages = append(s.outages, Outage{Began: now, ByRoute: map[Route]int{}})
	}
	s.outage = &c
	s.outages[len(s.outages)-1].Fault = c
}

// Outage is one outage as the server saw it, from SetOutage to
// SetOutage(nil).
type Outage struct {
	Fault Fault // the answer, the last one set
	Began time.Time
	Ended time.Time // zero while it lasts
	// Refused counts the requests answered through Fault, and ByRoute the
	// same by route.
	Refused int
	ByRoute map[Route]int
}

// Outages lists the outages so far in order, the one under way last.
func (s *Server) Outages() []Outage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Outage, len(s.outages))
	for i, o := range s.outages {
		o.ByRoute = maps.Clone(o.ByRoute)
		out[i] = o
	}
	return out
}

// takeFault is the fault that answers request req of route, if any.
func (s *Server) takeFault(route Route, req int) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outage != nil {
		o := &s.outages[len(s.outages)-1]
		o.Refused++
		o.ByRoute[route]++
		s.requests[req].Outage = true
		return *s.outage, true
	}
	q := s.faults[route]
	if len(q) == 0 {
		return Fault{}, false
	}
	s.faults[route] = q[1:]
	return q[0], true
}

// serveFault serves a request through its fault.
func (s *Server) serveFault(w http.ResponseWriter, r *http.Request, ep endpoint, body []byte, f Fault) {
	var processed *httptest.ResponseRecorder
	if f.AfterProcessing {
		processed = httptest.NewRecorder()
		ep.serve(processed, r, body)
	}
	if f.Delay > 0 {
		if s.hooks.delayStarted != nil {
			s.hooks.delayStarted(ep.route)
		}
		completed := s.sleep(r.Context(), f.Delay)
		if s.hooks.delayEnded != nil {
			s.hooks.delayEnded(ep.route, completed)
		}
		if !completed {
			dropConnection(w)
			return
		}
	}
	switch {
	case f.DropConnection:
		dropConnection(w)
	case f.Status != 0:
		writeFault(w, f)
	case processed != nil:
		replay(w, processed)
	default:
		ep.serve(w, r, body)
	}
}

// sleep waits for d; false when the client went away or the server is
// closing first, so that Close never waits on a scripted delay.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.closing:
		return false
	case <-ctx.Done():
		return false
	}
}

func writeFault(w http.ResponseWriter, f Fault) {
	switch {
	case f.RetryAfter != "":
		w.Header().Set("Retry-After", f.RetryAfter)
	case f.RetryAfterDate > 0:
		w.Header().Set("Retry-After", time.Now().Add(f.RetryAfterDate).UTC().Format(http.TimeFormat))
	}
	body := f.Body
	if body == "" {
		message := fmt.Sprintf("injected fault: %d %s", f.Status, http.StatusText(f.Status))
		if f.Code != "" {
			writeJSON(w, f.Status, traceErrorBody(f.Code, message))
			return
		}
		writeJSON(w, f.Status, detailBody{Detail: message})
		return
	}
	ct := "text/plain; charset=utf-8"
	if strings.HasPrefix(strings.TrimSpace(body), "{") {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(f.Status)
	_, _ = w.Write([]byte(body))
}

// replay sends a recorded answer.
func replay(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// dropConnection closes the connection without an answer. Where the writer
// cannot be hijacked (HTTP/2, a recorder), aborting the handler has the same
// effect on the wire.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

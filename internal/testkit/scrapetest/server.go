package scrapetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Mode is how a Server answers scrapes. A test switches it with SetMode
// while scrapes go on.
type Mode int

const (
	// Normal answers the exposition, advanced one step per scrape.
	Normal Mode = iota
	// Down closes the listener and every open connection: a scrape fails
	// with "connection refused" (or a reset, if it was under way). Leaving
	// Down listens again on the same address.
	Down
	// Unavailable answers 503 Service Unavailable.
	Unavailable
	// Garbage answers 200, with the exposition's Content-Type, a body that
	// is not the text format (an HTML error page a proxy might send).
	Garbage
	// ChurningLabels answers as Normal, but one family's samples (see
	// SetChurn) carry one more label whose value is new on every scrape:
	// request_id="1", then "2", ..., the way a leaking request label
	// multiplies series.
	ChurningLabels
)

func (m Mode) String() string {
	switch m {
	case Normal:
		return "Normal"
	case Down:
		return "Down"
	case Unavailable:
		return "Unavailable"
	case Garbage:
		return "Garbage"
	case ChurningLabels:
		return "ChurningLabels"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ContentType is the Content-Type of every answer to a scrape.
const ContentType = "text/plain; version=0.0.4"

// GarbageBody is what the server answers in Garbage mode.
const GarbageBody = `<!DOCTYPE html>
<html><head><title>502 Bad Gateway</title></head>
<body><h1>502 Bad Gateway</h1><p>upstream connect error or disconnect/reset before headers</p></body></html>
`

// Server serves an exposition at /metrics on a loopback address; see the
// package documentation. Its methods are safe to call from any goroutine.
type Server struct {
	// life serialises Start, SetMode and Close: listening and closing.
	life sync.Mutex
	addr string // after Start, the address as resolved ("127.0.0.1:0" → its port)
	hs   *http.Server
	done chan struct{} // closed when hs's Serve returns
	// started and closed change with both life and mu held.
	started, closed bool

	mu        sync.Mutex
	idle      *sync.Cond // signalled when inflight drops to zero
	inflight  int
	listening bool // false while Down or closed: late handlers answer nothing
	exp       *exposition
	st        *state
	mode      Mode
	rendered  int // answers in Normal or ChurningLabels mode
	scrapes   int
	scraped   chan struct{} // closed and replaced at every scrape
	churn     churn
	churnN    int
}

type churn struct {
	family, label string
	perScrape     int
}

// New makes a server for a Prometheus text-format exposition (DCGM4GPU2Pods,
// VLLMV1, ...). seed fixes every value it will draw. The server does not
// listen until Start.
func New(text []byte, seed int64) (*Server, error) {
	e, err := parseExposition(string(text))
	if err != nil {
		return nil, fmt.Errorf("scrapetest: %w", err)
	}
	s := &Server{exp: e, st: newState(e, seed), scraped: make(chan struct{})}
	s.idle = sync.NewCond(&s.mu)
	s.churn = churn{label: "request_id", perScrape: 1}
	for _, f := range e.fams {
		if f.typ == "counter" && len(f.samples) > 0 {
			s.churn.family = f.name
			break
		}
	}
	return s, nil
}

// Start listens on addr: "127.0.0.1:0" for a port the kernel picks, or
// an explicit "127.0.0.1:port" (a freeport address). A server starts once.
func (s *Server) Start(addr string) error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return errors.New("scrapetest: Start after Close")
	}
	if s.started {
		return errors.New("scrapetest: started twice")
	}
	s.addr = addr
	if err := s.listen(); err != nil {
		s.addr = ""
		return err
	}
	s.mu.Lock()
	s.started = true
	s.mu.Unlock()
	if s.Mode() == Down {
		s.stopListening()
	}
	return nil
}

// Addr is the address the server listens on ("127.0.0.1:port"), for a
// scrape config's targets; "" before Start.
func (s *Server) Addr() string {
	s.life.Lock()
	defer s.life.Unlock()
	return s.addr
}

// URL is the address of the metrics endpoint: "http://127.0.0.1:port/metrics".
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Mode is the server's mode now.
func (s *Server) Mode() Mode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// SetMode switches how the server answers from the next scrape on. Going
// Down closes the listener and every connection before SetMode returns;
// leaving Down listens again on the same address, and the error says if
// that failed.
func (s *Server) SetMode(m Mode) error {
	if m < Normal || m > ChurningLabels {
		return fmt.Errorf("scrapetest: unknown mode %d", m)
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return errors.New("scrapetest: SetMode after Close")
	}
	s.mu.Lock()
	if m == ChurningLabels && s.churn.family == "" {
		s.mu.Unlock()
		return errors.New("scrapetest: ChurningLabels needs SetChurn: the exposition has no counter family")
	}
	old := s.mode
	s.mode = m
	started := s.started
	s.mu.Unlock()
	if !started || (old == Down) == (m == Down) {
		return nil
	}
	if m == Down {
		s.stopListening()
		return nil
	}
	return s.listen()
}

// SetChurn chooses the family ChurningLabels churns (by its name in the
// TYPE line, e.g. "vllm:prompt_tokens_total"), the label it adds, and how
// many new values each scrape adds to every one of the family's sample
// lines (each line is written perScrape times, one label value each). By
// default it is the first counter family with samples, label request_id,
// one new value a scrape.
func (s *Server) SetChurn(family, label string, perScrape int) error {
	if !validLabelName(label) || label == "le" || label == "quantile" {
		return fmt.Errorf("scrapetest: cannot churn label %q", label)
	}
	if perScrape < 1 {
		return fmt.Errorf("scrapetest: perScrape %d < 1", perScrape)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.exp.byName[family]
	if f == nil || len(f.samples) == 0 {
		return fmt.Errorf("scrapetest: no family %q with samples", family)
	}
	for _, smp := range f.samples {
		if _, ok := (Sample{Labels: smp.labels}).Label(label); ok {
			return fmt.Errorf("scrapetest: %s already has label %s", family, label)
		}
	}
	s.churn = churn{family: family, label: label, perScrape: perScrape}
	return nil
}

// Scrapes is how many scrapes the server has answered, in any mode (a
// scrape in Down mode is not answered).
func (s *Server) Scrapes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scrapes
}

// WaitScrapes waits until the server has answered n scrapes in all.
func (s *Server) WaitScrapes(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, ch := s.scrapes, s.scraped
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("scrapetest: %d of %d scrapes: %w", got, n, context.Cause(ctx))
		}
	}
}

// Close stops listening, closes every connection and waits for every
// goroutine of the server to end. It may be called more than once.
func (s *Server) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.stopListening()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// listen starts serving on s.addr; life is held.
func (s *Server) listen() error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("scrapetest: %w", err)
	}
	s.addr = ln.Addr().String()
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.listening = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln) // http.ErrServerClosed once stopListening closes it
	}()
	s.hs, s.done = hs, done
	return nil
}

// stopListening closes the listener and the connections and waits for the
// serving goroutine and every handler; life is held.
func (s *Server) stopListening() {
	if s.hs == nil {
		return
	}
	s.mu.Lock()
	s.listening = false
	s.mu.Unlock()
	_ = s.hs.Close()
	<-s.done
	s.hs, s.done = nil, nil
	s.mu.Lock()
	for s.inflight > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
}

// ServeHTTP answers a scrape at /metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	status, body, ok := s.answer()
	if !ok {
		// Down: the connection was accepted before the listener closed;
		// drop it without an answer, as a server going away does.
		panic(http.ErrAbortHandler)
	}
	defer s.left()
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// answer makes one scrape's answer and counts it; ok is false in Down
// mode. The caller calls left when done writing.
func (s *Server) answer() (status int, body []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.listening {
		return 0, nil, false
	}
	switch s.mode {
	case Down:
		return 0, nil, false
	case Unavailable:
		status, body = http.StatusServiceUnavailable, []byte("Service Unavailable\n")
	case Garbage:
		status, body = http.StatusOK, []byte(GarbageBody)
	default:
		if s.rendered > 0 {
			s.st.advance()
		}
		s.rendered++
		status = http.StatusOK
		if s.mode == ChurningLabels {
			body = s.renderChurn()
		} else {
			body = s.exp.render(nil)
		}
	}
	s.inflight++
	s.scrapes++
	close(s.scraped)
	s.scraped = make(chan struct{})
	return status, body, true
}

func (s *Server) left() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	if s.inflight == 0 {
		s.idle.Broadcast()
	}
}

// renderChurn renders with the churned family's lines written perScrape
// times, each with a label value not used before; mu is held.
func (s *Server) renderChurn() []byte {
	c := s.churn
	first := s.churnN + 1
	s.churnN += c.perScrape
	return s.exp.render(func(smp *sample) []string {
		if smp.fam.name != c.family {
			return nil
		}
		labels := make([]string, c.perScrape)
		for i := range labels {
			labels[i] = c.label + `="` + strconv.Itoa(first+i) + `"`
		}
		return labels
	})
}

func validLabelName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isLabelChar(name[i], i == 0) {
			return false
		}
	}
	return true
}

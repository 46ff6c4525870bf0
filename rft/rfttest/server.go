package rfttest

import (
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

const (
	defaultAPIKey = "test-key"
	defaultPrefix = "/api/v1"
)

// Options configures a fake platform.
type Options struct {
	// APIKey is the key of the default user, UserID; "" means "test-key".
	APIKey string
	// Users are more users beside the default one, each with its own key
	// (see User). NewServer panics on a user AddUser would refuse.
	Users []User
	// AllowedTeams lists the teams that may create runs. nil allows every
	// team; a non-nil list (even an empty one) allows only its members, and
	// a create for any other team is a 403.
	AllowedTeams []string
	// Prefix is the API prefix the platform routes hang off: "/api/v1"
	// (the default) or "/api/internal".
	Prefix string
	// TracesDisabledTeams lists the teams whose account has no Prime
	// Traces: an upload whose X-Prime-Team-ID is one of them is a 403
	// service_not_enabled. "" stands for uploads without a team.
	TracesDisabledTeams []string
	// DiscardObjects keeps no object bytes: storage counts the rows of
	// each PUT object instead, for ConfirmedRows (see discard.go).
	DiscardObjects bool
	// Latency holds every request this long before it is served, storage
	// PUTs included: the round trip to a remote platform, which the
	// loopback lacks. Benchmarks of a client's concurrency set it; 0 (the
	// default) answers at once.
	Latency time.Duration
}

// Server is a running fake platform. All methods are safe for concurrent
// use; the inspection methods return deep copies.
type Server struct {
	apiKey       string
	prefix       string
	allowedTeams map[string]bool // nil: every team
	noTraces     map[string]bool // teams without Prime Traces
	secret       []byte          // signs presigned storage URLs
	discard      *discardState   // nil unless Options.DiscardObjects; guarded by mu
	latency      time.Duration   // Options.Latency

	ts        *httptest.Server
	closing   chan struct{} // closed by Close: ends every pending Delay
	closeOnce sync.Once

	// hooks lets this package's tests observe handler progress; fixed at
	// construction.
	hooks hooks

	mu       sync.Mutex          // guards everything below
	users    map[string]*account // by key, revoked ones included (users.go)
	runs     map[string]*runState
	runOrder []string
	runSeq   int
	keySeq   int
	objects  map[string]*objectState // every presigned key, by key
	requests []Request
	faults   map[Route][]Fault
	outage   *Fault   // answers every request while set; see SetOutage
	outages  []Outage // every SetOutage window, the open one last

	traceUploads []*traceUpload            // committed, in commit order
	traceByKey   map[traceKey]*traceUpload // the same batches, by team and digest

	evals evalStore // evaluations and the environments hub (evalstate.go)
}

// hooks are test-only observation points.
type hooks struct {
	delayStarted func(Route)
	delayEnded   func(r Route, completed bool)
}

// NewServer starts a fake platform listening on 127.0.0.1 on a free port.
// Call Close when done.
func NewServer(opts Options) *Server {
	return newServer(opts, hooks{})
}

func newServer(opts Options, h hooks) *Server {
	s := &Server{
		hooks:   h,
		apiKey:  opts.APIKey,
		latency: opts.Latency,
		prefix:  normalizePrefix(opts.Prefix),
		secret:  make([]byte, 32),
		closing: make(chan struct{}),
		runs:    make(map[string]*runState),
		objects: make(map[string]*objectState),
		faults:  make(map[Route][]Fault),
		users:   make(map[string]*account),

		noTraces:   make(map[string]bool),
		traceByKey: make(map[traceKey]*traceUpload),
	}
	if s.apiKey == "" {
		s.apiKey = defaultAPIKey
	}
	s.addUserLocked(User{Key: s.apiKey, ID: UserID})
	for _, u := range opts.Users {
		s.addUserLocked(u)
	}
	if opts.AllowedTeams != nil {
		s.allowedTeams = make(map[string]bool, len(opts.AllowedTeams))
		for _, team := range opts.AllowedTeams {
			s.allowedTeams[team] = true
		}
	}
	for _, team := range opts.TracesDisabledTeams {
		s.noTraces[team] = true
	}
	if opts.DiscardObjects {
		s.discard = newDiscardState()
	}
	// crypto/rand.Read never fails (it crashes the program instead).
	_, _ = rand.Read(s.secret)
	// Assigned before the server starts: a request can arrive at once (a
	// process left from an earlier test on the reused port), and its
	// handler reads s.ts.
	s.ts = httptest.NewUnstartedServer(s.Handler())
	s.ts.Start()
	return s
}

// normalizePrefix gives the prefix a leading slash and no trailing one.
func normalizePrefix(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return defaultPrefix
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p
}

// URL is the server's root, scheme://host:port, without the API prefix.
// Presigned storage URLs hang off it.
func (s *Server) URL() string { return s.ts.URL }

// BaseURL is URL() followed by the API prefix, e.g. http://127.0.0.1:1234/api/v1.
func (s *Server) BaseURL() string { return s.ts.URL + s.prefix }

// APIKey is the default user's key (Options.APIKey); Options.Users and
// AddUser add others.
func (s *Server) APIKey() string { return s.apiKey }

// Handler serves the fake platform. NewServer already serves it; use it to
// mount the fake elsewhere. Presigned URLs always name URL().
func (s *Server) Handler() http.Handler { return s.discardBodies(http.HandlerFunc(s.serveHTTP)) }

// Close ends every pending Delay, shuts the listener and waits for every
// in-flight request to finish. The recorded state stays readable.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.ts.Close()
	})
}

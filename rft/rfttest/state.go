package rfttest

import (
	"maps"
	"net/http"
	"time"
)

// Run states as the platform names them.
const (
	StatusRunning   = "RUNNING"
	StatusCompleted = "COMPLETED"
	StatusFailed    = "FAILED"
)

// Run is a snapshot of one run on the fake platform.
type Run struct {
	ID string
	// Owner is the id of the user whose key created the run (UserID for a
	// run added with AddRun): only that user's keys reach it.
	Owner string
	// Spec is the create body as received (numbers as json.Number); nil for
	// a run added with AddRun.
	Spec         map[string]any
	Status       string // StatusRunning, StatusCompleted or StatusFailed
	ErrorMessage string // from the status route
	Finalized    bool   // closed by the finalize route
	ExitCode     int    // from the finalize route
	// Metrics holds one row per step, every post for that step merged into
	// it (a later value for the same name wins). The "step" and
	// "_timestamp" keys are not part of the row.
	Metrics map[int64]map[string]float64
	// TimeMetrics holds the rows of posts with no step, one per
	// "_timestamp" (unix seconds, as posted), merged the same way.
	TimeMetrics map[float64]map[string]float64
	MetricPosts int // accepted metrics posts
	// Objects are the uploaded sample objects: the confirmed ones in
	// confirm order, then those uploaded but never confirmed, in upload
	// order. A presigned key that was never uploaded is not an object.
	Objects []Object
}

// Object is one sample object in storage.
type Object struct {
	Step      int64
	Key       string
	Body      []byte
	Confirmed bool
}

// Request is one request the server received, whatever its outcome.
type Request struct {
	Method string
	Path   string // decoded path, without the query
	Query  string // raw query, e.g. the signature of a storage PUT
	Header http.Header
	Body   []byte
	Time   time.Time
	// UserID is the id of the user whose key the request carried, where its
	// route takes the key; "" when the key was missing or refused, and on
	// object storage, which takes none.
	UserID string
	// Outage says the request was answered by SetOutage's fault, so
	// nothing of it was processed.
	Outage bool
}

// runState is the server's own record of a run.
type runState struct {
	id           string
	owner        string // the creator's user id
	spec         map[string]any
	status       string
	errorMessage string
	finalized    bool
	exitCode     int
	metrics      map[int64]map[string]float64
	timeMetrics  map[float64]map[string]float64
	metricPosts  int
	confirmed    []*objectState // in confirm order
	uploaded     []*objectState // in first-upload order
}

// objectState is one presigned key and what happened to it.
type objectState struct {
	runID     string
	step      int64
	key       string
	body      []byte
	put       bool
	confirmed bool
}

func newRunState(id, owner string, spec map[string]any) *runState {
	return &runState{
		id:          id,
		owner:       owner,
		spec:        spec,
		status:      StatusRunning,
		metrics:     make(map[int64]map[string]float64),
		timeMetrics: make(map[float64]map[string]float64),
	}
}

func (r *runState) closed() bool { return r.status != StatusRunning }

// AddRun registers a RUNNING run of the default user (UserID) with the
// given id, as a hosted launch does before the trainer starts (the client
// attaches to it without a request). Adding an id that already exists
// changes nothing.
func (s *Server) AddRun(id string) { s.AddRunOwnedBy(id, UserID) }

// AddRunOwnedBy is AddRun for a run of the user with id owner.
func (s *Server) AddRunOwnedBy(id, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.runs[id]; ok {
		return
	}
	s.addRunLocked(newRunState(id, owner, nil))
}

func (s *Server) addRunLocked(r *runState) {
	s.runs[r.id] = r
	s.runOrder = append(s.runOrder, r.id)
}

// Runs returns every run, in creation order.
func (s *Server) Runs() []Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Run, 0, len(s.runOrder))
	for _, id := range s.runOrder {
		out = append(out, s.runs[id].snapshot())
	}
	return out
}

// Run returns the run with the given id.
func (s *Server) Run(id string) (Run, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return Run{}, false
	}
	return r.snapshot(), true
}

// Requests returns every request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Header = r.Header.Clone()
		r.Body = clone(r.Body)
		out[i] = r
	}
	return out
}

// record appends r, which matched route ("" for none), to the requests and
// returns its index.
func (s *Server) record(r *http.Request, body []byte, route Route) int {
	req := Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   clone(body),
		Time:   time.Now(),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, err := s.callerLocked(r.Header, route.keyHeaders()); err == nil && a != nil {
		req.UserID = a.id
	}
	s.requests = append(s.requests, req)
	return len(s.requests) - 1
}

func (r *runState) snapshot() Run {
	run := Run{
		ID:           r.id,
		Owner:        r.owner,
		Status:       r.status,
		ErrorMessage: r.errorMessage,
		Finalized:    r.finalized,
		ExitCode:     r.exitCode,
		Metrics:      make(map[int64]map[string]float64, len(r.metrics)),
		TimeMetrics:  make(map[float64]map[string]float64, len(r.timeMetrics)),
		MetricPosts:  r.metricPosts,
	}
	if r.spec != nil {
		run.Spec = copyJSON(r.spec).(map[string]any)
	}
	for step, row := range r.metrics {
		run.Metrics[step] = maps.Clone(row)
	}
	for at, row := range r.timeMetrics {
		run.TimeMetrics[at] = maps.Clone(row)
	}
	for _, o := range r.confirmed {
		run.Objects = append(run.Objects, o.snapshot())
	}
	for _, o := range r.uploaded {
		if !o.confirmed {
			run.Objects = append(run.Objects, o.snapshot())
		}
	}
	return run
}

func (o *objectState) snapshot() Object {
	return Object{Step: o.step, Key: o.key, Body: clone(o.body), Confirmed: o.confirmed}
}

// copyJSON deep-copies a value decoded by encoding/json.
func copyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, e := range v {
			c[k] = copyJSON(e)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = copyJSON(e)
		}
		return c
	default: // string, json.Number, bool, nil: values
		return v
	}
}

// clone copies b, keeping nil as nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

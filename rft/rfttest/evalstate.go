package rfttest

import (
	"fmt"
	"slices"
)

// StatusCancelled is the state of an evaluation closed as cancelled; the
// others are the run states (StatusRunning, StatusCompleted, StatusFailed).
const StatusCancelled = "CANCELLED"

// Evaluation is a snapshot of one evaluation on the fake platform.
type Evaluation struct {
	ID string
	// Owner is the id of the user whose key created the evaluation (UserID
	// for one added with AddEvaluation): only that user's keys reach it.
	Owner string
	// Spec is the create body as received (numbers as json.Number); nil for
	// an evaluation added with AddEvaluation.
	Spec         map[string]any
	Status       string // StatusRunning, StatusCompleted, StatusFailed or StatusCancelled
	ErrorMessage string // from the status update (route 6b)
	Finalized    bool   // closed by the finalize route (6a)
	// Metadata is the current metadata document: the create's, replaced
	// whole by every update that carried one; nil when there is none.
	Metadata map[string]any
	// Summary is the metrics of the last update or finalize, as sent; nil
	// when none has come.
	Summary map[string]any
	// Updates are every accepted summary update (route 5) and finalize
	// (route 6a), in arrival order: the summary's history.
	Updates []EvaluationUpdate
	// Samples are every appended sample, in append order, duplicates
	// included: the platform appends whatever it is sent.
	Samples []map[string]any
	// Appends is the number of samples of each accepted append request, in
	// order.
	Appends []int
}

// EvaluationUpdate is one accepted summary update or finalize.
type EvaluationUpdate struct {
	Route    Route          // RouteEvalUpdate or RouteEvalFinalize
	Metadata map[string]any // nil when the request carried none (always, for a finalize)
	Metrics  map[string]any // nil when the request carried none
}

// HubEnvironment is one environment of the fake's environments hub.
type HubEnvironment struct {
	ID    string // minted as env-<n> when AddEnvironment is given none
	Owner string // the owner of its slug owner/name; "" for one made by a resolve
	Name  string
	// Versions, when not empty, are the only version_ids a create may pin.
	Versions []string
	TeamID   string // the team_id of the resolve that made it
	Created  bool   // made by a resolve (get-or-create), not by AddEnvironment
}

// evalStore is the fake's evaluations and hub, guarded by Server.mu. The
// zero value is ready: its maps are made on first write.
type evalStore struct {
	evals  map[string]*evalState
	order  []string
	seq    int
	envs   []*HubEnvironment // in registration order; owned by the store
	envSeq int
}

// evalState is the server's own record of an evaluation.
type evalState struct {
	id           string
	owner        string // the creator's user id
	spec         map[string]any
	status       string
	errorMessage string
	finalized    bool
	metadata     map[string]any
	summary      map[string]any
	updates      []EvaluationUpdate
	samples      []map[string]any
	appends      []int
}

func (e *evalState) closed() bool { return e.status != StatusRunning }

// AddEnvironment registers an environment in the hub and returns its id,
// minted when env.ID is empty. Route 2 finds it by Owner/Name, route 1 by
// Name. It panics on an environment without a Name or with an id already
// taken: a hub a test cannot trust would let it pass for the wrong reason.
func (s *Server) AddEnvironment(env HubEnvironment) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if env.Name == "" {
		panic("rfttest: AddEnvironment needs a Name")
	}
	if env.ID == "" {
		env.ID = s.newEnvIDLocked()
	} else if s.environmentLocked(env.ID) != nil {
		panic(fmt.Sprintf("rfttest: AddEnvironment: id %q is taken", env.ID))
	}
	env.Versions = slices.Clone(env.Versions)
	env.Created = false
	s.evals.envs = append(s.evals.envs, &env)
	return env.ID
}

// Environments returns every hub environment, registered or made by a
// resolve, in the order they came.
func (s *Server) Environments() []HubEnvironment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]HubEnvironment, len(s.evals.envs))
	for i, e := range s.evals.envs {
		out[i] = *e
		out[i].Versions = slices.Clone(e.Versions)
	}
	return out
}

func (s *Server) environmentLocked(id string) *HubEnvironment {
	for _, e := range s.evals.envs {
		if e.ID == id {
			return e
		}
	}
	return nil
}

// newEnvIDLocked mints "env-<n>", skipping ids already taken.
func (s *Server) newEnvIDLocked() string {
	for {
		s.evals.envSeq++
		id := fmt.Sprintf("env-%d", s.evals.envSeq)
		if s.environmentLocked(id) == nil {
			return id
		}
	}
}

// AddEvaluation registers a RUNNING evaluation of the default user
// (UserID) with the given id, as a hosted launch does before the eval
// starts (the client attaches to it without a request, $EVALUATION_ID).
// Adding an id that already exists changes nothing.
func (s *Server) AddEvaluation(id string) { s.AddEvaluationOwnedBy(id, UserID) }

// AddEvaluationOwnedBy is AddEvaluation for an evaluation of the user with
// id owner.
func (s *Server) AddEvaluationOwnedBy(id, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.evals.evals[id]; ok {
		return
	}
	s.addEvalLocked(&evalState{id: id, owner: owner, status: StatusRunning})
}

func (s *Server) addEvalLocked(e *evalState) {
	if s.evals.evals == nil {
		s.evals.evals = make(map[string]*evalState)
	}
	s.evals.evals[e.id] = e
	s.evals.order = append(s.evals.order, e.id)
}

// newEvalIDLocked mints "eval-<n>", skipping ids AddEvaluation took.
func (s *Server) newEvalIDLocked() string {
	for {
		s.evals.seq++
		id := fmt.Sprintf("eval-%d", s.evals.seq)
		if _, taken := s.evals.evals[id]; !taken {
			return id
		}
	}
}

// Evaluations returns every evaluation, in creation order.
func (s *Server) Evaluations() []Evaluation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Evaluation, 0, len(s.evals.order))
	for _, id := range s.evals.order {
		out = append(out, s.evals.evals[id].snapshot())
	}
	return out
}

// Evaluation returns the evaluation with the given id.
func (s *Server) Evaluation(id string) (Evaluation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.evals.evals[id]
	if !ok {
		return Evaluation{}, false
	}
	return e.snapshot(), true
}

func (e *evalState) snapshot() Evaluation {
	out := Evaluation{
		ID:           e.id,
		Owner:        e.owner,
		Spec:         copyObject(e.spec),
		Status:       e.status,
		ErrorMessage: e.errorMessage,
		Finalized:    e.finalized,
		Metadata:     copyObject(e.metadata),
		Summary:      copyObject(e.summary),
		Appends:      slices.Clone(e.appends),
	}
	for _, u := range e.updates {
		out.Updates = append(out.Updates, EvaluationUpdate{
			Route: u.Route, Metadata: copyObject(u.Metadata), Metrics: copyObject(u.Metrics),
		})
	}
	for _, smp := range e.samples {
		out.Samples = append(out.Samples, copyObject(smp))
	}
	return out
}

// copyObject deep-copies a decoded JSON object, keeping nil as nil.
func copyObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return copyJSON(m).(map[string]any)
}

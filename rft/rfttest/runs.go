package rfttest

import (
	"fmt"
	"net/http"
	"strings"
)

// create handles POST <prefix>/rft/external-runs. Every create registers a
// new run, so a replay after a lost response makes a second one, exactly the
// hazard the spec calls "not replayable".
func (s *Server) create(body map[string]any, _ string) (reply, error) {
	f := newFields(body, "")
	f.nonEmptyStr("base_model", required)
	f.count("max_steps", required)
	envs := f.list("environments", required)
	team := f.str("team_id", required)
	name := f.str("name", optional)
	f.count("batch_size", optional)
	f.count("rollouts_per_example", optional)
	f.count("seq_len", optional)
	f.object("run_config", optional)
	f.str("wandb_project", optional)
	f.str("wandb_entity", optional)
	f.str("wandb_run_name", optional)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	for i, e := range envs {
		if err := checkEnvironment(i, e); err != nil {
			return reply{}, err
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.allowedTeams != nil && !s.allowedTeams[team] {
		return reply{}, refuse(http.StatusForbidden, "External training runs are not enabled for this team")
	}
	run := newRunState(s.newRunIDLocked(), copyJSON(body).(map[string]any))
	s.addRunLocked(run)
	if name == "" {
		name = run.id // the platform names a run it was not given a name for
	}
	return reply{http.StatusCreated, map[string]any{
		"run": map[string]any{"id": run.id, "name": name, "status": run.status},
	}}, nil
}

// checkEnvironment checks one entry of "environments": {"id"} plus an
// optional "version_id", passed through as the client got them.
func checkEnvironment(i int, e any) error {
	m, ok := e.(map[string]any)
	if !ok {
		return refuse(http.StatusBadRequest, "environments[%d] must be an object, not %s", i, jsonType(e))
	}
	f := newFields(m, fmt.Sprintf("environments[%d].", i))
	f.nonEmptyStr("id", required)
	f.nonEmptyStr("version_id", optional)
	return f.check()
}

// newRunIDLocked mints "run-<n>", skipping ids AddRun already took.
func (s *Server) newRunIDLocked() string {
	for {
		s.runSeq++
		id := fmt.Sprintf("run-%d", s.runSeq)
		if _, taken := s.runs[id]; !taken {
			return id
		}
	}
}

// runLocked finds a run or refuses with 404.
func (s *Server) runLocked(id string) (*runState, error) {
	r, ok := s.runs[id]
	if !ok {
		return nil, refuse(http.StatusNotFound, "Run %s not found", id)
	}
	return r, nil
}

// openRunLocked finds a run that still takes writes: unknown is a 404,
// closed a 409 (see the package doc).
func (s *Server) openRunLocked(id, action string) (*runState, error) {
	r, err := s.runLocked(id)
	if err != nil {
		return nil, err
	}
	if r.closed() {
		return nil, refuse(http.StatusConflict, "Cannot %s run in '%s' state.", action, r.status)
	}
	return r, nil
}

// finalize handles POST <prefix>/rft/finalize: a compare-and-set from
// RUNNING to COMPLETED. Finalizing a finalized run succeeds and changes
// nothing; a run closed by the status route is a 409.
func (s *Server) finalize(body map[string]any, _ string) (reply, error) {
	f := newFields(body, "")
	runID := f.str("run_id", required)
	exitCode := f.integer("exit_code", required)
	if err := f.check(); err != nil {
		return reply{}, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.runLocked(runID)
	if err != nil {
		return reply{}, err
	}
	switch {
	case r.finalized:
	case r.closed():
		return reply{}, refuse(http.StatusConflict, "Cannot finalize run in '%s' state.", r.status)
	default:
		r.status, r.finalized, r.exitCode = StatusCompleted, true, int(exitCode)
	}
	return reply{http.StatusOK, successBody()}, nil
}

// setStatus handles PUT <prefix>/rft/external-runs/{run_id}/status: the
// one-way move of a RUNNING run to COMPLETED or FAILED.
func (s *Server) setStatus(body map[string]any, runID string) (reply, error) {
	f := newFields(body, "")
	status := f.str("status", required)
	message := f.str("error_message", optional)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	if status != "completed" && status != "failed" {
		return reply{}, refuse(http.StatusBadRequest, "status must be 'completed' or 'failed', not %q", status)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.runLocked(runID)
	if err != nil {
		return reply{}, err
	}
	if r.closed() {
		return reply{}, refuse(http.StatusConflict, "Cannot update status of run in '%s' state.", r.status)
	}
	r.status, r.errorMessage = strings.ToUpper(status), message
	return reply{http.StatusOK, map[string]any{
		"run": map[string]any{"id": r.id, "status": r.status},
	}}, nil
}

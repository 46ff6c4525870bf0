package rfttest

import (
	"fmt"
	"net/http"
	"strings"
)

// create handles POST <prefix>/rft/external-runs. Every create registers a
// new run, so a replay after a lost response makes a second one, exactly the
// hazard the spec calls "not replayable".
func (s *Server) create(who *account, f *fields, _ string) (reply, error) {
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
	if !s.mayCreateForLocked(who, team) {
		return reply{}, refuse(http.StatusForbidden, "External training runs are not enabled for this team")
	}
	run := newRunState(s.newRunIDLocked(), who.id, copyJSON(f.m).(map[string]any))
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

// withRun calls fn on the run named id with the lock held from the lookup
// on, so that fn sees the run as it was found. An unknown run is a 404; so
// is another user's, with the platform's detail, before any other rule (a
// closed run of another user is not a 409).
func (s *Server) withRun(who *account, id string, fn func(*runState) (reply, error)) (reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	switch {
	case !ok:
		return reply{}, refuse(http.StatusNotFound, "Run %s not found", id)
	case r.owner != who.id:
		return reply{}, refuse(http.StatusNotFound, "Run not found")
	}
	return fn(r)
}

// withOpenRun is withRun for a write: a closed run refuses it (see the
// package doc).
func (s *Server) withOpenRun(who *account, id, action string, fn func(*runState) (reply, error)) (reply, error) {
	return s.withRun(who, id, func(r *runState) (reply, error) {
		if r.closed() {
			return reply{}, refuseClosed(r, action)
		}
		return fn(r)
	})
}

// refuseClosed is the 409 a closed run answers a write with.
func refuseClosed(r *runState, action string) error {
	return refuse(http.StatusConflict, "Cannot %s run in '%s' state.", action, r.status)
}

// finalize handles POST <prefix>/rft/finalize: a compare-and-set from
// RUNNING to COMPLETED. Finalizing a finalized run succeeds and changes
// nothing; a run closed by the status route is a 409.
func (s *Server) finalize(who *account, f *fields, _ string) (reply, error) {
	runID := f.str("run_id", required)
	exitCode := f.integer("exit_code", required)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	return s.withRun(who, runID, func(r *runState) (reply, error) {
		switch {
		case r.finalized:
		case r.closed():
			return reply{}, refuseClosed(r, "finalize")
		default:
			r.status, r.finalized, r.exitCode = StatusCompleted, true, int(exitCode)
		}
		return reply{http.StatusOK, successBody()}, nil
	})
}

// setStatus handles PUT <prefix>/rft/external-runs/{run_id}/status: the
// one-way move of a RUNNING run to COMPLETED or FAILED.
func (s *Server) setStatus(who *account, f *fields, runID string) (reply, error) {
	status := f.str("status", required)
	message := f.str("error_message", optional)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	if status != "completed" && status != "failed" {
		return reply{}, refuse(http.StatusBadRequest, "status must be 'completed' or 'failed', not %q", status)
	}
	return s.withOpenRun(who, runID, "update status of", func(r *runState) (reply, error) {
		r.status, r.errorMessage = strings.ToUpper(status), message
		return reply{http.StatusOK, map[string]any{
			"run": map[string]any{"id": r.id, "status": r.status},
		}}, nil
	})
}

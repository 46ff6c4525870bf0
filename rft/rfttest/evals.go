package rfttest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The figures and paths of evals-api.md.
const (
	// evalsPrefix is where every route of the evaluations API hangs, hosted
	// evaluations included: the internal router serves training only, so
	// these routes ignore Options.Prefix.
	evalsPrefix = "/api/v1"
	// maxSamplesBody is the most one samples request may carry.
	maxSamplesBody = 25 << 20
	// maxStatusMessage is the most characters of a status error_message.
	maxStatusMessage = 4096
)

// evalFunc handles a decoded, authenticated call of the evaluations API
// from the user who: it reads the body's keys through f (empty for a GET)
// and refuses the body on f.check() before it acts.
type evalFunc func(who *account, f *fields) (reply, error)

// matchEval finds the endpoint of an evaluations-API request. mine=false
// leaves the request to the other routes; mine with ok=false is an unknown
// route under the API's paths.
func (s *Server) matchEval(r *http.Request) (ep endpoint, ok, mine bool) {
	rest, found := strings.CutPrefix(r.URL.EscapedPath(), evalsPrefix+"/")
	if !found {
		return endpoint{}, false, false
	}
	if rest == "user/whoami" {
		if r.Method != http.MethodGet {
			return endpoint{}, false, true
		}
		return s.whoami(), true, true
	}
	seg := strings.Split(rest, "/")
	switch seg[0] {
	case "environmentshub", "evaluations":
	default:
		return endpoint{}, false, false
	}
	// Path parameters, unescaped; any that is empty or unreadable is no
	// route at all.
	param := func(i int) (string, bool) {
		v, err := url.PathUnescape(seg[i])
		return v, err == nil && v != ""
	}
	post, put, get := r.Method == http.MethodPost, r.Method == http.MethodPut, r.Method == http.MethodGet
	switch {
	case post && rest == "environmentshub/resolve":
		return s.evalEndpoint(RouteEnvResolve, 0, s.resolveEnvironment), true, true
	case get && len(seg) == 4 && seg[0] == "environmentshub" && seg[3] == "@latest":
		owner, ok1 := param(1)
		name, ok2 := param(2)
		if !ok1 || !ok2 {
			return endpoint{}, false, true
		}
		return s.evalEndpoint(RouteEnvLookup, 0, func(*account, *fields) (reply, error) {
			return s.lookupEnvironment(owner, name)
		}), true, true
	case post && rest == "evaluations/":
		return s.evalEndpoint(RouteEvalCreate, 0, s.createEvaluation), true, true
	case post && rest == "evaluations":
		// FastAPI's redirect_slashes: the route is /evaluations/.
		return endpoint{RouteEvalCreate, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
			w.Header().Set("Location", s.ts.URL+evalsPrefix+"/evaluations/")
			w.WriteHeader(http.StatusTemporaryRedirect)
		}}, true, true
	case seg[0] != "evaluations" || len(seg) < 2 || len(seg) > 3:
		return endpoint{}, false, true
	}
	id, idOK := param(1)
	if !idOK {
		return endpoint{}, false, true
	}
	switch {
	case post && len(seg) == 3 && seg[2] == "samples":
		return s.evalEndpoint(RouteEvalSamples, maxSamplesBody, func(who *account, f *fields) (reply, error) {
			return s.appendSamples(who, f, id)
		}), true, true
	case post && len(seg) == 3 && seg[2] == "finalize":
		return s.evalEndpoint(RouteEvalFinalize, 0, func(who *account, f *fields) (reply, error) {
			return s.finalizeEvaluation(who, f, id)
		}), true, true
	case put && len(seg) == 2:
		return s.evalEndpoint(RouteEvalUpdate, 0, func(who *account, f *fields) (reply, error) {
			return s.updateEvaluation(who, f, id)
		}), true, true
	}
	return endpoint{}, false, true
}

// evalEndpoint wraps a route of the evaluations API: the key as a Bearer
// token, the one header evals-api.md names (the routes are all on the
// public router; an x-api-key is neither needed nor looked at), a body
// within limit (0: the server's own cap), then a compact JSON object (no
// body at all on a GET), then the route's own rules.
func (s *Server) evalEndpoint(route Route, limit int, fn evalFunc) endpoint {
	return endpoint{route, func(w http.ResponseWriter, r *http.Request, body []byte) {
		who, err := s.authenticate(r.Header, bearerOnly)
		if err != nil {
			writeError(w, err)
			return
		}
		if limit > 0 && len(body) > limit {
			writeError(w, refuse(http.StatusRequestEntityTooLarge,
				"the request is %d bytes, more than the %d one request may carry", len(body), limit))
			return
		}
		obj := map[string]any{}
		if r.Method == http.MethodGet {
			if len(body) > 0 {
				writeError(w, refuse(http.StatusBadRequest, "a GET carries no body"))
				return
			}
		} else {
			var err error
			if obj, err = decodeBody(r.Header, body); err != nil {
				writeError(w, err)
				return
			}
			if !isCompact(body) {
				writeError(w, refuse(http.StatusBadRequest, "the body must be compact JSON"))
				return
			}
		}
		rep, err := fn(who, newFields(obj, ""))
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, rep.status, rep.body)
	}}
}

// isCompact reports whether a valid JSON body has no insignificant space.
func isCompact(body []byte) bool {
	var b bytes.Buffer
	return json.Compact(&b, body) == nil && bytes.Equal(b.Bytes(), body)
}

// createEvaluation handles POST /api/v1/evaluations/ (route 3). Every
// create registers a new evaluation, so a replay after a lost answer makes
// a second one: the hazard the spec calls "not replayable". Every
// environment must be in the hub, and a pinned version one of its Versions
// when it lists any (404 otherwise).
func (s *Server) createEvaluation(who *account, f *fields) (reply, error) {
	name := f.nonEmptyStr("name", required)
	envs := f.list("environments", required)
	tags := f.list("tags", required)
	f.nonEmptyStr("model_name", optional)
	f.nonEmptyStr("dataset", required)
	f.nonEmptyStr("framework", optional)
	f.nonEmptyStr("description", optional)
	metadata := f.object("metadata", optional)
	f.nonEmptyStr("team_id", optional)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	if len(envs) == 0 {
		return reply{}, refuse(http.StatusBadRequest, "environments must not be empty")
	}
	for i, e := range envs {
		if err := checkEnvironment(i, e); err != nil {
			return reply{}, err
		}
	}
	for i, t := range tags {
		if _, ok := t.(string); !ok {
			return reply{}, refuse(http.StatusBadRequest, "tags[%d] must be a string, not %s", i, jsonType(t))
		}
	}
	if metadata != nil && len(metadata) == 0 {
		return reply{}, refuse(http.StatusBadRequest, "metadata must be omitted when empty")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range envs {
		m := e.(map[string]any)
		id := m["id"].(string)
		env := s.environmentLocked(id)
		if env == nil {
			return reply{}, refuse(http.StatusNotFound, "Environment %s not found (environments[%d].id)", id, i)
		}
		if v, pinned := m["version_id"].(string); pinned && len(env.Versions) > 0 && !slices.Contains(env.Versions, v) {
			return reply{}, refuse(http.StatusNotFound, "Environment %s has no version %s (environments[%d].version_id)", id, v, i)
		}
	}
	spec := copyObject(f.m)
	ev := &evalState{id: s.newEvalIDLocked(), owner: who.id, spec: spec, status: StatusRunning, metadata: copyObject(metadata)}
	s.addEvalLocked(ev)
	return reply{http.StatusCreated, map[string]any{
		"evaluation_id": ev.id,
		"name":          name,
		"status":        ev.status,
		"viewer_url":    s.ts.URL + "/dashboard/evaluations/" + url.PathEscape(ev.id),
	}}, nil
}

// appendSamples handles POST /api/v1/evaluations/{id}/samples (route 4):
// the samples are appended in order, whatever was appended before, so a
// replay stores them twice. Each must be an object with a sample_id.
func (s *Server) appendSamples(who *account, f *fields, id string) (reply, error) {
	samples := f.list("samples", required)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	if len(samples) == 0 {
		return reply{}, refuse(http.StatusBadRequest, "samples must not be empty")
	}
	rows := make([]map[string]any, len(samples))
	for i, smp := range samples {
		m, ok := smp.(map[string]any)
		if !ok {
			return reply{}, refuse(http.StatusBadRequest, "samples[%d] must be an object, not %s", i, jsonType(smp))
		}
		if err := checkSampleID(i, m); err != nil {
			return reply{}, err
		}
		rows[i] = copyObject(m)
	}
	return s.withOpenEval(who, id, "add samples to", func(e *evalState) (reply, error) {
		e.samples = append(e.samples, rows...)
		e.appends = append(e.appends, len(rows))
		return reply{http.StatusOK, successBody()}, nil
	})
}

// checkSampleID demands sample_id: a non-empty string or an integer.
func checkSampleID(i int, m map[string]any) error {
	v, ok := m["sample_id"]
	if !ok {
		return refuse(http.StatusBadRequest, "samples[%d].sample_id is required", i)
	}
	switch v := v.(type) {
	case string:
		if v != "" {
			return nil
		}
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return nil
		}
	}
	return refuse(http.StatusBadRequest, "samples[%d].sample_id must be a non-empty string or an integer, not %s", i, jsonType(v))
}

// updateEvaluation handles PUT /api/v1/evaluations/{id}, which carries two
// bodies: {"status", "error_message"?} (route 6b) or {"metadata"?,
// "metrics"?} (route 5). Metadata replaces the whole document; metrics
// become the summary.
func (s *Server) updateEvaluation(who *account, f *fields, id string) (reply, error) {
	if _, ok := f.m["status"]; ok {
		return s.setEvaluationStatus(who, f, id)
	}
	metadata := f.object("metadata", optional)
	metrics := f.object("metrics", optional)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	switch {
	case metadata == nil && metrics == nil:
		return reply{}, refuse(http.StatusBadRequest, "the body has neither metadata nor metrics: the update is skipped when both are empty")
	case metadata != nil && len(metadata) == 0:
		return reply{}, refuse(http.StatusBadRequest, "metadata must be omitted when empty")
	case metrics != nil && len(metrics) == 0:
		return reply{}, refuse(http.StatusBadRequest, "metrics must be omitted when empty")
	}
	if err := checkFinite(metrics, "metrics"); err != nil {
		return reply{}, err
	}
	return s.withOpenEval(who, id, "update", func(e *evalState) (reply, error) {
		if metadata != nil {
			e.metadata = copyObject(metadata)
		}
		if metrics != nil {
			e.summary = copyObject(metrics)
		}
		e.updates = append(e.updates, EvaluationUpdate{
			Route: RouteEvalUpdate, Metadata: copyObject(metadata), Metrics: copyObject(metrics),
		})
		return reply{http.StatusOK, map[string]any{"evaluation_id": e.id, "status": e.status}}, nil
	})
}

// setEvaluationStatus is route 6b: the one-way move of a RUNNING
// evaluation to FAILED or CANCELLED. A closed evaluation answers 409, which
// the client takes as success.
func (s *Server) setEvaluationStatus(who *account, f *fields, id string) (reply, error) {
	status := f.str("status", required)
	message := f.str("error_message", optional)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	if status != StatusFailed && status != StatusCancelled {
		return reply{}, refuse(http.StatusBadRequest, "status must be 'FAILED' or 'CANCELLED', not %q", status)
	}
	if n := utf8.RuneCountInString(message); n > maxStatusMessage {
		// Stricter than the platform is known to be: the client cuts it.
		return reply{}, refuse(http.StatusBadRequest, "error_message is %d characters, more than %d", n, maxStatusMessage)
	}
	return s.withOpenEval(who, id, "update status of", func(e *evalState) (reply, error) {
		e.status, e.errorMessage = status, message
		return reply{http.StatusOK, map[string]any{"evaluation_id": e.id, "status": e.status}}, nil
	})
}

// finalizeEvaluation handles POST /api/v1/evaluations/{id}/finalize (route
// 6a): RUNNING to COMPLETED, with the summary. It happens once: a second
// finalize, like any write to a closed evaluation, is a 409, which is why
// the route is not replayable.
func (s *Server) finalizeEvaluation(who *account, f *fields, id string) (reply, error) {
	metrics := f.object("metrics", required)
	if err := f.check(); err != nil {
		return reply{}, err
	}
	if err := checkFinite(metrics, "metrics"); err != nil {
		return reply{}, err
	}
	return s.withOpenEval(who, id, "finalize", func(e *evalState) (reply, error) {
		e.status, e.finalized = StatusCompleted, true
		e.summary = copyObject(metrics)
		e.updates = append(e.updates, EvaluationUpdate{Route: RouteEvalFinalize, Metrics: copyObject(metrics)})
		return reply{http.StatusOK, map[string]any{"evaluation_id": e.id, "status": e.status}}, nil
	})
}

// withOpenEval calls fn on the evaluation named id with the lock held: an
// unknown one is a 404, and so is another user's, in the same words; a
// closed one refuses the write with a 409.
func (s *Server) withOpenEval(who *account, id, action string, fn func(*evalState) (reply, error)) (reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.evals.evals[id]
	switch {
	case !ok || e.owner != who.id:
		return reply{}, refuse(http.StatusNotFound, "Evaluation %s not found", id)
	case e.closed():
		return reply{}, refuse(http.StatusConflict, "Cannot %s evaluation in '%s' state.", action, e.status)
	}
	return fn(e)
}

// checkFinite refuses a number that is not a finite float64 anywhere in v:
// the spec has non-finite numbers removed from summaries before sending.
func checkFinite(v any, path string) error {
	switch v := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return refuse(http.StatusBadRequest, "%s is not a finite number: %s", path, v)
		}
	case map[string]any:
		for k, e := range v {
			if err := checkFinite(e, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkFinite(e, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

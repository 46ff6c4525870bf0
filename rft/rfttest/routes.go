package rfttest

import (
	"net/http"
	"net/url"
	"strings"
)

// Route names one of the platform's operations, for Inject.
type Route string

// The routes of rft-api.md.
const (
	RouteCreate   Route = "create"   // POST <prefix>/rft/external-runs
	RouteMetrics  Route = "metrics"  // POST <prefix>/rft/metrics
	RoutePresign  Route = "presign"  // POST <prefix>/rft/samples/presign
	RoutePut      Route = "put"      // PUT /storage/<key>?X-Sig=…
	RouteConfirm  Route = "confirm"  // POST <prefix>/rft/samples/confirm
	RouteFinalize Route = "finalize" // POST <prefix>/rft/finalize
	RouteStatus   Route = "status"   // PUT <prefix>/rft/external-runs/{run_id}/status
	RouteTraces   Route = "traces"   // POST /api/v1/traces (Prime Traces, prime-traces.md)
)

// The routes of evals-api.md, always under /api/v1 whatever the Prefix.
// Routes 5 and 6b share a method and a path, so one Route takes the faults
// of both.
const (
	RouteEnvResolve   Route = "env resolve"   // POST /api/v1/environmentshub/resolve (route 1)
	RouteEnvLookup    Route = "env lookup"    // GET /api/v1/environmentshub/{owner}/{name}/@latest (route 2)
	RouteEvalCreate   Route = "eval create"   // POST /api/v1/evaluations/ (route 3)
	RouteEvalSamples  Route = "eval samples"  // POST /api/v1/evaluations/{id}/samples (route 4)
	RouteEvalUpdate   Route = "eval update"   // PUT /api/v1/evaluations/{id}: summary (route 5) or failed/cancelled status (route 6b)
	RouteEvalFinalize Route = "eval finalize" // POST /api/v1/evaluations/{id}/finalize (route 6a)
)

// RouteWhoami is who a key belongs to (rft-api.md), under /api/v1 whatever the Prefix.
const RouteWhoami Route = "whoami" // GET /api/v1/user/whoami

func (r Route) known() bool {
	switch r {
	case RouteCreate, RouteMetrics, RoutePresign, RoutePut, RouteConfirm, RouteFinalize, RouteStatus, RouteTraces:
		return true
	case RouteEnvResolve, RouteEnvLookup, RouteEvalCreate, RouteEvalSamples, RouteEvalUpdate, RouteEvalFinalize, RouteWhoami:
		return true
	}
	return false
}

// storagePath is where the fake's object storage lives: outside the API
// prefix, as a bucket is outside the API.
const storagePath = "/storage/"

// endpoint is a matched request: its route and how to serve it.
type endpoint struct {
	route Route
	serve func(w http.ResponseWriter, r *http.Request, body []byte)
}

// platformFunc handles a decoded, authenticated platform call from the user
// who: it reads the body's keys through f and refuses the body on f.check()
// before it acts, so that a body it gets wrong changes nothing. pathRunID is
// the run id from the path, for the status route.
type platformFunc func(who *account, f *fields, pathRunID string) (reply, error)

// reply is a successful platform answer.
type reply struct {
	status int
	body   any
}

// match finds the endpoint for a request; ok=false is an unknown route.
func (s *Server) match(r *http.Request) (endpoint, bool) {
	if r.URL.Path == tracesPath {
		return endpoint{RouteTraces, s.serveTraces}, r.Method == http.MethodPost
	}
	if ep, ok, mine := s.matchEval(r); mine {
		return ep, ok
	}
	if key, ok := strings.CutPrefix(r.URL.Path, storagePath); ok {
		if r.Method != http.MethodPut || key == "" {
			return endpoint{}, false
		}
		return endpoint{RoutePut, func(w http.ResponseWriter, r *http.Request, body []byte) {
			s.servePut(w, r, key, body)
		}}, true
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), s.prefix+"/rft/")
	if !ok {
		return endpoint{}, false
	}
	switch {
	case r.Method == http.MethodPost && rest == "external-runs":
		return s.platform(RouteCreate, s.create, ""), true
	case r.Method == http.MethodPost && rest == "metrics":
		return s.platform(RouteMetrics, s.postMetrics, ""), true
	case r.Method == http.MethodPost && rest == "samples/presign":
		return s.platform(RoutePresign, s.presign, ""), true
	case r.Method == http.MethodPost && rest == "samples/confirm":
		return s.platform(RouteConfirm, s.confirm, ""), true
	case r.Method == http.MethodPost && rest == "finalize":
		return s.platform(RouteFinalize, s.finalize, ""), true
	case r.Method == http.MethodPut:
		escaped, ok := strings.CutPrefix(rest, "external-runs/")
		if !ok {
			return endpoint{}, false
		}
		escaped, ok = strings.CutSuffix(escaped, "/status")
		if !ok || escaped == "" || strings.Contains(escaped, "/") {
			return endpoint{}, false
		}
		id, err := url.PathUnescape(escaped)
		if err != nil {
			return endpoint{}, false
		}
		return s.platform(RouteStatus, s.setStatus, id), true
	}
	return endpoint{}, false
}

// platform wraps a platform route: authentication, then the body, then the
// route's own rules.
func (s *Server) platform(route Route, fn platformFunc, pathRunID string) endpoint {
	return endpoint{route, func(w http.ResponseWriter, r *http.Request, body []byte) {
		who, err := s.authenticate(r.Header, bothHeaders)
		if err != nil {
			writeError(w, err)
			return
		}
		obj, err := decodeBody(r.Header, body)
		if err != nil {
			writeError(w, err)
			return
		}
		rep, err := fn(who, newFields(obj, ""), pathRunID)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, rep.status, rep.body)
	}}
}

// TrainingRoute names a request of the training routes by its method and
// decoded path (create, metrics, presign, put, confirm, finalize, status),
// whatever the Prefix; any other request is "". Tests read a run's
// lifecycle as the sequence of these, leaving key checks, Prime Traces and
// evaluations out.
func TrainingRoute(method, path string) Route {
	switch {
	case strings.HasPrefix(path, "/storage/"):
		return RoutePut
	case strings.HasSuffix(path, "/rft/external-runs"):
		return RouteCreate
	case strings.HasSuffix(path, "/rft/metrics"):
		return RouteMetrics
	case strings.HasSuffix(path, "/rft/samples/presign"):
		return RoutePresign
	case strings.HasSuffix(path, "/rft/samples/confirm"):
		return RouteConfirm
	case strings.HasSuffix(path, "/rft/finalize"):
		return RouteFinalize
	case method == http.MethodPut && strings.HasSuffix(path, "/status"):
		return RouteStatus
	}
	return ""
}

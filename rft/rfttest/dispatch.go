package rfttest

import (
	"io"
	"net/http"
)

// maxBody caps what the fake reads of one request.
const maxBody = 64 << 20

// serveHTTP records the request, matches its route and serves it, through
// the route's next scripted fault if one is queued.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	// Matched first so that the record knows where the route takes its key.
	ep, ok := s.match(r)
	req := s.record(r, body, ep.route)
	if err != nil {
		writeError(w, refuse(http.StatusBadRequest, "could not read the body: %v", err))
		return
	}
	if len(body) > maxBody {
		writeError(w, refuse(http.StatusRequestEntityTooLarge, "body larger than %d bytes", maxBody))
		return
	}
	if s.latency > 0 && !s.sleep(r.Context(), s.latency) {
		dropConnection(w)
		return
	}
	if !ok {
		writeError(w, refuse(http.StatusNotFound, "Not Found"))
		return
	}
	if f, ok := s.takeFault(ep.route, req); ok {
		s.serveFault(w, r, ep, body, f)
		return
	}
	ep.serve(w, r, body)
}

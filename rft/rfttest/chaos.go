package rfttest

import (
	"net/http"
	"net/url"
)

// RequestsByRoute counts the requests received so far per route, those
// answered through a fault included; a request that matched no route is not
// counted. Unlike Requests it copies no bodies, so a test can poll it often:
// a chaos test paces its Inject calls by requests rather than by time, so
// that a fault meets a request and seldom its retry too.
func (s *Server) RequestsByRoute() map[Route]int {
	type line struct{ method, path, query string }
	s.mu.Lock()
	lines := make([]line, len(s.requests))
	for i, r := range s.requests {
		lines[i] = line{r.Method, r.Path, r.Query}
	}
	s.mu.Unlock()
	out := map[Route]int{}
	for _, l := range lines {
		r := &http.Request{Method: l.method, URL: &url.URL{Path: l.path, RawQuery: l.query}}
		if ep, ok := s.match(r); ok {
			out[ep.route]++
		}
	}
	return out
}

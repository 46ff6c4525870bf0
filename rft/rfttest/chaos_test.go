package rfttest

import (
	"maps"
	"net/http"
	"testing"
)

func TestRequestsByRouteCountsEveryRequestOfARouteFaultedOrNotAndNothingUnrouted(t *testing.T) {
	s, c := start(t, Options{})
	id := c.createRun()
	s.Inject(RouteMetrics, Fault{Status: http.StatusServiceUnavailable})
	metrics := `{"run_id":"` + id + `","metrics":{"step":1,"loss":1}}`
	wantStatus(t, "faulted metrics", c.post("/rft/metrics", metrics), http.StatusServiceUnavailable)
	wantStatus(t, "metrics", c.post("/rft/metrics", metrics), http.StatusOK)
	_, put := c.upload(id, 2, "PAR1")
	wantStatus(t, "put", put, http.StatusOK)
	wantStatus(t, "unknown route", c.post("/rft/nowhere", `{}`), http.StatusNotFound)

	want := map[Route]int{RouteCreate: 1, RouteMetrics: 2, RoutePresign: 1, RoutePut: 1}
	if got := s.RequestsByRoute(); !maps.Equal(got, want) {
		t.Errorf("RequestsByRoute() = %v, want %v", got, want)
	}
}

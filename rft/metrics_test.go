package rft

import (
	"context"
	"math"
	"strings"
	"testing"
)

func TestPostMetricsSendsTheRunAndOneFlatObjectWithTheStep(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200, body: `{"data":{"status":"success"}}`}))
	c, _ := newTestClient(t, srv.URL)
	err := c.PostMetrics(context.Background(), "run-abc", map[string]float64{"step": 10, "loss": 0.25, "reward/mean": 0.5})
	if err != nil {
		t.Fatal(err)
	}
	r := srv.requests()[0]
	jsonEqual(t, r.Body, `{"run_id":"run-abc","metrics":{"step":10,"loss":0.25,"reward/mean":0.5}}`)
	// A whole step is an integer literal, not 10.0 or 1e1.
	if !strings.Contains(string(r.Body), `"step":10`) {
		t.Errorf("body %s", r.Body)
	}
}

func TestPostMetricsSendsAnEmptyObjectRatherThanNull(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200}))
	c, _ := newTestClient(t, srv.URL)
	if err := c.PostMetrics(context.Background(), "run-abc", nil); err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, srv.requests()[0].Body, `{"run_id":"run-abc","metrics":{}}`)
}

func TestPostMetricsRefusesNonFiniteValuesNamingThemAndSendsNothing(t *testing.T) {
	srv := newFakeServer(t, always(reply{status: 200}))
	c, _ := newTestClient(t, srv.URL)
	err := c.PostMetrics(context.Background(), "run-abc", map[string]float64{
		"step": 3, "loss": math.NaN(), "grad/norm": math.Inf(1), "kl": math.Inf(-1), "reward": 1,
	})
	e := mustError(t, err)
	if len(srv.requests()) != 0 {
		t.Fatalf("%d requests were sent", len(srv.requests()))
	}
	if e.Class != ClassRejected || !e.Permanent() || e.Op != opPostMetrics {
		t.Errorf("got %#v", e)
	}
	if !strings.Contains(e.Message, "grad/norm, kl, loss") || strings.Contains(e.Message, "reward") {
		t.Errorf("message %q does not name exactly the non-finite keys", e.Message)
	}
}

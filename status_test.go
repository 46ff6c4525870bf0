package primeexporter

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
)

// seen is what a host heard, as "status" or "status: error".
func (h *statusHost) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.events {
		s := e.Status().String()
		if e.Err() != nil {
			s += ": " + e.Err().Error()
		}
		out = append(out, s)
	}
	return out
}

func TestEveryPipelinesHostHearsTheStatusAndALateOneHearsTheErrorSoFar(t *testing.T) {
	s := newStatus()
	metrics, logs := &statusHost{Host: componenttest.NewNopHost()}, &statusHost{Host: componenttest.NewNopHost()}
	s.attach(metrics)
	s.set("platform API", errors.New("503"))
	s.attach(logs)
	s.set("platform API", nil)

	want := []string{"StatusRecoverableError: platform API: 503", "StatusOK"}
	assert.Equal(t, want, metrics.seen())
	assert.Equal(t, want, logs.seen())
}

func TestOneServiceRecoveringDoesNotHideAnothersOutage(t *testing.T) {
	s := newStatus()
	h := &statusHost{Host: componenttest.NewNopHost()}
	s.attach(h)
	s.set(statusRunRegistry, errors.New("redis down"))
	s.set("platform API", errors.New("503"))
	s.set(statusRunRegistry, errors.New("redis down")) // again: nothing new
	s.set(statusRunRegistry, nil)
	s.set("object storage", nil) // never failed: nothing new
	s.set("platform API", nil)

	assert.Equal(t, []string{
		"StatusRecoverableError: run registry: redis down",
		"StatusRecoverableError: run registry: redis down\nplatform API: 503",
		"StatusRecoverableError: platform API: 503",
		"StatusOK",
	}, h.seen())
}

func TestARefusedKeyIsTheLastStatusAndReachesEveryHost(t *testing.T) {
	s := newStatus()
	metrics, logs := &statusHost{Host: componenttest.NewNopHost()}, &statusHost{Host: componenttest.NewNopHost()}
	s.attach(metrics)
	s.attach(logs)
	componentstatus.ReportStatus(s.host(componenttest.NewNopHost()), componentstatus.NewPermanentErrorEvent(errors.New("refused")))
	s.set("platform API", errors.New("503"))
	s.set("platform API", nil)

	require.Equal(t, []string{"StatusPermanentError: refused"}, metrics.seen())
	assert.Equal(t, metrics.seen(), logs.seen())
}

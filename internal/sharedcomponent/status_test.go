package sharedcomponent

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
)

// statusHost records the component statuses reported to it, as a health
// check extension would see them.
type statusHost struct {
	component.Host
	mu     sync.Mutex
	events []*componentstatus.Event
}

func newStatusHost() *statusHost { return &statusHost{Host: componenttest.NewNopHost()} }

func (h *statusHost) Report(e *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

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
	metrics, logs := newStatusHost(), newStatusHost()
	s.attach(metrics)
	s.Set("platform API", errors.New("503"))
	s.attach(logs)
	s.Set("platform API", nil)

	want := []string{"StatusRecoverableError: platform API: 503", "StatusOK"}
	assert.Equal(t, want, metrics.seen())
	assert.Equal(t, want, logs.seen())
}

func TestOneServiceRecoveringDoesNotHideAnothersOutage(t *testing.T) {
	s := newStatus()
	h := newStatusHost()
	s.attach(h)
	registry := s.Health("run registry")
	registry(errors.New("redis down"))
	s.Set("platform API", errors.New("503"))
	registry(errors.New("redis down")) // again: nothing new
	registry(nil)
	s.Set("object storage", nil) // never failed: nothing new
	s.Set("platform API", nil)

	assert.Equal(t, []string{
		"StatusRecoverableError: run registry: redis down",
		"StatusRecoverableError: run registry: redis down\nplatform API: 503",
		"StatusRecoverableError: platform API: 503",
		"StatusOK",
	}, h.seen())
}

func TestARefusedKeyIsTheLastStatusAndReachesEveryHost(t *testing.T) {
	s := newStatus()
	metrics, logs := newStatusHost(), newStatusHost()
	s.attach(metrics)
	s.attach(logs)
	componentstatus.ReportStatus(s.host(componenttest.NewNopHost()), componentstatus.NewPermanentErrorEvent(errors.New("refused")))
	s.Set("platform API", errors.New("503"))
	s.Set("platform API", nil)

	require.Equal(t, []string{"StatusPermanentError: refused"}, metrics.seen())
	assert.Equal(t, metrics.seen(), logs.seen())
}

func TestAHostThatCannotHearStatusesIsLeftOut(t *testing.T) {
	s := newStatus()
	s.attach(componenttest.NewNopHost())
	h := newStatusHost()
	s.attach(h)
	s.Set("platform API", errors.New("503"))
	assert.Equal(t, []string{"StatusRecoverableError: platform API: 503"}, h.seen())
}

package primeexporter

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
)

// Sources of the exporter's component status, named as the operator knows
// them. The outage watches name theirs ("platform API", "object storage",
// "Prime Traces").
const statusRunRegistry = "run registry"

// status is the exporter's component status, which a health check
// (healthcheckv2 with component_health) reads. Two things make it more
// than a call to componentstatus.ReportStatus:
//   - One exporter serves both pipelines, and the collector gives each
//     pipeline's instance its own host. Every host that started the
//     exporter hears every event, and a host that starts later hears the
//     last one (contrib's sharedcomponent does the same).
//   - Several services fail apart: the platform API, object storage, Prime
//     Traces, the run registry (Redis or the storage extension). The status
//     is RecoverableError while any of them fails, naming all that do, and
//     OK once none does; one service recovering does not hide another's
//     outage.
//
// A refused API key is a PermanentError, and final: the collector accepts
// no other status after it.
type status struct {
	mu        sync.Mutex
	hosts     []componentstatus.Reporter
	last      *componentstatus.Event // nil until the first report
	failing   map[string]error       // by source
	order     []string               // failing sources, in the order they began
	permanent bool
}

func newStatus() *status { return &status{failing: map[string]error{}} }

// attach adds a starting pipeline's host, and tells it the last event if
// that was an error (the collector reports OK itself once Start returns).
func (s *status) attach(host component.Host) {
	r, ok := host.(componentstatus.Reporter)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts = append(s.hosts, r)
	if s.last != nil && s.last.Status() != componentstatus.StatusOK {
		r.Report(s.last)
	}
}

// health is the callback of one source: err while it fails, nil once it
// answers.
func (s *status) health(source string) func(error) {
	return func(err error) { s.set(source, err) }
}

// set records whether source fails (err) or answers (nil), and reports the
// status if that changed it.
func (s *status) set(source string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, was := s.failing[source]
	switch {
	case err != nil:
		s.failing[source] = err
		if !was {
			s.order = append(s.order, source)
		}
	case was:
		delete(s.failing, source)
		s.order = slices.DeleteFunc(s.order, func(o string) bool { return o == source })
	default:
		return // it answered, as before
	}
	ev := componentstatus.NewEvent(componentstatus.StatusOK)
	if len(s.order) > 0 {
		errs := make([]error, len(s.order))
		for i, o := range s.order {
			errs[i] = fmt.Errorf("%s: %w", o, s.failing[o])
		}
		ev = componentstatus.NewRecoverableErrorEvent(errors.Join(errs...))
	}
	if s.last != nil && s.last.Status() == ev.Status() && errString(s.last.Err()) == errString(ev.Err()) {
		return // the same failure again: nothing new to tell
	}
	s.reportLocked(ev)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Report makes status a componentstatus.Reporter, for the code that
// reports through a host (see host): a PermanentError is final.
func (s *status) Report(ev *componentstatus.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reportLocked(ev)
}

func (s *status) reportLocked(ev *componentstatus.Event) {
	if s.permanent {
		return
	}
	s.permanent = ev.Status() == componentstatus.StatusPermanentError
	s.last = ev
	for _, r := range s.hosts {
		r.Report(ev)
	}
}

// host is h with its status reports going through s, for the platform
// backend: its refused key then reaches every pipeline's host.
func (s *status) host(h component.Host) component.Host { return reportingHost{h, s} }

type reportingHost struct {
	component.Host
	s *status
}

func (h reportingHost) Report(ev *componentstatus.Event) { h.s.Report(ev) }

var _ componentstatus.Reporter = reportingHost{}

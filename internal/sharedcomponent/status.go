package sharedcomponent

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
)

// Status is the component status of a shared instance, which a health
// check (healthcheckv2 with component_health) reads. Two things make it
// more than a call to componentstatus.ReportStatus:
//   - The collector gives each pipeline's component its own host. Every
//     host that started the instance hears every event, and a host that
//     starts later hears the last one if it was an error (the collector
//     reports OK itself once Start returns).
//   - Several sources fail apart (for the prime exporter: the platform
//     API, object storage, Prime Traces, the run registry). The status is
//     RecoverableError while any of them fails, naming all that do, and OK
//     once none does; one source recovering does not hide another's
//     outage.
//
// A PermanentError, reported through the instance's host, is final: the
// collector accepts no other status after it.
type Status struct {
	mu        sync.Mutex
	hosts     []componentstatus.Reporter
	last      *componentstatus.Event // nil until the first report
	failing   map[string]error       // by source
	order     []string               // failing sources, in the order they began
	permanent bool
}

func newStatus() *Status { return &Status{failing: map[string]error{}} }

// attach adds a starting pipeline's host, and tells it the last event if
// that was an error.
func (s *Status) attach(host component.Host) {
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

// Health is the callback of one source: err while it fails, nil once it
// answers.
func (s *Status) Health(source string) func(error) {
	return func(err error) { s.Set(source, err) }
}

// Set records whether source fails (err) or answers (nil), and reports the
// status if that changed it.
func (s *Status) Set(source string, err error) {
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

// Report makes Status a componentstatus.Reporter, for the events the
// instance reports through its host: a PermanentError is final.
func (s *Status) Report(ev *componentstatus.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reportLocked(ev)
}

func (s *Status) reportLocked(ev *componentstatus.Event) {
	if s.permanent {
		return
	}
	s.permanent = ev.Status() == componentstatus.StatusPermanentError
	s.last = ev
	for _, r := range s.hosts {
		r.Report(ev)
	}
}

// host is h with its status reports going through s: the host the
// instance starts on, so that what it reports reaches every pipeline's
// host.
func (s *Status) host(h component.Host) component.Host { return reportingHost{h, s} }

type reportingHost struct {
	component.Host
	s *Status
}

func (h reportingHost) Report(ev *componentstatus.Event) { h.s.Report(ev) }

var (
	_ componentstatus.Reporter = (*Status)(nil)
	_ componentstatus.Reporter = reportingHost{}
)

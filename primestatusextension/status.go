package primestatusextension

import (
	"context"
	"fmt"
	"net/url"
)

// Path is the status route.
const Path = "/prime/v1/runs/status"

// States of a run in a status answer.
const (
	StateUnknown  = "unknown"  // no run for this identity here (yet)
	StatePending  = "pending"  // known; its create not answered yet
	StateRunning  = "running"  // created or attached: id and url are set
	StateClosing  = "closing"  // its end received; the close-out under way
	StateClosed   = "closed"   // closed out; status says how
	StateRefused  = "refused"  // its create was refused for good; reason and error say why
	StateDisabled = "disabled" // the exporter is in mode: disabled
	// StateUnavailable is the agent tier's 502: no gateway answered.
	StateUnavailable = "unavailable"
)

// Run kinds.
const (
	KindTrain = "train"
	KindEval  = "eval"
)

// Query names a run as its trainer knows it: by key or by platform id.
type Query struct {
	Kind string // train or eval
	Key  string
	ID   string
}

// Status is the route's answer; empty fields are left out.
type Status struct {
	State string `json:"state"`
	Kind  string `json:"kind,omitempty"`
	// ID is the platform's run id, or offline the run's offline id.
	ID string `json:"id,omitempty"`
	// URL is the run's dashboard, or offline its directory.
	URL string `json:"url,omitempty"`
	// Directory is an offline run's directory (absolute).
	Directory string `json:"directory,omitempty"`
	// Status is a closed run's: completed, failed, cancelled, crashed.
	Status string `json:"status,omitempty"`
	// Reason is a refused run's reason code (unauthorized, no_team,
	// forbidden, run_refused); Error the platform's message or the
	// exporter's explanation, and the 400s' and 502's message.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Source answers for the runs of one exporter. RunStatus must not block
// for long: it is asked on the request's context.
type Source interface {
	RunStatus(ctx context.Context, q Query) Status
}

// parseQuery reads the route's query: kind (train, the default, or eval)
// and exactly one of key and id. An error names the parameter.
func parseQuery(values url.Values) (Query, error) {
	q := Query{Kind: KindTrain}
	for name, vs := range values {
		if len(vs) != 1 {
			return Query{}, fmt.Errorf("parameter %s is given %d times; give it once", name, len(vs))
		}
		switch v := vs[0]; name {
		case "kind":
			if v != KindTrain && v != KindEval {
				return Query{}, fmt.Errorf("parameter kind must be train or eval, got %q", v)
			}
			q.Kind = v
		case "key":
			if v == "" {
				return Query{}, fmt.Errorf("parameter key is empty")
			}
			q.Key = v
		case "id":
			if v == "" {
				return Query{}, fmt.Errorf("parameter id is empty")
			}
			q.ID = v
		default:
			return Query{}, fmt.Errorf("unknown parameter %q: the route takes kind, and key or id", name)
		}
	}
	switch {
	case q.Key != "" && q.ID != "":
		return Query{}, fmt.Errorf("parameters key and id are exclusive: give one")
	case q.Key == "" && q.ID == "":
		return Query{}, fmt.Errorf("parameter key or id is required: the run's prime.run.key, or its platform id")
	}
	return q, nil
}

// values is the query as the route takes it, for asking a gateway.
func (q Query) values() url.Values {
	v := url.Values{"kind": {q.Kind}}
	if q.Key != "" {
		v.Set("key", q.Key)
	} else {
		v.Set("id", q.ID)
	}
	return v
}

package runs

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pvalue"
)

// Run statuses a trainer can report in prime.run.end.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusCrashed   = "crashed"

	attrRunStatus = "prime.run.status"
	attrRunError  = "prime.run.error"
)

// End is what a run is closed out with.
type End struct {
	Status string
	Reason string
}

// ParseEnd reads prime.run.end's attributes. An unknown status still closes
// the run (as failed, naming the status): losing the close-out over a typo
// would leave the run open on the platform for good. The error says what
// was wrong, for a warning.
func ParseEnd(attrs pcommon.Map) (End, error) {
	end := End{Status: StatusCompleted}
	if v, ok := attrs.Get(attrRunError); ok {
		end.Reason = v.AsString()
	}
	v, ok := attrs.Get(attrRunStatus)
	if !ok {
		return end, nil
	}
	s, isStr := pvalue.String(v)
	switch {
	case !isStr:
		end.Status, end.Reason = StatusFailed, joinReason("prime.run.status of type "+pvalue.TypeName(v), end.Reason)
		return end, fmt.Errorf("attribute %s must be a string, got %s", attrRunStatus, pvalue.TypeName(v))
	case s == StatusCompleted || s == StatusFailed || s == StatusCancelled || s == StatusCrashed:
		end.Status = s
		return end, nil
	default:
		end.Status, end.Reason = StatusFailed, joinReason("unknown status "+s, end.Reason)
		return end, fmt.Errorf("attribute %s %q is not completed, failed, cancelled or crashed", attrRunStatus, s)
	}
}

func joinReason(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// statusMessage is the status route's error_message: the API only knows
// completed and failed, so the finer reason leads the message.
func (e End) statusMessage() string {
	switch e.Status {
	case StatusCancelled, StatusCrashed:
		return joinReason(e.Status, e.Reason)
	case StatusFailed:
		if e.Reason == "" {
			return StatusFailed
		}
		return e.Reason
	}
	return ""
}

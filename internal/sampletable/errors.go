package sampletable

import "fmt"

// Reason codes of a Rejection. The root package counts and logs by them
// (once per run and reason), so they are part of the exporter's
// self-telemetry and do not change lightly.
const (
	// ReasonNoStep: the record has no prime.work.step attribute.
	ReasonNoStep = "no_step"
	// ReasonBadStep: prime.work.step is not an int (a string, a fractional
	// double, …).
	ReasonBadStep = "bad_step"
	// ReasonBadWorkType: prime.work.type is neither "train" nor "eval".
	ReasonBadWorkType = "bad_work_type"
	// ReasonBadBody: the body is neither a map nor text, or it is text that
	// starts like a JSON object but does not parse.
	ReasonBadBody = "bad_body"
	// ReasonBadValue: a column's value does not fit the column's type (a map
	// reward, a string problem_id, a trajectory that is not a list of maps).
	ReasonBadValue = "bad_value"
)

// Rejection is a prime.episode record that cannot become a row. It names
// the attribute or body key concerned and the type found there.
type Rejection struct {
	Reason string // one of the Reason* constants
	// Field is the attribute ("prime.work.step", "prime.episode.reward") or
	// body key ("body.reward"; "body" for the body itself) concerned.
	Field string
	msg   string
}

func (r *Rejection) Error() string { return "prime.episode: " + r.msg }

func reject(reason, field, format string, args ...any) *Rejection {
	return &Rejection{Reason: reason, Field: field, msg: fmt.Sprintf(format, args...)}
}

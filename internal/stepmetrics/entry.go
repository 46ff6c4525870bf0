package stepmetrics

import "fmt"

// Reason codes of a Rejection. The root package counts and logs by them, so
// they are part of the exporter's self-telemetry and do not change lightly.
const (
	// ReasonNoStep: a data point has no prime.step attribute and the step
	// metric reported nothing at its timestamp; a prime.metrics event has no
	// prime.step attribute.
	ReasonNoStep = "no_step"
	// ReasonBadStep: the step is there but is not an integer (a string, a
	// fractional double, …), or the step metric disagrees with itself.
	ReasonBadStep = "bad_step"
	// ReasonNonFinite: NaN or ±Inf, which JSON cannot carry (rft-api.md).
	ReasonNonFinite = "non_finite"
	// ReasonBadValue: a prime.metrics attribute or body value that is not a
	// number, or a body that looks like JSON but does not parse.
	ReasonBadValue = "bad_value"
	// ReasonNoValues: a prime.metrics event that carries no values at all.
	ReasonNoValues = "no_values"
)

// Options are the settings of the mapping that come from the exporter's config.
type Options struct {
	// StepMetric names the gauge or sum whose value gives the step of a point
	// that has no prime.step attribute (config `metrics.step_metric`, default
	// "step"). Empty turns that fallback off.
	StepMetric string
}

// Entry is one name → value of one step's metrics post.
type Entry struct {
	Step  int64
	Key   string
	Value float64
}

// Rejection is one data point (or event, or derived value) that cannot be
// sent, with a reason code and a message naming the metric or attribute.
type Rejection struct {
	Reason string // one of the Reason* constants
	Metric string // the metric name, entry key or attribute concerned
	Err    error
}

func reject(reason, metric, format string, args ...any) Rejection {
	return Rejection{Reason: reason, Metric: metric, Err: fmt.Errorf(format, args...)}
}

package stepmetrics

// Options are the settings of the mapping that come from the exporter's config.
type Options struct {
	// StepMetric names the gauge or sum whose value gives the step of a point
	// that has no prime.step attribute (config `metrics.step_metric`, default
	// "step"). Empty turns that fallback off.
	StepMetric string
	// Stepless reads an evaluation's points, which have no steps: every
	// point's values are entries of step 0, whatever its attributes say,
	// and the step metric is a value like any other.
	Stepless bool
}

// Entry is one name → value of one step's metrics post.
type Entry struct {
	Step  int64
	Key   string
	Value float64
}

package stepmetrics

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

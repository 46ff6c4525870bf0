package stepmetrics

import "go.opentelemetry.io/collector/pdata/pcommon"

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

// Entry is one name → value of one metrics row: a step's, or, for a
// training point or event that had no step at all, the row of its time
// (TimeKeyed).
type Entry struct {
	Step  int64 // 0 when TimeKeyed
	Key   string
	Value float64
	// Time is when the point or event was recorded (0: not known). A step
	// row's post carries its entries' newest Time as _timestamp; a
	// time-keyed entry's row is its Time, never 0.
	Time      pcommon.Timestamp
	TimeKeyed bool
}

// Row is the row the entry belongs to.
func (e Entry) Row() Row {
	if e.TimeKeyed {
		return Row{Time: e.Time}
	}
	return Row{Step: e.Step}
}

// Row names one metrics row, and so one post: a step's, Row{Step: s}, or
// a time's, Row{Time: t}, for training data that had no step at all. A
// time row's Time is never 0, so Time tells the two apart.
type Row struct {
	Step int64
	Time pcommon.Timestamp
}

// TimeKeyed tells a time's row from a step's.
func (r Row) TimeKeyed() bool { return r.Time != 0 }

package sampletable

// This file gives an evaluation run's prime.episode bodies their v0
// samples (evals-api.md "Samples"): the rows the platform SDK's
// build_samples writes (prime_runs/projection.py), projected by the same
// walk as the table's rows. The eval mapping itself, rollout numbers and
// the run's summary are package evalsample's.

// V0Episode is a native document projected for an evaluation run: its v0
// samples, and what each of its traces tells the run's summary.
type V0Episode struct {
	// Samples are the v0 samples as compact JSON: one, with the document
	// in info.native_wrapper; one per trace when that one would not fit a
	// samples request; none for a document without traces.
	Samples []string
	// PerTrace tells the fallback to one sample per trace.
	PerTrace bool
	// OK is the episode's ok (false unless it is true).
	OK bool
	// Traces are the values of every trace, in order.
	Traces []TraceValues
	// Document is the record as compact JSON.
	Document string
}

// TraceValues is what one trace tells an evaluation's summary
// (prime_runs/metrics.py from_episodes).
type TraceValues struct {
	// Trainable is agent.trainable being true.
	Trainable bool
	// Reward is the sum of score × weight over the non-null rewards; NaN
	// or ±Inf when a score or weight is (JSON null is NaN there).
	Reward float64
	// Scores are the non-null rewards' scores, in order.
	Scores []NamedValue
	// Metrics are the metrics that are numbers, in order; null ones are
	// left out.
	Metrics []NamedValue
}

// NamedValue is a named number.
type NamedValue struct {
	Name  string
	Value float64
}

// ProjectV0 projects a native document to its v0 samples, as build_samples
// does. rolloutNumber is asked once, with the summary trace's example_id
// (its task.data.idx as JSON text, "null" when it has none), for the
// episode's rollout_number, after that trace has been projected; it is
// not asked for a document without traces. Every trace's rewards are
// checked, since the summary reads them all; the rest of a trace is
// checked when its sample is written. ProjectV0 of an object that is not a
// native document gives nothing.
func (b EvalBody) ProjectV0(rolloutNumber func(exampleID string) int64) (V0Episode, error) {
	if b.doc == nil {
		return V0Episode{}, nil
	}
	return b.doc.projectV0(rolloutNumber, maxSampleBytes)
}

// projectV0 takes the sample limit of the per-trace fallback, so that
// tests need not build 25 MiB documents to reach it.
func (d *document) projectV0(rolloutNumber func(string) int64, sampleLimit int) (V0Episode, error) {
	ep := V0Episode{OK: d.ok.isTrue(), Document: d.text}
	traces, err := readTraces(d.traces, nil)
	if err != nil {
		return V0Episode{}, err
	}
	ep.Traces = make([]TraceValues, len(traces))
	for i := range traces {
		if ep.Traces[i], err = traces[i].values(); err != nil {
			return V0Episode{}, err
		}
	}
	if len(traces) == 0 {
		return ep, nil
	}
	s := summaryIndex(traces)
	sum := &traces[s]
	if err := sum.checkInfo(); err != nil {
		return V0Episode{}, err
	}
	parts, err := sum.v0Parts()
	if err != nil {
		return V0Episode{}, err
	}
	n := rolloutNumber(sum.task.pick("data").pick("idx").orNull().json())
	sample := d.v0Sample(sum, &parts, n, d.id, sum.infoWithWrapper(nil, d.text))
	if sampleEnvelopeBytes+len(sample) <= sampleLimit {
		ep.Samples = []string{sample}
		return ep, nil
	}
	// The SDK's fallback: every trace its own sample, with its own info
	// and its own id, all of the episode's rollout number.
	ep.PerTrace = true
	ep.Samples = make([]string, 0, len(traces))
	for i := range traces {
		tr, p := &traces[i], parts
		if i != s {
			if err := tr.checkInfo(); err != nil {
				return V0Episode{}, err
			}
			if p, err = tr.v0Parts(); err != nil {
				return V0Episode{}, err
			}
		}
		ep.Samples = append(ep.Samples, d.v0Sample(tr, &p, n, tr.id, tr.ownInfo()))
	}
	return ep, nil
}

// values is what the trace tells the summary.
func (t *trace) values() (TraceValues, error) {
	reward, err := t.reward() // checks every reward's shape
	if err != nil {
		return TraceValues{}, err
	}
	tv := TraceValues{Trainable: t.trainable(), Reward: reward}
	_, _ = t.rewards.forMembers(func(name string, r value) error {
		if r.isNull() {
			return nil
		}
		score := value{raw: "null"}
		_, _ = r.forMembers(func(k string, v value) error {
			if k == "score" {
				score = v
			}
			return nil
		})
		x, _ := rewardNumber(score)
		tv.Scores = append(tv.Scores, NamedValue{name, x})
		return nil
	})
	_, _ = t.metrics.forMembers(func(name string, v value) error {
		if x, ok := v.float(); ok {
			tv.Metrics = append(tv.Metrics, NamedValue{name, x})
		}
		return nil
	})
	return tv, nil
}

// v0Parts is what a trace gives its v0 sample beyond what it reads as it
// writes it.
type v0Parts struct {
	row        traceRow
	truncated  bool
	tokenUsage string
}

func (t *trace) v0Parts() (v0Parts, error) {
	var p v0Parts
	var err error
	if p.row, err = t.project(nil, nil, false); err != nil {
		return v0Parts{}, err
	}
	if p.truncated, p.tokenUsage, err = t.calledValues(); err != nil {
		return v0Parts{}, err
	}
	if s, ok := t.stopCondition.str(); ok && truncatingStops[s] {
		p.truncated = true
	}
	return p, nil
}

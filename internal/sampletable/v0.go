package sampletable

import (
	"errors"
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/jsonscan"
	"github.com/primeintellect/primeexporter/internal/pjson"
	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// This file gives an evaluation run's prime.episode bodies their v0
// samples (evals-api.md "Samples"): the rows the platform SDK's
// build_samples writes (prime_runs/projection.py), projected by the same
// walk as the table's rows. The eval mapping itself, rollout numbers and
// the run's summary are package evalsample's.

// EvalBody is the body of a prime.episode record of an evaluation run,
// read: a native document, or any other JSON object.
type EvalBody struct {
	doc    *document
	object string
}

// ReadEvalBody reads the body of an evaluation's prime.episode record: a
// map, or a string holding a JSON object (Python's NaN and ±Infinity taken
// as null). A body with a top-level traces list is a native document; any
// other object is kept as compact JSON, key order and numbers as sent,
// NaN and ±Inf as null. Anything else (no body, other text, another type)
// is a *reject.Rejection (reject.BadBody): an evaluation's episode has no
// columns in attributes, so a body that is not an object holds no sample.
func ReadEvalBody(v pcommon.Value) (EvalBody, error) {
	var b body
	switch v.Type() {
	case pcommon.ValueTypeMap:
		b = body{v: v, m: v.Map(), hasMap: true}
	case pcommon.ValueTypeStr:
		s := v.Str()
		if jsonscan.FirstNonSpace(s) != '{' {
			return EvalBody{}, rejection(reject.BadBody, bodyField, "an evaluation's episode body must be a map or a string holding a JSON object, got text that is not one")
		}
		s = validText(s)
		var err error
		if b, err = objectBody(s); err != nil {
			py, changed := jsonscan.Rewrite(s, false, true)
			if !changed {
				return EvalBody{}, rejection(reject.BadBody, bodyField, "body looks like a JSON object but does not parse: %v", err)
			}
			if b, err = objectBody(py); err != nil {
				return EvalBody{}, rejection(reject.BadBody, bodyField, "body looks like a JSON object but does not parse: %v", err)
			}
		}
	default:
		return EvalBody{}, rejection(reject.BadBody, bodyField, "an evaluation's episode body must be a map or a string holding a JSON object, got %s", pvalue.TypeName(v))
	}
	if b.isDocument() {
		d := readDocument(b)
		return EvalBody{doc: &d}, nil
	}
	if b.hasMap {
		return EvalBody{object: pjson.Encode(b.v)}, nil
	}
	text, _ := jsonscan.Rewrite(b.text, true, false)
	return EvalBody{object: text}, nil
}

// IsDocument tells a native document.
func (b EvalBody) IsDocument() bool { return b.doc != nil }

// Object is a body that is not a native document, as compact JSON text;
// "" for a native document.
func (b EvalBody) Object() string { return b.object }

// EachMember calls fn with every member of the JSON object text object, in
// order, its key decoded and its value as JSON text, until fn returns
// false. It calls nothing for text that is not one JSON object.
func EachMember(object string, fn func(key, value string) bool) {
	stop := errors.New("stop")
	_ = jsonscan.EachMember(object, func(k, v string) error {
		if !fn(jsonscan.Unquote(k), v) {
			return stop
		}
		return nil
	})
}

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
	traces, err := readTraces(d.traces)
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
	sample := d.v0Sample(sum, &parts, n, d.id, sum.infoWithWrapper(d.text))
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
	if p.row, err = t.project(nil, false); err != nil {
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

// truncatingStops are the stop conditions verifiers' Trace.is_truncated
// takes for a truncation: framework limits and failed compaction.
var truncatingStops = map[string]bool{"max_turns": true, "max_input_tokens": true, "max_output_tokens": true,
	"max_total_tokens": true, "compaction_failed": true}

// calledValues reads the trace's calls for its sample: whether the last
// call without an error finished for length (Trace.is_truncated), and the
// usage summed over the calls that have one (Trace.usage, Usage.aggregate:
// the optional counts and cost summed over the calls that report them,
// absent when none does); usage is "null" when no call has one.
func (t *trace) calledValues() (lengthStop bool, usage string, err error) {
	var (
		errV, finish, use optValue
		sums              [4]int64 // prompt, completion, cached, reasoning
		reported          [4]bool
		cost              pySum
		hasCost, hasUsage bool
	)
	keys := [4]string{"prompt_tokens", "completion_tokens", "cached_input_tokens", "reasoning_tokens"}
	isList, err := t.calls.forMapElements(func(k string, v value) error {
		switch k {
		case "error":
			errV = opt(v)
		case "finish_reason":
			finish = opt(v)
		case "usage":
			use = opt(v)
		}
		return nil
	}, func(i int) error {
		defer func() { errV, finish, use = optValue{}, optValue{}, optValue{} }()
		if !errV.ok {
			s, ok := finish.str()
			lengthStop = ok && s == "length"
		}
		if !use.ok {
			return nil
		}
		hasUsage = true
		var counts [4]optValue
		var c optValue
		if isMap, _ := use.forMembers(func(k string, v value) error {
			for j, key := range keys {
				if k == key {
					counts[j] = opt(v)
				}
			}
			if k == "cost" {
				c = opt(v)
			}
			return nil
		}); !isMap {
			return docMisfit(t.path("calls["+strconv.Itoa(i)+"].usage"), use.value, "a map")
		}
		for j, n := range counts {
			if !n.ok {
				continue
			}
			x, ok := n.int()
			if !ok {
				return docMisfit(t.path("calls["+strconv.Itoa(i)+"].usage."+keys[j]), n.value, "an int")
			}
			sums[j] += x
			reported[j] = true
		}
		if c.ok {
			x, ok := c.float()
			if !ok {
				return docMisfit(t.path("calls["+strconv.Itoa(i)+"].usage.cost"), c.value, "a number")
			}
			cost.add(x)
			hasCost = true
		}
		return nil
	}, func(i int, v value) error {
		return docMisfit(t.path("calls["+strconv.Itoa(i)+"]"), v, "a map")
	})
	if err != nil {
		return false, "", err
	}
	if !isList && t.calls.ok {
		return false, "", docMisfit(t.path("calls"), t.calls.value, "a list")
	}
	if !hasUsage {
		return lengthStop, "null", nil
	}
	var sb pjson.Buffer
	var scratch [32]byte
	sb.WriteByte('{')
	for j, key := range keys {
		if j >= 2 && !reported[j] { // prompt and completion counts are always there
			continue
		}
		if j > 0 {
			sb.WriteByte(',')
		}
		pjson.WriteString(&sb, key)
		sb.WriteByte(':')
		sb.Write(strconv.AppendInt(scratch[:0], sums[j], 10))
	}
	if hasCost {
		sb.WriteString(`,"cost":`)
		sb.Write(pjson.AppendFloat(scratch[:0], cost.value()))
	}
	sb.WriteByte('}')
	return lengthStop, sb.String(), nil
}

// v0Keys are the keys of a v0 sample, in the SDK's order; a sub-reward of
// one of these names is not flattened (the SDK's setdefault).
var v0Keys = map[string]bool{"sample_id": true, "example_id": true, "rollout_number": true, "episode_id": true,
	"agent": true, "trainable": true, "task": true, "prompt": true, "completion": true, "answer": true,
	"tool_defs": true, "reward": true, "timing": true, "is_completed": true, "is_truncated": true,
	"metrics": true, "error": true, "stop_condition": true, "trajectory": true, "token_usage": true, "info": true}

// v0Sample writes a trace's v0 sample (projection.py trace_to_sample): the
// SDK's keys in its order, then each non-null sub-reward's score under
// its own name unless that name is taken. A key the document leaves out
// is null.
func (d *document) v0Sample(t *trace, p *v0Parts, rollout int64, sampleID optValue, info string) string {
	var sb pjson.Buffer
	sb.Grow(len(info) + len(p.row.trajectory) + len(p.row.completion) + t.task.orNull().jsonSize() + t.timing.orNull().jsonSize() +
		t.metrics.orNull().jsonSize() + t.tools.orNull().jsonSize() + 512)
	n := 0
	key := func(k string) {
		if n > 0 {
			sb.WriteByte(',')
		}
		n++
		pjson.WriteString(&sb, k)
		sb.WriteByte(':')
	}
	text := func(s *string, empty string) {
		if s == nil || *s == "" {
			sb.WriteString(empty)
			return
		}
		sb.WriteString(*s)
	}
	var scratch [32]byte
	data := t.task.pick("data")

	sb.WriteByte('{')
	key("sample_id")
	sampleID.orNull().writeJSON(&sb)
	key("example_id")
	data.pick("idx").orNull().writeJSON(&sb)
	key("rollout_number")
	sb.Write(strconv.AppendInt(scratch[:0], rollout, 10))
	key("episode_id")
	d.id.orNull().writeJSON(&sb)
	key("agent")
	t.agent.pick("name").orNull().writeJSON(&sb)
	key("trainable")
	t.agent.pick("trainable").orNull().writeJSON(&sb)
	key("task")
	text(p.row.task, "null")
	key("prompt")
	sb.WriteString("[]")
	key("completion")
	text(&p.row.completion, "[]")
	key("answer")
	data.pick("answer").orNull().writeJSON(&sb)
	key("tool_defs")
	if isEmpty(t.tools) {
		sb.WriteString("null")
	} else {
		t.tools.writeJSON(&sb)
	}
	key("reward")
	if p.row.reward == nil {
		sb.WriteString("null")
	} else {
		sb.Write(pjson.AppendFloat(scratch[:0], *p.row.reward))
	}
	key("timing")
	text(p.row.timing, "null")
	key("is_completed")
	t.isCompleted.orNull().writeJSON(&sb)
	key("is_truncated")
	sb.WriteString(strconv.FormatBool(p.truncated))
	key("metrics")
	text(&p.row.metrics, "{}")
	key("error")
	lastElement(t.errors).orNull().writeJSON(&sb)
	key("stop_condition")
	t.stopCondition.orNull().writeJSON(&sb)
	key("trajectory")
	text(&p.row.trajectory, "[]")
	key("token_usage")
	sb.WriteString(p.tokenUsage)
	key("info")
	sb.WriteString(info)

	var flat map[string]bool
	_, _ = t.rewards.forMembers(func(name string, r value) error {
		if r.isNull() || v0Keys[name] || flat[name] {
			return nil
		}
		if flat == nil {
			flat = map[string]bool{}
		}
		flat[name] = true
		key(name)
		score := opt(r).pick("score")
		if x, ok := score.float(); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			sb.WriteString("null") // a score past float64's range
			return nil
		}
		score.orNull().writeJSON(&sb)
		return nil
	})
	sb.WriteByte('}')
	return sb.String()
}

// isEmpty tells an absent or null value, or an empty list or map: what
// the SDK's "if trace.tools" takes for no tools.
func isEmpty(o optValue) bool {
	switch {
	case !o.ok:
		return true
	case o.raw != "":
		return o.raw == "[]" || o.raw == "{}"
	case o.v.Type() == pcommon.ValueTypeSlice:
		return o.v.Slice().Len() == 0
	case o.v.Type() == pcommon.ValueTypeMap:
		return o.v.Map().Len() == 0
	}
	return false
}

// lastElement is a list's last element; absent for an empty list or
// anything else.
func lastElement(o optValue) optValue {
	switch {
	case !o.ok:
	case o.raw == "" && o.v.Type() == pcommon.ValueTypeSlice:
		if sl := o.v.Slice(); sl.Len() > 0 {
			return opt(value{v: sl.At(sl.Len() - 1)})
		}
	case o.raw != "" && o.raw[0] == '[':
		var last optValue
		_ = jsonscan.EachElement(o.raw, func(_, start int) (int, error) {
			end, _ := jsonscan.Value(o.raw, start, 1)
			last = opt(value{raw: o.raw[start:end]})
			return end, nil
		})
		return last
	}
	return optValue{}
}

// pySum sums floats as Python 3.12's built-in sum does (Neumaier's
// compensation), so that a summed value is the SDK's to the last bit.
type pySum struct{ sum, c float64 }

func (s *pySum) add(x float64) {
	t := s.sum + x
	if math.Abs(s.sum) >= math.Abs(x) {
		s.c += (s.sum - t) + x
	} else {
		s.c += (x - t) + s.sum
	}
	s.sum = t
}

func (s *pySum) value() float64 {
	if s.c != 0 && !math.IsNaN(s.c) && !math.IsInf(s.c, 0) {
		return s.sum + s.c
	}
	return s.sum
}

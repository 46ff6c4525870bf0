package sampletable

import (
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// Keys of a native document (episodes-native.md) that the projection reads
// or writes.
const (
	docTraces      = "traces"
	docWorkStep    = "run.work.step"
	infoWrapper    = "native_wrapper"
	infoTraceIndex = "native_trace_index"
)

// The SDK projects an episode into one v0 sample and falls back to one row
// per trace when that sample would not fit one POST /samples request
// (projection.py, MAX_SAMPLES_PAYLOAD_BYTES). The sample is counted as the
// row's text plus sampleFieldBytes for its keys and small fields: the SDK's
// sample also carries the trace's tools, usage and last error, a few KB at
// most against a 25 MiB ceiling.
const (
	maxSampleBytes      = 25 << 20
	sampleEnvelopeBytes = len(`{"samples":[]}`)
	sampleFieldBytes    = 512
)

// isDocument tells a native document: a body with a top-level traces list.
// The last traces key counts, as it does when the document is read.
func (b body) isDocument() bool {
	isList := false
	if b.hasMap {
		b.m.Range(func(k string, v pcommon.Value) bool {
			if k == docTraces {
				isList = v.Type() == pcommon.ValueTypeSlice
			}
			return true
		})
		return isList
	}
	for _, m := range b.members {
		if m.key == docTraces {
			isList = m.v.raw[0] == '['
		}
	}
	return isList
}

// document is a native document's top level.
type document struct {
	// text is the record as compact JSON: Record.Document, and the
	// native_wrapper of its row's info.
	text     string
	id, ok   optValue // read for an evaluation's samples (v0.go, v0sample.go)
	envID    optValue
	step     optValue // run.work.step
	workType optValue // run.work.type
	traces   optValue
}

func readDocument(b body) document {
	var d document
	member := func(k string, v value) error {
		switch k {
		case "id":
			d.id = opt(v)
		case "ok":
			d.ok = opt(v)
		case "env":
			d.envID = opt(v).pick("id")
		case "run":
			work := opt(v).pick("work")
			d.step, d.workType = work.pick("step"), work.pick("type")
		case docTraces:
			d.traces = opt(v)
		}
		return nil
	}
	if b.hasMap {
		d.text = pjson.Encode(b.v)
		_, _ = value{v: b.v}.forMembers(member)
		return d
	}
	if !b.compact {
		d.text, _ = RewriteJSON(b.text, true, false)
		_, _ = value{raw: d.text}.forMembers(member)
		return d
	}
	// The body was compact already, as its checking scan found: its
	// members, read to recognise it, are spans of the document's text.
	d.text = b.text
	for _, m := range b.members {
		_ = member(m.key, m.v)
	}
	return d
}

// fromDocument maps a native document (episodes-native.md). The step is
// attribute prime.work.step, else the body's run.work.step; eval work is
// attribute prime.work.type=eval or run.work.type "eval". Attributes
// prime.episode.<column> are not read: the document is the episode. Its
// rows' trajectory and info are written into a, as a column-keyed row's
// JSON columns are.
func fromDocument(a *Arena, attrs pcommon.Map, b body, created time.Time, sampleLimit int) (Record, error) {
	d := readDocument(b)
	var rec Record
	step, how, ok, err := workStep(attrs)
	switch {
	case err != nil:
		return Record{}, err
	case ok:
		rec.Step = step
		rec.coerce(how)
	case d.step.ok:
		if rec.Step, ok = d.step.int(); !ok {
			return Record{}, rejection(reject.BadStep, bodyField+"."+docWorkStep, "body key %s must be an int, got %s", docWorkStep, d.step.describe())
		}
	default:
		return Record{}, rejection(reject.NoStep, attrWorkStep, "attribute %s is missing, and so is body key %s", attrWorkStep, docWorkStep)
	}
	eval, err := workIsEval(attrs)
	if err != nil {
		return Record{}, err
	}
	if s, ok := d.workType.str(); ok && s == workEval {
		eval = true
	}
	rec.Eval = eval
	// Not a copy: at 200 KB, copying the document into fresh memory was a
	// sixth of mapping it, for a sink (Prime Traces) that only reads it.
	rec.Document = unsafe.Slice(unsafe.StringData(d.text), len(d.text))
	if eval {
		return rec, nil
	}
	if rec.Rows, err = d.project(a, rec.Step, created, sampleLimit); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// project gives the document's rows: one for its summary trace, or, when
// that row's sample is larger than sampleLimit, one per trace. Traces
// without branches have no row.
func (d *document) project(a *Arena, step int64, created time.Time, sampleLimit int) ([]Episode, error) {
	p := a.projection()
	traces, err := readTraces(d.traces, p.traces[:0])
	p.traces = traces
	if err != nil || len(traces) == 0 {
		return nil, err
	}
	s := summaryIndex(traces)
	sum := &traces[s]
	if err := sum.checkInfo(); err != nil {
		return nil, err
	}
	// The summary trace's advantage is the episode's: every row of the
	// document and every branch carries it, as in the SDK.
	adv := sum.advantage()
	row, err := sum.project(a, adv, true)
	if err != nil {
		return nil, err
	}
	ep := d.episode(step, created, row, adv, sum.infoWithWrapper(a, d.text))
	if sampleEnvelopeBytes+sampleFieldBytes+ep.Size <= sampleLimit {
		if row.branches == 0 {
			return nil, nil
		}
		row := a.docRow()
		row[0] = ep
		return row[:], nil
	}
	rows := make([]Episode, 0, len(traces))
	for i := range traces {
		tr, r := &traces[i], row
		if i != s {
			if err := tr.checkInfo(); err != nil {
				return nil, err
			}
			if r, err = tr.project(a, adv, true); err != nil {
				return nil, err
			}
		}
		if r.branches == 0 {
			continue
		}
		ep := d.episode(step, created, r, adv, tr.ownInfo())
		ep.Part = i
		rows = append(rows, ep)
	}
	return rows, nil
}

// summaryIndex is the first trainable trace, else 0.
func summaryIndex(traces []trace) int {
	for i := range traces {
		if traces[i].trainable() {
			return i
		}
	}
	return 0
}

// episode is the row of r. Its optional cells point into r.cells: a row
// made again from the same r (the summary trace's, in the per-trace
// fallback) takes them over from the one made before.
func (d *document) episode(step int64, created time.Time, r traceRow, adv *float64, info string) Episode {
	c := r.cells
	c.envName, c.completion, c.metrics, c.info = d.envName(), r.completion, r.metrics, info
	c.in, c.out = r.in, r.out
	ep := Episode{
		Step:            step,
		EnvName:         &c.envName,
		ProblemID:       r.problemID,
		Completion:      &c.completion,
		Trajectory:      r.trajectory,
		Task:            r.task,
		Info:            &c.info,
		Reward:          r.reward,
		Advantage:       adv,
		Metrics:         &c.metrics,
		Timing:          r.timing,
		NumInputTokens:  &c.in,
		NumOutputTokens: &c.out,
		CreatedAt:       created,
	}
	ep.Size = ep.size()
	return ep
}

// envName is env.id as a string, "" when the document has none.
func (d *document) envName() string {
	if !d.envID.ok {
		return ""
	}
	if s, ok := d.envID.str(); ok {
		return validText(s)
	}
	return d.envID.json()
}

func ptr[T any](v T) *T { return &v }

// docMisfit rejects a document whose trace does not have the shape the
// projection needs. Field is the traces key, so that one bad producer
// warns once, whatever trace or node it trips on.
func docMisfit(path string, f value, want string) error {
	return rejection(reject.BadValue, bodyField+"."+docTraces, "body key %s must be %s, got %s", path, want, f.describe())
}

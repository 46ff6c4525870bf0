package sampletable

import (
	"cmp"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// The work attributes of a prime.episode record (telemetry.md §3).
const (
	attrWorkStep = "prime.work.step"
	attrWorkType = "prime.work.type"
	workTrain    = "train"
	workEval     = "eval"
)

// Record is one prime.episode record, mapped.
type Record struct {
	// Step is the step the episode was dispatched at.
	Step int64
	// Eval marks eval work, which has no row; nothing past the step is
	// mapped for it.
	Eval bool
	// Rows are the record's table rows: one; one per trace of a native
	// document too large for one row; none for eval work or an episode
	// without a trajectory.
	Rows []Episode
	// Document is a native document as received, as compact JSON (what
	// its row's info holds as native_wrapper); nil for a column-keyed
	// record. Eval work has one too. It shares the memory of the record's
	// body (or of the text compacted from it), which is immutable: it
	// must not be written to.
	Document []byte
	// coerced has one entry per value taken as a Python user means it
	// rather than as sent (reject.NumberString, reject.JSONText): the step,
	// and prompt, answer and tag at most. An array, not a slice: a
	// verifiers prompt is a list in every record, and a slice was an
	// allocation a record.
	coerced  [4]reject.Reason
	nCoerced uint8
}

// Coerced lists the record's coercions, one entry per value.
func (r *Record) Coerced() []reject.Reason { return r.coerced[:r.nCoerced] }

func (r *Record) coerce(how reject.Reason) {
	if how != "" && int(r.nCoerced) < len(r.coerced) {
		r.coerced[r.nCoerced] = how
		r.nCoerced++
	}
}

// FromRecord maps one prime.episode log record to its rows.
//
// A body with a top-level traces list, as a map or a string holding a JSON
// object, is a native verifiers document (episodes-native.md): its step is
// attribute prime.work.step, else the body's run.work.step, and its rows
// are projected from its traces. Any other record is column-keyed
// (telemetry.md §3): prime.work.step is required (an int, an integral
// double, or a string holding a decimal integer), and every other column
// comes from attribute prime.episode.<column>, else body key <column>.
// prime.work.type is "train" (the default) or "eval" for both. ts and
// observed are the record's timestamps; now stands in when both are unset.
//
// Every error is a *reject.Rejection (errors.AsType finds it): a value
// that does not fit, its Field the attribute or body key and its message
// naming that and the type found. Eval work and episodes without a
// trajectory come back without error and without rows; the caller skips
// them.
func FromRecord(attrs pcommon.Map, body pcommon.Value, ts, observed pcommon.Timestamp, now time.Time) (Record, error) {
	return FromRecordIn(nil, attrs, body, ts, observed, now)
}

// FromRecordIn is FromRecord writing the rows' JSON columns into a, whose
// Release ends them.
func FromRecordIn(a *Arena, attrs pcommon.Map, body pcommon.Value, ts, observed pcommon.Timestamp, now time.Time) (Record, error) {
	return mapRecord(a, attrs, body, createdAt(ts, observed, now), maxSampleBytes)
}

// mapRecord takes the sample limit of the per-trace fallback, so that
// tests need not build 25 MiB documents to reach it.
func mapRecord(a *Arena, attrs pcommon.Map, v pcommon.Value, created time.Time, sampleLimit int) (Record, error) {
	b := readBody(v, a.memberRoom(), a.index())
	defer a.keepMembers(b.members)
	if b.err == nil && b.isDocument() {
		return fromDocument(a, attrs, b, created, sampleLimit)
	}
	return fromColumns(a, attrs, b, created)
}

// fromColumns maps a column-keyed record.
func fromColumns(a *Arena, attrs pcommon.Map, b body, created time.Time) (Record, error) {
	var rec Record
	step, how, ok, err := workStep(attrs)
	if err != nil {
		return Record{}, err
	}
	if !ok {
		return Record{}, rejection(reject.NoStep, attrWorkStep, "attribute %s is missing", attrWorkStep)
	}
	rec.Step = step
	rec.coerce(how)
	if rec.Eval, err = workIsEval(attrs); err != nil {
		return Record{}, err
	}
	if rec.Eval {
		return rec, nil
	}
	src, err := newSource(attrs, b)
	if err != nil {
		return Record{}, err
	}
	row := a.recordRow()
	ep, cells := &row.rows[0], &row.cells
	*ep = Episode{Step: step, CreatedAt: created}
	if err := readScalars(&src, ep, &rec, cells); err != nil {
		return Record{}, err
	}

	traj, ok := src.get(colTrajectory)
	if !ok {
		return rec, nil
	}
	t, err := buildTrajectory(a, traj, ep.Advantage)
	if err != nil {
		return Record{}, err
	}
	if t.branches == 0 {
		return rec, nil
	}
	ep.Trajectory = t.text
	if ep.NumInputTokens == nil {
		if ep.NumInputTokens, err = t.last.tokens(traj, t.last.in, colNumInputTokens, &cells.inTokens); err != nil {
			return Record{}, err
		}
	}
	if ep.NumOutputTokens == nil {
		if ep.NumOutputTokens, err = t.last.tokens(traj, t.last.out, colNumOutputTokens, &cells.outTokens); err != nil {
			return Record{}, err
		}
	}

	ep.Completion = optJSON(a, &src, colCompletion, &cells.completion)
	if ep.Completion == nil && t.last.messages.ok {
		cells.completion = t.lastMessages
		if cells.completion == "" {
			cells.completion = jsonText(a, t.last.messages.field)
		}
		ep.Completion = &cells.completion
	}
	ep.Task = optJSON(a, &src, colTask, &cells.task)
	ep.Info = optJSON(a, &src, colInfo, &cells.info)
	ep.Metrics = optJSON(a, &src, colMetrics, &cells.metrics)
	ep.Timing = optJSON(a, &src, colTiming, &cells.timing)
	ep.Size = ep.size()
	rec.Rows = row.rows[:]
	return rec, nil
}

// createdAt is the record's timestamp, else its observed timestamp, else
// now, truncated to the column's microseconds.
func createdAt(ts, observed pcommon.Timestamp, now time.Time) time.Time {
	if t := cmp.Or(ts, observed); t != 0 {
		return time.UnixMicro(int64(t / 1000)).UTC()
	}
	return time.UnixMicro(now.UnixMicro()).UTC()
}

// workStep reads attribute prime.work.step: an int, an integral double, or
// a string holding a decimal integer, which is how the OTel Python SDK
// sends a numpy integer (np.int64(20) arrives as "20"); how is then
// reject.NumberString. ok is false when the attribute is absent.
func workStep(attrs pcommon.Map) (step int64, how reject.Reason, ok bool, err error) {
	v, present := attrs.Get(attrWorkStep)
	if !present || v.Type() == pcommon.ValueTypeEmpty {
		return 0, "", false, nil
	}
	if step, ok := pvalue.Int(v); ok {
		return step, "", true, nil
	}
	if step, ok := pvalue.IntString(v); ok {
		return step, reject.NumberString, true, nil
	}
	f := field{value: value{v: v}}
	return 0, "", false, rejection(reject.BadStep, attrWorkStep, "attribute %s must be an int, got %s", attrWorkStep, f.describe())
}

func workIsEval(attrs pcommon.Map) (bool, error) {
	v, ok := attrs.Get(attrWorkType)
	if !ok || v.Type() == pcommon.ValueTypeEmpty {
		return false, nil
	}
	if s, ok := pvalue.String(v); ok && (s == workTrain || s == workEval) {
		return s == workEval, nil
	}
	f := field{value: value{v: v}}
	return false, rejection(reject.BadWorkType, attrWorkType, "attribute %s must be %q or %q, got %s", attrWorkType, workTrain, workEval, f.describe())
}

// recordRow is a record's row with its optional cells, in one allocation.
type recordRow struct {
	rows  [1]Episode
	cells optionalCells
}

// optionalCells holds the values of a row's optional cells, which the
// Episode points into: one allocation for a row rather than one a cell
// (a dozen small objects a record, a share of the garbage collector's
// work at 2 KB episodes).
type optionalCells struct {
	problemID, inTokens, outTokens                   int64
	reward, advantage                                float64
	envName, completion, task, info, metrics, timing string
}

// readScalars reads the string and number columns, in table order, so the
// first misfit reported is always the same one.
func readScalars(src *source, ep *Episode, rec *Record, cells *optionalCells) error {
	var err error
	ep.Tag = readText(src, colTag, rec)
	if ep.ProblemID, err = readInt(src, colProblemID, &cells.problemID); err != nil {
		return err
	}
	ep.Prompt = readText(src, colPrompt, rec)
	ep.Answer = readText(src, colAnswer, rec)
	env, ok, err := readString(src, colEnvName)
	if err != nil {
		return err
	}
	if ok {
		cells.envName = env
		ep.EnvName = &cells.envName
	}
	if ep.Reward, err = readFloat(src, colReward, &cells.reward); err != nil {
		return err
	}
	if ep.Advantage, err = readFloat(src, colAdvantage, &cells.advantage); err != nil {
		return err
	}
	if ep.NumInputTokens, err = readInt(src, colNumInputTokens, &cells.inTokens); err != nil {
		return err
	}
	ep.NumOutputTokens, err = readInt(src, colNumOutputTokens, &cells.outTokens)
	return err
}

// readText reads tag, prompt or answer: a string as it is; anything else
// as its JSON text (reject.JSONText), since a Python user who puts a list
// of chat messages in prompt means the messages, not a misfit.
func readText(src *source, column string, rec *Record) string {
	f, ok := src.get(column)
	if !ok {
		return ""
	}
	if s, ok := f.str(); ok {
		return validText(s) // a lone surrogate escape decodes to U+FFFD already
	}
	rec.coerce(reject.JSONText)
	return f.json()
}

// readString reads env_name, which takes only a string.
func readString(src *source, column string) (string, bool, error) {
	f, ok := src.get(column)
	if !ok {
		return "", false, nil
	}
	s, ok := f.str()
	if !ok {
		return "", false, misfit(f, "a string")
	}
	return validText(s), true, nil
}

func readInt(src *source, column string, dst *int64) (*int64, error) {
	f, ok := src.get(column)
	if !ok {
		return nil, nil
	}
	n, ok := f.int()
	if !ok {
		return nil, misfit(f, "an int")
	}
	*dst = n
	return dst, nil
}

func readFloat(src *source, column string, dst *float64) (*float64, error) {
	f, ok := src.get(column)
	if !ok {
		return nil, nil
	}
	x, ok := f.float()
	if !ok {
		return nil, misfit(f, "a number")
	}
	*dst = x
	return dst, nil
}

func misfit(f field, want string) error {
	return rejection(reject.BadValue, f.key(), "%s must be %s, got %s", f.name(), want, f.describe())
}

// optJSON reads a JSON text column; nil when the record has none.
func optJSON(a *Arena, src *source, column string, dst *string) *string {
	f, ok := src.get(column)
	if !ok {
		return nil
	}
	*dst = jsonText(a, f)
	return dst
}

// jsonText is a JSON column's text: the JSON encoding of the value, except
// that a string already holding a JSON object or array is stored as it is,
// so a trainer that serialised the value itself is not double-encoded.
func jsonText(a *Arena, f field) string {
	if f.raw != "" {
		// A span of the body's JSON text is JSON already; a JSON string
		// literal is unwrapped only when it holds an object or array.
		if f.raw[0] == '"' {
			if s := unquote(f.raw); holdsContainer(s) {
				return validText(s)
			}
		}
		return f.raw
	}
	if s, ok := pvalue.String(f.v); ok && holdsContainer(s) {
		return validText(s)
	}
	return a.encode(f.v)
}

package sampletable

import (
	"cmp"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
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

// FromRecord maps one prime.episode log record to its row's columns.
//
// prime.work.step is required (an int, or an integral double); prime.work.type
// is "train" (the default) or "eval". Every other column comes from attribute
// prime.episode.<column>, else body key <column>, where the body is a map or
// a string holding a JSON object. ts and observed are the record's
// timestamps; now stands in when both are unset.
//
// Every error is a *reject.Rejection (errors.AsType finds it): a value
// that does not fit its column, its Field the attribute or body key and its
// message naming that and the type found. Eval episodes and episodes with
// an empty trajectory come back without error but have no row (Eval,
// EmptyTrajectory); the caller skips them.
func FromRecord(attrs pcommon.Map, body pcommon.Value, ts, observed pcommon.Timestamp, now time.Time) (Episode, error) {
	ep := Episode{CreatedAt: createdAt(ts, observed, now)}
	var err error
	if ep.Step, err = workStep(attrs); err != nil {
		return Episode{}, err
	}
	if ep.Eval, err = workIsEval(attrs); err != nil {
		return Episode{}, err
	}
	if ep.Eval {
		return ep, nil
	}
	src, err := newSource(attrs, body)
	if err != nil {
		return Episode{}, err
	}
	if err := readScalars(&src, &ep); err != nil {
		return Episode{}, err
	}

	traj, ok := src.get(colTrajectory)
	if !ok {
		ep.EmptyTrajectory = true
		return ep, nil
	}
	t, err := buildTrajectory(traj, ep.Advantage)
	if err != nil {
		return Episode{}, err
	}
	if t.branches == 0 {
		ep.EmptyTrajectory = true
		return ep, nil
	}
	ep.Trajectory = t.text
	if ep.NumInputTokens == nil {
		if ep.NumInputTokens, err = t.last.tokens(traj, t.last.in, colNumInputTokens); err != nil {
			return Episode{}, err
		}
	}
	if ep.NumOutputTokens == nil {
		if ep.NumOutputTokens, err = t.last.tokens(traj, t.last.out, colNumOutputTokens); err != nil {
			return Episode{}, err
		}
	}

	ep.Completion = optJSON(&src, colCompletion)
	if ep.Completion == nil && t.last.messages.ok {
		s := jsonText(t.last.messages.field)
		ep.Completion = &s
	}
	ep.Task = optJSON(&src, colTask)
	ep.Info = optJSON(&src, colInfo)
	ep.Metrics = optJSON(&src, colMetrics)
	ep.Timing = optJSON(&src, colTiming)
	ep.Size = ep.size()
	return ep, nil
}

// createdAt is the record's timestamp, else its observed timestamp, else
// now, truncated to the column's microseconds.
func createdAt(ts, observed pcommon.Timestamp, now time.Time) time.Time {
	if t := cmp.Or(ts, observed); t != 0 {
		return time.UnixMicro(int64(t / 1000)).UTC()
	}
	return time.UnixMicro(now.UnixMicro()).UTC()
}

func workStep(attrs pcommon.Map) (int64, error) {
	v, ok := attrs.Get(attrWorkStep)
	if !ok || v.Type() == pcommon.ValueTypeEmpty {
		return 0, rejection(reject.NoStep, attrWorkStep, "attribute %s is missing", attrWorkStep)
	}
	step, ok := pvalue.Int(v)
	if !ok {
		f := field{v: v}
		return 0, rejection(reject.BadStep, attrWorkStep, "attribute %s must be an int, got %s", attrWorkStep, f.describe())
	}
	return step, nil
}

func workIsEval(attrs pcommon.Map) (bool, error) {
	v, ok := attrs.Get(attrWorkType)
	if !ok || v.Type() == pcommon.ValueTypeEmpty {
		return false, nil
	}
	if s, ok := pvalue.String(v); ok && (s == workTrain || s == workEval) {
		return s == workEval, nil
	}
	f := field{v: v}
	return false, rejection(reject.BadWorkType, attrWorkType, "attribute %s must be %q or %q, got %s", attrWorkType, workTrain, workEval, f.describe())
}

// readScalars reads the string and number columns, in table order, so the
// first misfit reported is always the same one.
func readScalars(src *source, ep *Episode) error {
	var err error
	if ep.Tag, _, err = readString(src, colTag); err != nil {
		return err
	}
	if ep.ProblemID, err = readInt(src, colProblemID); err != nil {
		return err
	}
	if ep.Prompt, _, err = readString(src, colPrompt); err != nil {
		return err
	}
	if ep.Answer, _, err = readString(src, colAnswer); err != nil {
		return err
	}
	env, ok, err := readString(src, colEnvName)
	if err != nil {
		return err
	}
	if ok {
		ep.EnvName = &env
	}
	if ep.Reward, err = readFloat(src, colReward); err != nil {
		return err
	}
	if ep.Advantage, err = readFloat(src, colAdvantage); err != nil {
		return err
	}
	if ep.NumInputTokens, err = readInt(src, colNumInputTokens); err != nil {
		return err
	}
	ep.NumOutputTokens, err = readInt(src, colNumOutputTokens)
	return err
}

// readString reads a text column that takes a string as it is.
func readString(src *source, column string) (string, bool, error) {
	f, ok := src.get(column)
	if !ok {
		return "", false, nil
	}
	s, ok := f.str()
	if !ok {
		return "", false, misfit(f, "a string")
	}
	return strings.ToValidUTF8(s, "\uFFFD"), true, nil // a lone surrogate escape decodes to U+FFFD already
}

func readInt(src *source, column string) (*int64, error) {
	f, ok := src.get(column)
	if !ok {
		return nil, nil
	}
	n, ok := f.int()
	if !ok {
		return nil, misfit(f, "an int")
	}
	return &n, nil
}

func readFloat(src *source, column string) (*float64, error) {
	f, ok := src.get(column)
	if !ok {
		return nil, nil
	}
	x, ok := f.float()
	if !ok {
		return nil, misfit(f, "a number")
	}
	return &x, nil
}

func misfit(f field, want string) error {
	return rejection(reject.BadValue, f.key(), "%s must be %s, got %s", f.name(), want, f.describe())
}

// optJSON reads a JSON text column; nil when the record has none.
func optJSON(src *source, column string) *string {
	f, ok := src.get(column)
	if !ok {
		return nil
	}
	s := jsonText(f)
	return &s
}

// jsonText is a JSON column's text: the JSON encoding of the value, except
// that a string already holding a JSON object or array is stored as it is,
// so a trainer that serialised the value itself is not double-encoded.
func jsonText(f field) string {
	if f.raw != "" {
		// A span of the body's JSON text is JSON already; a JSON string
		// literal is unwrapped only when it holds an object or array.
		if f.raw[0] == '"' {
			if s := unquote(f.raw); holdsJSONContainer(s) {
				return strings.ToValidUTF8(s, "\uFFFD")
			}
		}
		return f.raw
	}
	if s, ok := pvalue.String(f.v); ok && holdsJSONContainer(s) {
		return strings.ToValidUTF8(s, "\uFFFD")
	}
	return pjson.Encode(f.v)
}

package sampletable

import (
	"errors"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// Keys of a trajectory branch that the row reads or sets.
const (
	branchMessages  = "messages"
	branchAdvantage = "advantage"
)

// trajectory is the re-serialised trajectory column and what its last
// branch gives the row.
type trajectory struct {
	text     string
	branches int
	last     branchTail
	// lastMessages is the last branch's "messages" as written into text,
	// when that is the completion's JSON too (a list or map value): the
	// completion then shares the trajectory's bytes instead of encoding
	// the same chat a second time.
	lastMessages string
}

// optField is a field that may be absent.
type optField struct {
	field
	ok bool
}

// branchTail holds the last branch's values that stand in for absent
// columns: its token counts, and its messages for the completion.
type branchTail struct {
	index             int
	in, out, messages optField
}

// tokens reads a token count of the last branch into dst; nil when it has
// none.
func (b branchTail) tokens(traj field, v optField, key string, dst *int64) (*int64, error) {
	if !v.ok {
		return nil, nil
	}
	if n, ok := v.int(); ok {
		*dst = n
		return dst, nil
	}
	return nil, rejection(reject.BadValue, traj.key(), "%s[%d].%s must be an int, got %s", traj.name(), b.index, key, v.describe())
}

// tailKey tells the branch keys a branchTail keeps.
func tailKey(key string) bool {
	return key == colNumInputTokens || key == colNumOutputTokens || key == branchMessages
}

func (b *branchTail) see(key string, f field) {
	switch key {
	case colNumInputTokens:
		b.in = optField{f, true}
	case colNumOutputTokens:
		b.out = optField{f, true}
	case branchMessages:
		b.messages = optField{f, true}
	}
}

// buildTrajectory writes the trajectory with every branch's "advantage" set
// to the episode's (null when it has none), overriding the branch's own, as
// the SDK does. The trajectory is a list of maps, or JSON text of an array
// of objects; branches keep their key order, with "advantage" where the
// branch had it, else last. Branches given as JSON text keep their values'
// text byte for byte.
func buildTrajectory(a *Arena, f field, advantage *float64) (trajectory, error) {
	adv := "null"
	if advantage != nil {
		adv = a.float(*advantage)
	}
	switch {
	case f.raw != "" && f.raw[0] == '[':
		return textTrajectory(a, f, f.raw, adv, true)
	case f.raw == "" && f.v.Type() == pcommon.ValueTypeSlice:
		return listTrajectory(a, f, f.v.Slice(), adv)
	}
	if s, ok := f.str(); ok && firstNonSpace(s) == '[' {
		return textTrajectory(a, f, validText(s), adv, false)
	}
	return trajectory{}, rejection(reject.BadValue, f.key(), "%s must be a list of maps (or a string holding a JSON array of objects), got %s", f.name(), f.describe())
}

// endBranch closes a branch of n members, adding the advantage last when
// the branch had none of its own.
func endBranch(sb *pjson.Buffer, n int, seen bool, adv string) {
	if !seen {
		if n > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`"` + branchAdvantage + `":`)
		sb.WriteString(adv)
	}
	sb.WriteByte('}')
}

func notABranch(f field, i int, kind string) error {
	return rejection(reject.BadValue, f.key(), "%s[%d] must be a map, got %s", f.name(), i, kind)
}

// repeatsPool keeps the lists of listTrajectory's repeats between
// trajectories.
var repeatsPool = sync.Pool{New: func() any { return new(pjson.Repeats) }}

func listTrajectory(a *Arena, f field, branches pcommon.Slice, adv string) (trajectory, error) {
	t := trajectory{branches: branches.Len()}
	if t.branches == 0 {
		return t, nil
	}
	sb := a.buffer(func() int { return pjson.Size(f.v) + branches.Len()*(len(branchAdvantage)+len(adv)+4) })
	var messages span
	// A branch repeats the conversation before it: the repeats are copied.
	repeats := repeatsPool.Get().(*pjson.Repeats)
	defer func() {
		repeats.Reset()
		repeatsPool.Put(repeats)
	}()
	sb.WriteByte('[')
	for i := 0; i < branches.Len(); i++ {
		b := branches.At(i)
		if b.Type() != pcommon.ValueTypeMap {
			return trajectory{}, notABranch(f, i, pvalue.TypeName(b))
		}
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('{')
		n, seen := 0, false
		for k, v := range b.Map().All() {
			if k == branchAdvantage && seen {
				continue
			}
			if n > 0 {
				sb.WriteByte(',')
			}
			n++
			pjson.WriteString(&sb, k)
			sb.WriteByte(':')
			switch {
			case k == branchAdvantage:
				seen = true
				sb.WriteString(adv)
			case k == branchMessages && i == branches.Len()-1 && v.Type() != pcommon.ValueTypeEmpty:
				// The last non-empty "messages" is the one branchTail keeps.
				start := sb.Len()
				pjson.WriteRepeats(&sb, v, repeats)
				messages = span{start, sb.Len(), v.Type() == pcommon.ValueTypeSlice || v.Type() == pcommon.ValueTypeMap}
			default:
				pjson.WriteRepeats(&sb, v, repeats)
			}
		}
		endBranch(&sb, n, seen, adv)
	}
	sb.WriteByte(']')
	t.text = a.text(&sb)
	if messages.container {
		t.lastMessages = t.text[messages.start:messages.end]
	}

	t.last.index = t.branches - 1
	for k, v := range branches.At(t.last.index).Map().All() {
		if v.Type() != pcommon.ValueTypeEmpty {
			t.last.see(k, field{column: f.column, fromAttr: f.fromAttr, value: value{v: v}})
		}
	}
	return t, nil
}

// span is where a value was written in a builder.
type span struct {
	start, end int
	container  bool
}

// textTrajectory rewrites a trajectory given as JSON text. checked says
// the text was accepted already, as the span of a body that was scanned
// whole: its branches are then walked through the body's index
// (jsonindex_walk.go), or by their brackets and quotes alone (walkMembers,
// skipValue), not checked a second time. That second check read every
// number again, one digit at a time: with token ids and logprobs in the
// branches, it was as much as the body's own check.
func textTrajectory(a *Arena, f field, text, adv string, checked bool) (trajectory, error) {
	w := branchWriter{f: f, adv: adv}
	// Room for the text, a thirty-second more (advantages longer than the
	// branches' own) and an advantage added to four branches: past it,
	// the buffer moves to memory of its own, which costs a copy, not a
	// wrong byte.
	w.sb = pjson.NewBuffer(a.take(len(text) + len(text)/32 + 4*(len(branchAdvantage)+len(adv)+4)))
	w.sb.WriteByte('[')
	var err error
	if checked && f.ix != nil {
		err = f.ix.elements(f.at, func(i int, el value) error {
			if el.raw[0] != '{' {
				return notABranch(f, i, jsonKind(el.raw))
			}
			w.begin(i)
			if err := el.ix.members(el.at, func(k string, v value) error { return w.member(k, v.raw) }); err != nil {
				return err
			}
			w.end()
			return nil
		})
	} else {
		err = eachElement(text, func(i, start int) (int, error) {
			if text[start] != '{' {
				var end int
				ok := true
				if checked {
					end = skipValue(text, start)
				} else {
					end, ok = scanValue(text, start, 1)
				}
				if !ok {
					return end, &syntaxError{Offset: end}
				}
				return end, notABranch(f, i, jsonKind(text[start:end]))
			}
			w.begin(i)
			var end int
			var err error
			if checked {
				end, err = walkMembers(text, start, w.member)
			} else {
				end, err = scanObject(text, start, 1, w.member)
			}
			if err != nil {
				return end, err
			}
			w.end()
			return end, nil
		})
	}
	if _, ok := errors.AsType[*syntaxError](err); ok {
		return trajectory{}, rejection(reject.BadValue, f.key(), "%s holds invalid JSON: %v", f.name(), err)
	}
	if err != nil {
		return trajectory{}, err
	}
	t := w.t
	if t.branches == 0 {
		return trajectory{}, nil
	}
	w.sb.WriteByte(']')
	t.text = w.sb.String()
	if w.messages.container {
		t.lastMessages = t.text[w.messages.start:w.messages.end]
	}
	return t, nil
}

// branchWriter writes a trajectory given as JSON text branch by branch,
// each member as it was but "advantage", and keeps what its last branch
// gives the row.
type branchWriter struct {
	f        field
	adv      string
	sb       pjson.Buffer
	t        trajectory
	messages span // the last branch's "messages", when a list or map
	n        int  // the branch's members so far
	seen     bool // the branch had an "advantage"
}

// begin starts branch i.
func (w *branchWriter) begin(i int) {
	if w.t.branches > 0 {
		w.sb.WriteByte(',')
	}
	w.t.branches++
	w.t.last = branchTail{index: i}
	w.messages = span{}
	w.sb.WriteByte('{')
	w.n, w.seen = 0, false
}

// member writes a member of the branch: k its raw key, v its value's text.
func (w *branchWriter) member(k, v string) error {
	key := unquote(k)
	if key == branchAdvantage {
		if w.seen {
			return nil
		}
		w.seen, v = true, w.adv
	} else if tailKey(key) {
		if jf, ok := jsonField(w.f.column, value{raw: v}); ok {
			jf.fromAttr = w.f.fromAttr
			w.t.last.see(key, jf)
		}
	}
	if w.n > 0 {
		w.sb.WriteByte(',')
	}
	w.n++
	w.sb.WriteString(k)
	w.sb.WriteByte(':')
	start := w.sb.Len()
	w.sb.WriteString(v)
	if key == branchMessages && (v[0] == '[' || v[0] == '{') {
		w.messages = span{start, w.sb.Len(), true}
	}
	return nil
}

// end closes the branch.
func (w *branchWriter) end() { endBranch(&w.sb, w.n, w.seen, w.adv) }

package sampletable

import (
	"math"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

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
		_ = eachElement(o.raw, func(_, start int) (int, error) {
			end, _ := scanValue(o.raw, start, 1)
			last = opt(value{raw: o.raw[start:end]})
			return end, nil
		})
		return last
	}
	return optValue{}
}

package sampletable

import (
	"math"
	"strconv"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

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

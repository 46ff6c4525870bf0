package sampletable

import (
	"fmt"
	"math"
	"strconv"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

// trace is the members of one trace that its row, or its v0 sample
// (v0.go, v0sample.go), reads.
type trace struct {
	index                                                     int
	agent, task, nodes, calls, rewards, metrics, info, timing optValue
	id, tools, isCompleted, stopCondition, errors             optValue // v0 only
}

// readTraces reads the members of every trace, in one pass over them,
// into room.
func readTraces(list optValue, room []trace) ([]trace, error) {
	traces := room
	var tr trace
	_, err := list.forMapElements(func(k string, v value) error {
		if f := tr.member(k); f != nil {
			*f = opt(v)
		}
		return nil
	}, func(i int) error {
		tr.index = i
		traces = append(traces, tr)
		tr = trace{}
		return nil
	}, func(i int, v value) error {
		return docMisfit(fmt.Sprintf("traces[%d]", i), v, "a map")
	})
	return traces, err
}

// member is where the trace keeps member k, nil for one it does not read:
// a switch, where a map of the same built per document cost an allocation
// and a hash a member.
func (tr *trace) member(k string) *optValue {
	switch k {
	case "agent":
		return &tr.agent
	case "task":
		return &tr.task
	case "nodes":
		return &tr.nodes
	case "calls":
		return &tr.calls
	case "rewards":
		return &tr.rewards
	case "metrics":
		return &tr.metrics
	case "info":
		return &tr.info
	case "timing":
		return &tr.timing
	case "id":
		return &tr.id
	case "tools":
		return &tr.tools
	case "is_completed":
		return &tr.isCompleted
	case "stop_condition":
		return &tr.stopCondition
	case "errors":
		return &tr.errors
	}
	return nil
}

// trainable tells a trace whose agent.trainable is true.
func (t *trace) trainable() bool { return t.agent.pick("trainable").isTrue() }

// checkInfo holds a trace's info, which its row extends or shows, to a map.
func (t *trace) checkInfo() error {
	if t.info.ok && !t.info.isMap() {
		return docMisfit(t.path("info"), t.info.value, "a map")
	}
	return nil
}

func (t *trace) path(rest string) string { return fmt.Sprintf("traces[%d].%s", t.index, rest) }

// advantage is info.advantage as a number; nil when it has none.
func (t *trace) advantage() *float64 {
	if x, ok := t.info.pick("advantage").float(); ok {
		return &x
	}
	return nil
}

// infoWithWrapper is the summary row's info: the trace's info plus the
// whole record and the trace's index, as the SDK writes it ({**info,
// native_wrapper, native_trace_index}): a key the info has already keeps
// its place and takes the new value; later duplicates of it go. It is
// written into a.
func (t *trace) infoWithWrapper(a *Arena, doc string) string {
	sb := pjson.NewBuffer(a.take(t.info.orNull().jsonSize() + len(doc) + 64))
	index := strconv.Itoa(t.index)
	var wrapped, indexed bool
	n := 0
	member := func(k string, write func()) {
		if n > 0 {
			sb.WriteByte(',')
		}
		n++
		pjson.WriteString(&sb, k)
		sb.WriteByte(':')
		write()
	}
	sb.WriteByte('{')
	_, _ = t.info.forMembers(func(k string, v value) error {
		switch {
		case k == infoWrapper && !wrapped:
			wrapped = true
			member(k, func() { sb.WriteString(doc) })
		case k == infoTraceIndex && !indexed:
			indexed = true
			member(k, func() { sb.WriteString(index) })
		case k != infoWrapper && k != infoTraceIndex:
			member(k, func() { v.writeJSON(&sb) })
		}
		return nil
	})
	if !wrapped {
		member(infoWrapper, func() { sb.WriteString(doc) })
	}
	if !indexed {
		member(infoTraceIndex, func() { sb.WriteString(index) })
	}
	sb.WriteByte('}')
	return sb.String()
}

// ownInfo is a trace's info for a row of its own: JSON null when it is
// empty, as the SDK writes it (dict(info) or None).
func (t *trace) ownInfo() string {
	switch {
	case !t.info.ok, t.info.raw == "{}", t.info.raw == "" && t.info.v.Map().Len() == 0:
		return "null" // the document's text is compact: an empty object is {}
	}
	return t.info.json()
}

// traceRow is what a trace gives its row.
type traceRow struct {
	trajectory, completion string
	branches               int
	in, out                int64 // the last branch's tokens
	task, timing           *string
	metrics                string
	reward                 *float64
	problemID              *int64
	// cells holds the values the row's optional cells point to, in one
	// allocation rather than one a cell (nine a document).
	cells *rowCells
}

// rowCells are the values of a native row's optional cells.
type rowCells struct {
	task, timing, envName, completion, metrics, info string
	problemID, in, out                               int64
	reward                                           float64
}

// project gives the trace's row. withAdvantage sets every trajectory
// branch's "advantage" to adv, as the table's rows carry it; an
// evaluation's v0 sample has no advantage key. The trajectory is written
// into a.
func (t *trace) project(a *Arena, adv *float64, withAdvantage bool) (traceRow, error) {
	r := traceRow{cells: a.rowCells()}
	c := r.cells
	if data := t.task.pick("data"); data.ok {
		c.task = data.json()
		r.task = &c.task
		if n, ok := data.pick("idx").int(); ok {
			c.problemID = n
			r.problemID = &c.problemID
		}
	}
	r.metrics = "{}"
	if t.metrics.ok {
		r.metrics = t.metrics.json()
	}
	if t.timing.ok {
		c.timing = t.timing.json()
		r.timing = &c.timing
	}
	reward, err := t.reward()
	if err != nil {
		return traceRow{}, err
	}
	// Python's JSON cannot carry a non-finite reward: the SDK's sample
	// holds None for it.
	if !math.IsNaN(reward) && !math.IsInf(reward, 0) {
		c.reward = reward
		r.reward = &c.reward
	}
	p := a.projection()
	g, err := t.graph(p)
	if err != nil {
		return traceRow{}, err
	}
	if err := g.write(a, t, &r, adv, withAdvantage, p); err != nil {
		return traceRow{}, err
	}
	return r, nil
}

// reward is the sum of score × weight over the non-null rewards, in their
// order, compensated as Python 3.12's sum is (Neumaier), so that the row
// carries the SDK's value to the last bit.
func (t *trace) reward() (float64, error) {
	var sum, c float64
	isMap, err := t.rewards.forMembers(func(name string, r value) error {
		if r.isNull() {
			return nil
		}
		var score, weight value
		var hasScore, hasWeight bool
		if isMap, _ := r.forMembers(func(k string, v value) error {
			switch k {
			case "score":
				score, hasScore = v, true
			case "weight":
				weight, hasWeight = v, true
			}
			return nil
		}); !isMap {
			return docMisfit(t.path("rewards."+name), r, "a map or null")
		}
		if !hasScore {
			return docMisfit(t.path("rewards."+name+".score"), value{raw: "null"}, "a number")
		}
		sc, ok := rewardNumber(score)
		if !ok {
			return docMisfit(t.path("rewards."+name+".score"), score, "a number")
		}
		w := 1.0 // the Reward model's default
		if hasWeight {
			if w, ok = rewardNumber(weight); !ok {
				return docMisfit(t.path("rewards."+name+".weight"), weight, "a number")
			}
		}
		x := float64(sc * w) // rounded here: no fused multiply-add, as in Python
		s := sum + x
		if math.Abs(sum) >= math.Abs(x) {
			c += (sum - s) + x
		} else {
			c += (x - s) + sum
		}
		sum = s
		return nil
	})
	if err != nil {
		return 0, err
	}
	if !isMap && t.rewards.ok {
		return 0, docMisfit(t.path("rewards"), t.rewards.value, "a map")
	}
	if c != 0 && !math.IsNaN(c) && !math.IsInf(c, 0) {
		sum += c
	}
	return sum, nil
}

// rewardNumber reads a score or weight. The Reward model holds floats and
// cannot be None, so a null there is a NaN that JSON could not carry
// (JavaScript's JSON.stringify writes null, and so does readBody for
// Python's NaN): the reward is then non-finite, and null, as in the SDK.
func rewardNumber(v value) (float64, bool) {
	if v.isNull() {
		return math.NaN(), true
	}
	return v.float()
}

package sampletable

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/jsonscan"
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
			isList = m.value[0] == '['
		}
	}
	return isList
}

// optValue is a value that may be absent; null is absent. Its methods
// take absence as a value of no type, so a walk need not check first.
type optValue struct {
	value
	ok bool
}

func opt(v value) optValue { return optValue{v, !v.isNull()} }

// pick is member key of a map; absent for anything else.
func (o optValue) pick(key string) optValue {
	var out optValue
	_, _ = o.forMembers(func(k string, mv value) error {
		if k == key {
			out = opt(mv)
		}
		return nil
	})
	return out
}

func (o optValue) forMembers(fn func(key string, v value) error) (isMap bool, err error) {
	if !o.ok {
		return false, nil
	}
	return o.value.forMembers(fn)
}

func (o optValue) forMapElements(member func(key string, v value) error, done func(i int) error, notMap func(i int, v value) error) (isList bool, err error) {
	if !o.ok {
		return false, nil
	}
	return o.value.forMapElements(member, done, notMap)
}

func (o optValue) str() (string, bool) {
	if !o.ok {
		return "", false
	}
	return o.value.str()
}

func (o optValue) int() (int64, bool) {
	if !o.ok {
		return 0, false
	}
	return o.value.int()
}

func (o optValue) float() (float64, bool) {
	if !o.ok {
		return 0, false
	}
	return o.value.float()
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

// orNull is the value, or JSON null when it is absent.
func (o optValue) orNull() value {
	if o.ok {
		return o.value
	}
	return value{raw: "null"}
}

// document is a native document's top level.
type document struct {
	// text is the record as compact JSON: Record.Document, and the
	// native_wrapper of its row's info.
	text     string
	id, ok   optValue // read for an evaluation's samples (v0.go)
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
	text, changed := jsonscan.Rewrite(b.text, true, false)
	d.text = text
	if changed {
		_, _ = value{raw: text}.forMembers(member)
		return d
	}
	// The body was compact already: its members, read to recognise it,
	// are spans of the document's text.
	for _, m := range b.members {
		_ = member(m.key, value{raw: m.value})
	}
	return d
}

// fromDocument maps a native document (episodes-native.md). The step is
// attribute prime.work.step, else the body's run.work.step; eval work is
// attribute prime.work.type=eval or run.work.type "eval". Attributes
// prime.episode.<column> are not read: the document is the episode.
func fromDocument(attrs pcommon.Map, b body, created time.Time, sampleLimit int) (Record, error) {
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
	rec.Document = []byte(d.text)
	if eval {
		return rec, nil
	}
	if rec.Rows, err = d.project(rec.Step, created, sampleLimit); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// project gives the document's rows: one for its summary trace, or, when
// that row's sample is larger than sampleLimit, one per trace. Traces
// without branches have no row.
func (d *document) project(step int64, created time.Time, sampleLimit int) ([]Episode, error) {
	traces, err := readTraces(d.traces)
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
	row, err := sum.project(adv, true)
	if err != nil {
		return nil, err
	}
	ep := d.episode(step, created, row, adv, sum.infoWithWrapper(d.text))
	if sampleEnvelopeBytes+sampleFieldBytes+ep.Size <= sampleLimit {
		if row.branches == 0 {
			return nil, nil
		}
		return []Episode{ep}, nil
	}
	rows := make([]Episode, 0, len(traces))
	for i := range traces {
		tr, r := &traces[i], row
		if i != s {
			if err := tr.checkInfo(); err != nil {
				return nil, err
			}
			if r, err = tr.project(adv, true); err != nil {
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

// trainable tells a trace whose agent.trainable is true.
func (t *trace) trainable() bool { return t.agent.pick("trainable").isTrue() }

// isTrue tells the bool true.
func (o optValue) isTrue() bool {
	return o.ok && (o.raw == "true" || (o.raw == "" && o.v.Type() == pcommon.ValueTypeBool && o.v.Bool()))
}

func (d *document) episode(step int64, created time.Time, r traceRow, adv *float64, info string) Episode {
	ep := Episode{
		Step:            step,
		EnvName:         ptr(d.envName()),
		ProblemID:       r.problemID,
		Completion:      ptr(r.completion),
		Trajectory:      r.trajectory,
		Task:            r.task,
		Info:            &info,
		Reward:          r.reward,
		Advantage:       adv,
		Metrics:         ptr(r.metrics),
		Timing:          r.timing,
		NumInputTokens:  ptr(r.in),
		NumOutputTokens: ptr(r.out),
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

// trace is the members of one trace that its row, or its v0 sample
// (v0.go), reads.
type trace struct {
	index                                                     int
	agent, task, nodes, calls, rewards, metrics, info, timing optValue
	id, tools, isCompleted, stopCondition, errors             optValue // v0 only
}

// readTraces reads the members of every trace, in one pass over them.
func readTraces(list optValue) ([]trace, error) {
	var traces []trace
	var tr trace
	fields := map[string]*optValue{"agent": &tr.agent, "task": &tr.task, "nodes": &tr.nodes, "calls": &tr.calls,
		"rewards": &tr.rewards, "metrics": &tr.metrics, "info": &tr.info, "timing": &tr.timing,
		"id": &tr.id, "tools": &tr.tools, "is_completed": &tr.isCompleted, "stop_condition": &tr.stopCondition, "errors": &tr.errors}
	_, err := list.forMapElements(func(k string, v value) error {
		if f := fields[k]; f != nil {
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
// its place and takes the new value; later duplicates of it go.
func (t *trace) infoWithWrapper(doc string) string {
	var sb pjson.Buffer
	sb.Grow(t.info.orNull().jsonSize() + len(doc) + 64)
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
}

// project gives the trace's row. withAdvantage sets every trajectory
// branch's "advantage" to adv, as the table's rows carry it; an
// evaluation's v0 sample has no advantage key.
func (t *trace) project(adv *float64, withAdvantage bool) (traceRow, error) {
	var r traceRow
	if data := t.task.pick("data"); data.ok {
		r.task = ptr(data.json())
		if n, ok := data.pick("idx").int(); ok {
			r.problemID = &n
		}
	}
	r.metrics = "{}"
	if t.metrics.ok {
		r.metrics = t.metrics.json()
	}
	if t.timing.ok {
		r.timing = ptr(t.timing.json())
	}
	reward, err := t.reward()
	if err != nil {
		return traceRow{}, err
	}
	// Python's JSON cannot carry a non-finite reward: the SDK's sample
	// holds None for it.
	if !math.IsNaN(reward) && !math.IsInf(reward, 0) {
		r.reward = &reward
	}
	g, err := t.graph()
	if err != nil {
		return traceRow{}, err
	}
	if err := g.write(t, &r, adv, withAdvantage); err != nil {
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

// graphNode is one node of a trace's message graph.
type graphNode struct {
	parent   int // -1: a root
	message  optValue
	size     int // the message's JSON, estimated
	call     int // the last call naming the node, -1 for none
	hasChild bool
}

// callUsage is a model call's usage, as the branch token counts read it.
type callUsage struct {
	has                      bool
	input, total, completion int64
}

// graph is a trace's message graph and the usage of its calls.
type graph struct {
	nodes []graphNode
	calls []callUsage
}

func (t *trace) graph() (graph, error) {
	var g graph
	if !t.nodes.ok {
		return g, nil
	}
	n := graphNode{parent: -1, call: -1}
	var parent optValue
	isList, err := t.nodes.forMapElements(func(k string, v value) error {
		switch k {
		case "parent":
			parent = opt(v)
		case "message":
			n.message = opt(v)
		}
		return nil
	}, func(i int) error {
		if parent.ok {
			p, ok := parent.int()
			if !ok || p < 0 || p > math.MaxInt32 {
				return docMisfit(t.path(fmt.Sprintf("nodes[%d].parent", i)), parent.value, "the index of a node")
			}
			n.parent = int(p)
		}
		n.size = n.message.orNull().jsonSize()
		g.nodes = append(g.nodes, n)
		n, parent = graphNode{parent: -1, call: -1}, optValue{}
		return nil
	}, func(i int, v value) error {
		return docMisfit(t.path(fmt.Sprintf("nodes[%d]", i)), v, "a map")
	})
	if err != nil {
		return graph{}, err
	}
	if !isList {
		return graph{}, docMisfit(t.path("nodes"), t.nodes.value, "a list")
	}
	for i, n := range g.nodes {
		if n.parent >= len(g.nodes) {
			return graph{}, rejection(reject.BadValue, bodyField+"."+docTraces, "body key %s must be the index of a node (0 to %d), got %d",
				t.path(fmt.Sprintf("nodes[%d].parent", i)), len(g.nodes)-1, n.parent)
		}
		if n.parent >= 0 {
			g.nodes[n.parent].hasChild = true
		}
	}
	if err := t.readCalls(&g); err != nil {
		return graph{}, err
	}
	return g, nil
}

// readCalls reads the calls' usage and links every node to the last call
// that names it. A call naming no node of the trace is on no branch.
func (t *trace) readCalls(g *graph) error {
	if !t.calls.ok {
		return nil
	}
	var node, usage optValue
	isList, err := t.calls.forMapElements(func(k string, v value) error {
		switch k {
		case "node":
			node = opt(v)
		case "usage":
			usage = opt(v)
		}
		return nil
	}, func(i int) error {
		defer func() { node, usage = optValue{}, optValue{} }()
		u, err := t.readUsage(i, usage)
		if err != nil {
			return err
		}
		g.calls = append(g.calls, u)
		if !node.ok {
			return nil
		}
		n, ok := node.int()
		if !ok {
			return docMisfit(t.path(fmt.Sprintf("calls[%d].node", i)), node.value, "an int")
		}
		if n >= 0 && n < int64(len(g.nodes)) {
			g.nodes[n].call = i
		}
		return nil
	}, func(i int, v value) error {
		return docMisfit(t.path(fmt.Sprintf("calls[%d]", i)), v, "a map")
	})
	if err != nil {
		return err
	}
	if !isList {
		return docMisfit(t.path("calls"), t.calls.value, "a list")
	}
	return nil
}

// readUsage reads a call's usage: input tokens are prompt_tokens plus
// cached_input_tokens, the total adds completion_tokens. An absent count
// is 0.
func (t *trace) readUsage(i int, usage optValue) (callUsage, error) {
	if !usage.ok {
		return callUsage{}, nil
	}
	var counts [3]int64 // prompt, completion, cached
	keys := [3]string{"prompt_tokens", "completion_tokens", "cached_input_tokens"}
	var err error
	if isMap, _ := usage.forMembers(func(k string, v value) error {
		for j, key := range keys {
			if k != key {
				continue
			}
			counts[j] = 0
			if v.isNull() {
				return nil
			}
			var ok bool
			if counts[j], ok = v.int(); !ok {
				err = docMisfit(t.path(fmt.Sprintf("calls[%d].usage.%s", i, key)), v, "an int")
				return err
			}
		}
		return nil
	}); !isMap {
		return callUsage{}, docMisfit(t.path(fmt.Sprintf("calls[%d].usage", i)), usage.value, "a map")
	}
	if err != nil {
		return callUsage{}, err
	}
	input := counts[0] + counts[2]
	return callUsage{has: true, input: input, total: input + counts[1], completion: counts[1]}, nil
}

// write fills the row's trajectory, completion and token counts: one branch
// per leaf (a node no node names as parent), in ascending order, each the
// path from its root down to the leaf, with "advantage" = adv last when
// withAdvantage. A branch repeats its whole prefix, so paths are walked
// twice, to size the text and to write it, rather than kept: a wide, deep
// graph would hold leaves × depth of them.
func (g *graph) write(t *trace, r *traceRow, adv *float64, withAdvantage bool) error {
	var path []int
	size := 2
	for leaf, n := range g.nodes {
		if n.hasChild {
			continue
		}
		var err error
		if path, err = g.path(t, leaf, path[:0]); err != nil {
			return err
		}
		r.branches++
		size += 112 // the branch's keys and numbers
		for _, id := range path {
			size += g.nodes[id].size + 1
		}
		if size > maxObjectBytes {
			return rejection(reject.BadValue, bodyField+"."+docTraces, "body key %s makes branches of more than %d bytes, more than a row can hold", t.path("nodes"), maxObjectBytes)
		}
	}
	if r.branches == 0 {
		return nil
	}
	var scratch [32]byte
	advText := "null"
	if adv != nil {
		advText = string(pjson.AppendFloat(scratch[:0], *adv))
	}
	var sb pjson.Buffer
	sb.Grow(size)
	sb.WriteByte('[')
	var cstart, cend int
	for leaf, n := range g.nodes {
		if n.hasChild {
			continue
		}
		if sb.Len() > 1 {
			sb.WriteByte(',')
		}
		path, _ = g.path(t, leaf, path[:0])
		sb.WriteString(`{"` + branchMessages + `":`)
		cstart = sb.Len()
		sb.WriteByte('[')
		var prev, in, out int64
		for j, id := range path {
			if j > 0 {
				sb.WriteByte(',')
			}
			n := &g.nodes[id]
			n.message.orNull().writeJSON(&sb)
			if n.call < 0 || !g.calls[n.call].has {
				continue
			}
			u := g.calls[n.call]
			in += max(0, u.input-prev)
			prev = u.total
			out += u.completion
		}
		sb.WriteByte(']')
		cend = sb.Len()
		sb.WriteString(`,"` + colNumInputTokens + `":`)
		sb.Write(strconv.AppendInt(scratch[:0], in, 10))
		sb.WriteString(`,"` + colNumOutputTokens + `":`)
		sb.Write(strconv.AppendInt(scratch[:0], out, 10))
		if withAdvantage {
			sb.WriteString(`,"` + branchAdvantage + `":`)
			sb.WriteString(advText)
		}
		sb.WriteByte('}')
		r.in, r.out = in, out
	}
	sb.WriteByte(']')
	r.trajectory = sb.String()
	// The completion is the last branch's messages: a slice of the
	// trajectory's text, not a copy.
	r.completion = r.trajectory[cstart:cend]
	return nil
}

// path is the branch that ends at leaf, root first, in buf.
func (g *graph) path(t *trace, leaf int, buf []int) ([]int, error) {
	for id := leaf; id >= 0; id = g.nodes[id].parent {
		if len(buf) == len(g.nodes) {
			return nil, rejection(reject.BadValue, bodyField+"."+docTraces, "body key %s must form a tree, but node %d is its own ancestor", t.path("nodes"), id)
		}
		buf = append(buf, id)
	}
	slices.Reverse(buf)
	return buf, nil
}

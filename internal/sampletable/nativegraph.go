package sampletable

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/primeintellect/primeexporter/internal/pjson"
	"github.com/primeintellect/primeexporter/internal/reject"
)

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

// graph reads the trace's graph into p's room, which it keeps for the
// next trace's.
func (t *trace) graph(p *projection) (graph, error) {
	g := graph{nodes: p.nodes[:0], calls: p.calls[:0]}
	defer func() { p.nodes, p.calls = g.nodes[:0], g.calls[:0] }()
	if !t.nodes.ok {
		return g, nil
	}
	var picked [2]optValue // parent, message
	isList, err := t.nodes.forPicked([]string{"parent", "message"}, picked[:], func(i int) error {
		n := graphNode{parent: -1, call: -1, message: picked[1]}
		if parent := picked[0]; parent.ok {
			p, ok := parent.int()
			if !ok || p < 0 || p > math.MaxInt32 {
				return docMisfit(t.path(fmt.Sprintf("nodes[%d].parent", i)), parent.value, "the index of a node")
			}
			n.parent = int(p)
		}
		n.size = n.message.orNull().jsonSize()
		g.nodes = append(g.nodes, n)
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
	var picked [2]optValue // node, usage
	isList, err := t.calls.forPicked([]string{"node", "usage"}, picked[:], func(i int) error {
		node := picked[0]
		u, err := t.readUsage(i, picked[1])
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
// graph would hold leaves × depth of them. The text is written into a.
func (g *graph) write(a *Arena, t *trace, r *traceRow, adv *float64, withAdvantage bool, p *projection) error {
	path := p.path[:0]
	defer func() { p.path = path[:0] }()
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
	sb := pjson.NewBuffer(a.take(size))
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

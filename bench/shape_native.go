package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
)

// nativeFixture is a verifiers Episode.to_record() document (fixture/README.md).
//
//go:embed fixture/verifiers-episode.json
var nativeFixture []byte

// fixtureEpoch is when the fixture's episode starts (traces[0].timing.start):
// its timestamps move with the episode's.
const fixtureEpoch = 1755800000.0

// newNativeShape is the fixture as prime-otel sends a native document (one
// json.dumps of to_record(), compact, as the body's text), lengthened to
// the episode's size: its keys, their order and its graph of five nodes in
// two branches stay; its messages, token arrays and usage grow. The
// template is read once and checked by building one episode from it, so
// that filling cannot fail later.
func newNativeShape() (shape, error) {
	tmpl, err := readOrdered(nativeFixture)
	if err != nil {
		return shape{}, fmt.Errorf("the native fixture: %w", err)
	}
	doc, ok := tmpl.(object)
	if !ok {
		return shape{}, fmt.Errorf("the native fixture is not a JSON object")
	}
	if _, err := nativeDocument(doc, episode{seed: 1, step: 10, padding: 1000}); err != nil {
		return shape{}, fmt.Errorf("the native fixture does not have the shape the bench lengthens: %w", err)
	}
	return shape{name: "native", scope: primeOtelScope, fill: func(lr plog.LogRecord, ep episode) {
		text, err := nativeDocument(doc, ep)
		if err != nil {
			panic(err) // newNativeShape built one from the same template
		}
		setEpisode(lr, ep, text)
	}}, nil
}

// nativeDocument is the template made episode ep's: new ids, its step and
// times, its problem and a rollout whose text and token arrays share the
// padding (the answer's reasoning most, as a model's does).
func nativeDocument(tmpl object, ep episode) (string, error) {
	r := rand.New(rand.NewPCG(ep.seed, uint64(ep.step)))
	doc := clone(tmpl).(object)
	a, b := 2+r.IntN(98), 2+r.IntN(98)
	p := ep.padding
	question := fmt.Sprintf("What is %d*%d? ", a, b) + prose(r, p/8)
	answer := strconv.Itoa(a * b)

	doc.set("id", hexID(r))
	task, err := objectAt(doc, "task")
	if err != nil {
		return "", err
	}
	data, err := objectAt(task, "data")
	if err != nil {
		return "", err
	}
	data.set("idx", json.Number(strconv.FormatInt(ep.problemID, 10)))
	data.set("prompt", question)
	data.set("question", question)
	data.set("answer", answer)
	task.set("data", data)
	task.set("key", fmt.Sprintf("k-%d", ep.problemID))
	task.set("hash", hexID(r)[:16])
	doc.set("task", task)
	doc.set("group", object{{"id", fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32(), r.Uint64()>>16)}})
	run, err := objectAt(doc, "run")
	if err != nil {
		return "", err
	}
	work, err := objectAt(run, "work")
	if err != nil {
		return "", err
	}
	work.set("step", json.Number(strconv.FormatInt(ep.step, 10)))
	work.set("policy", object{{"start", json.Number(strconv.FormatInt(max(0, ep.step-1), 10))}, {"end", json.Number(strconv.FormatInt(ep.step, 10))}})
	run.set("work", work)
	doc.set("run", run)

	traces, ok := doc.get("traces").([]any)
	if !ok || len(traces) == 0 {
		return "", fmt.Errorf("traces is not a list of traces")
	}
	trace, ok := traces[0].(object)
	if !ok {
		return "", fmt.Errorf("traces[0] is not an object")
	}
	trace.set("id", hexID(r))
	trace.set("task", clone(task))
	if err := lengthenNodes(r, trace, question, answer, p); err != nil {
		return "", err
	}
	reward := float64(r.IntN(2))
	advantage := reward - 0.5 + (r.Float64()-0.5)/10
	rewards, err := objectAt(trace, "rewards")
	if err != nil {
		return "", err
	}
	for i := range rewards {
		if s, ok := rewards[i].value.(object); ok {
			s.set("score", pyFloat(reward))
			rewards[i].value = s
		}
	}
	info, err := objectAt(trace, "info")
	if err != nil {
		return "", err
	}
	info.set("advantage", pyFloat(advantage))
	trace.set("info", info)
	traces[0] = trace
	doc.set("traces", traces)

	// The episode ran when its record was stamped.
	shiftTimes(doc, float64(time.Duration(ep.timestamp))/float64(time.Second)-fixtureEpoch)
	var out bytes.Buffer
	writeOrdered(&out, doc)
	return out.String(), nil
}

// lengthenNodes gives the trace's five nodes (system; user and answer;
// a summary forked from the system node and a second answer) text and
// token arrays of the episode's size, and its calls the usage that fits.
func lengthenNodes(r *rand.Rand, trace object, question, answer string, p int) error {
	nodes, ok := trace.get("nodes").([]any)
	if !ok || len(nodes) != 5 {
		return fmt.Errorf("traces[0].nodes is not the fixture's five nodes")
	}
	type text struct{ content, reasoning string }
	texts := []text{
		{content: "Answer briefly. " + prose(r, p/32)},
		{content: question},
		{content: "Let me think... " + prose(r, 3*p/8) + " " + answer},
		{content: "Summary: " + prose(r, p/16) + " Answer now."},
		{content: prose(r, p/8) + " " + answer, reasoning: prose(r, p/4)},
	}
	advantage := (r.Float64() - 0.5) / 2
	tokens := make([]int, len(nodes))
	for i, n := range nodes {
		node, ok := n.(object)
		if !ok {
			return fmt.Errorf("traces[0].nodes[%d] is not an object", i)
		}
		msg, err := objectAt(node, "message")
		if err != nil {
			return err
		}
		msg.set("content", texts[i].content)
		if texts[i].reasoning != "" {
			msg.set("reasoning_content", texts[i].reasoning)
		}
		node.set("message", msg)
		tokens[i] = max(2, (len(texts[i].content)+len(texts[i].reasoning)+3)/4)
		sampled, _ := node.get("sampled").(bool)
		ids, mask := make([]int, tokens[i]), make([]bool, tokens[i])
		for j := range ids {
			ids[j] = r.IntN(150_000)
			mask[j] = sampled && j > 0 // the fixture's: the first token is the turn's header
		}
		node.set("token_ids", ids)
		node.set("mask", mask)
		if sampled {
			logprobs, advantages := make([]float64, tokens[i]-1), make([]float64, tokens[i]-1)
			for j := range logprobs {
				logprobs[j] = float64(-float32(r.ExpFloat64()))
				advantages[j] = advantage
			}
			node.set("logprobs", logprobs)
			node.set("advantages", advantages)
		}
		nodes[i] = node
	}
	calls, ok := trace.get("calls").([]any)
	if !ok || len(calls) != 2 {
		return fmt.Errorf("traces[0].calls is not the fixture's two calls")
	}
	usages := []object{
		{{"prompt_tokens", tokens[0] + tokens[1]}, {"completion_tokens", tokens[2] - 1}},
		{{"prompt_tokens", tokens[0] + tokens[3]}, {"completion_tokens", tokens[4] - 1}, {"cached_input_tokens", tokens[0]}},
	}
	for i, c := range calls {
		call, ok := c.(object)
		if !ok {
			return fmt.Errorf("traces[0].calls[%d] is not an object", i)
		}
		call.set("usage", usages[i])
		calls[i] = call
	}
	return nil
}

// objectAt is o's member key, which must be an object.
func objectAt(o object, key string) (object, error) {
	v, ok := o.get(key).(object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", key)
	}
	return v, nil
}

// shiftTimes moves every epoch timestamp (a number named timestamp, start
// or end past 2001) by delta seconds.
func shiftTimes(v any, delta float64) {
	switch v := v.(type) {
	case object:
		for i, m := range v {
			if n, ok := m.value.(json.Number); ok && (m.key == "timestamp" || m.key == "start" || m.key == "end") {
				if f, err := n.Float64(); err == nil && f > 1e9 {
					v[i].value = pyFloat(f + delta)
				}
				continue
			}
			shiftTimes(m.value, delta)
		}
	case []any:
		for _, e := range v {
			shiftTimes(e, delta)
		}
	}
}

// pyFloat is x as Python's json.dumps writes a float: an integral one
// with ".0".
func pyFloat(x float64) json.Number {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !bytes.ContainsAny([]byte(s), ".eE") {
		s += ".0"
	}
	return json.Number(s)
}

// hexID is a uuid4().hex-like id.
func hexID(r *rand.Rand) string {
	return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
}

package sampletable

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

// Verifiers-shaped episodes (issue 34): what a trainer running verifiers
// sends through prime-otel, which sends every episode as the compact JSON
// text of one json.dumps (python/src/prime_otel/run.py log_episodes). Three
// shapes, each at about 2 KB and 200 KB of record text:
//
//   - verifiers: a column-keyed record whose trajectory repeats the
//     completion: a branch per model call, each holding the prompt and the
//     completion up to that call, with tool calls, tool results and
//     reasoning_content.
//   - native: a native Episode.to_record() document, built from
//     testdata/verifiers-episode/episode.json (its structure kept: the
//     fork from the system node, a call with usage per assistant node, the
//     token arrays on every node), its chat lengthened and its turns
//     repeated. Its fixed part is 3 KB, so its small cell is 4 KB.
//   - tokens: the same document with short chat and long token-id, mask,
//     logprob and advantage arrays on its nodes, as verifiers records
//     them: at 200 KB mostly numbers.
//
// The text is drawn at random per episode (chatText), so that Snappy sees
// no repeats a real step would not have.

// verifiersShape is one cell of the benchmarks: a shape at a size.
type verifiersShape struct {
	name string
	// size is the record text wanted per episode, in bytes.
	size int
	rows int // episodes per step
	// build makes episode i's body at scale k (a multiplier of its
	// variable text); asJSON sends it as JSON text, else as a map.
	build  func(r *rand.Rand, i int, k float64) pcommon.Value
	asJSON bool
}

func verifiersShapes(tb testing.TB) []verifiersShape {
	tb.Helper()
	fixture := jsonValue(tb, fixtureText(tb))
	var shapes []verifiersShape
	for _, size := range []struct {
		name        string
		bytes, rows int
		turns       int
		// The native document's fixed part is 3 KB: its small cell is
		// the fixture's structure with a few hundred bytes of chat.
		native      string
		nativeBytes int
		nativeTurns int
	}{{"2KB", 2 << 10, 256, 2, "4KB", 4 << 10, 1}, {"200KB", 200 << 10, 32, 6, "200KB", 200 << 10, 6}} {
		turns, nativeTurns := size.turns, size.nativeTurns
		shapes = append(shapes,
			verifiersShape{name: "verifiers/" + size.name, size: size.bytes, rows: size.rows, asJSON: true,
				build: func(r *rand.Rand, i int, k float64) pcommon.Value { return verifiersBody(r, i, turns, k) }},
			verifiersShape{name: "verifiers-map/" + size.name, size: size.bytes, rows: size.rows,
				build: func(r *rand.Rand, i int, k float64) pcommon.Value { return verifiersBody(r, i, turns, k) }},
			verifiersShape{name: "native/" + size.native, size: size.nativeBytes, rows: size.rows, asJSON: true,
				build: func(r *rand.Rand, i int, k float64) pcommon.Value {
					return nativeBody(fixture, r, i, nativeTurns, k, 0)
				}},
			verifiersShape{name: "tokens/" + size.native, size: size.nativeBytes, rows: size.rows, asJSON: true,
				build: func(r *rand.Rand, i int, k float64) pcommon.Value {
					return nativeBody(fixture, r, i, nativeTurns, 0.3, k)
				}},
		)
	}
	return shapes
}

// records builds the step's records, their scale fitted so that a record's
// text is about s.size (or as small as the shape allows), and returns them
// with their total text bytes.
func (s verifiersShape) records(tb testing.TB) (bodies []pcommon.Value, attrs pcommon.Map, textBytes int) {
	tb.Helper()
	k := s.scale()
	attrs = pcommon.NewMap()
	attrs.PutInt(attrWorkStep, 20)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range s.rows {
		body := s.build(r, i, k)
		text := pjson.Encode(body)
		textBytes += len(text)
		if s.asJSON {
			body = pcommon.NewValueStr(text)
		}
		bodies = append(bodies, body)
	}
	return bodies, attrs, textBytes
}

// scale is the multiplier that brings a record to s.size: text grows
// linearly with it, so two probes give the fixed part and the slope.
func (s verifiersShape) scale() float64 {
	size := func(k float64) float64 {
		return float64(len(pjson.Encode(s.build(rand.New(rand.NewPCG(1, 1)), 0, k))))
	}
	const probe = 10
	fixed := size(0)
	slope := (size(probe) - fixed) / probe
	return max(0, (float64(s.size)-fixed)/slope)
}

// text is n bytes of chat, at least one.
func text(r *rand.Rand, n float64) string {
	return chatText(r, vocabulary(), max(1, int(n)))[:max(1, int(n))]
}

// verifiersBody is a column-keyed episode of turns model calls, each but
// the last calling a tool. Every branch of the trajectory holds the prompt
// and the completion up to its call, so the completion's messages are
// written again in every branch from theirs on.
func verifiersBody(r *rand.Rand, i, turns int, k float64) pcommon.Value {
	body := pcommon.NewValueMap()
	m := body.Map()
	m.PutStr("tag", "train")
	m.PutInt("problem_id", int64(i/8))
	prompt := m.PutEmptySlice("prompt")
	chatMessage(prompt, "system", text(r, 40*k))
	chatMessage(prompt, "user", text(r, 80*k))
	completion := pcommon.NewSlice()
	var ends []int // the completion's length after each call
	for t := range turns {
		a := completion.AppendEmpty().SetEmptyMap()
		a.PutStr("role", "assistant")
		a.PutStr("content", text(r, 30*k))
		a.PutStr("reasoning_content", text(r, 120*k))
		if t == turns-1 {
			ends = append(ends, completion.Len())
			break
		}
		id := fmt.Sprintf("call_%016x", r.Uint64())
		call := a.PutEmptySlice("tool_calls").AppendEmpty().SetEmptyMap()
		call.PutStr("id", id)
		call.PutStr("type", "function")
		fn := call.PutEmptyMap("function")
		fn.PutStr("name", "python")
		fn.PutStr("arguments", `{"code": "`+text(r, 40*k)+`\nprint(\"done\")"}`)
		ends = append(ends, completion.Len())
		tool := completion.AppendEmpty().SetEmptyMap()
		tool.PutStr("role", "tool")
		tool.PutStr("tool_call_id", id)
		tool.PutStr("content", text(r, 60*k))
	}
	completion.CopyTo(m.PutEmptySlice("completion"))
	m.PutStr("answer", fmt.Sprint(r.IntN(1000)))
	m.PutStr("env_name", "primeintellect/vf-math-python")
	m.PutStr("task", "vf-math-python")
	info := m.PutEmptyMap("info")
	info.PutStr("source", "train")
	info.PutInt("index", int64(i))
	m.PutDouble("reward", float64(r.IntN(2)))
	m.PutDouble("advantage", r.Float64()-0.5)
	metrics := m.PutEmptyMap("metrics")
	metrics.PutDouble("correct_answer", 1)
	metrics.PutInt("num_turns", int64(turns))
	timing := m.PutEmptyMap("timing")
	timing.PutDouble("generation_ms", r.Float64()*1000)
	timing.PutDouble("scoring_ms", r.Float64()*10)
	traj := m.PutEmptySlice("trajectory")
	for _, end := range ends {
		br := traj.AppendEmpty().SetEmptyMap()
		msgs := br.PutEmptySlice("messages")
		for j := range prompt.Len() {
			prompt.At(j).CopyTo(msgs.AppendEmpty())
		}
		for j := range end {
			completion.At(j).CopyTo(msgs.AppendEmpty())
		}
		br.PutInt("num_input_tokens", int64(r.IntN(4000)))
		br.PutInt("num_output_tokens", int64(r.IntN(1000)))
	}
	return body
}

func chatMessage(msgs pcommon.Slice, role, content string) {
	msg := msgs.AppendEmpty().SetEmptyMap()
	msg.PutStr("role", role)
	msg.PutStr("content", content)
}

// nativeBody is the fixture's document with its trace's nodes and calls
// rebuilt: a system and a user node, turns model calls down one chain (each
// but the last calling a tool), and the fixture's fork from the system
// node, a summary and a last answer: two branches, the first holding the
// chain. chat scales the messages' text, tokens the arrays of every node
// (a token per four bytes of its message at tokens 0, else tokens × 40
// more).
func nativeBody(fixture pcommon.Value, r *rand.Rand, i, turns int, chat, tokens float64) pcommon.Value {
	doc := pcommon.NewValueEmpty()
	fixture.CopyTo(doc)
	root := doc.Map()
	root.PutStr("id", fmt.Sprintf("%032x", r.Uint64()))
	traces, _ := root.Get(docTraces)
	tr := traces.Slice().At(0).Map()
	tr.PutStr("id", fmt.Sprintf("%032x", r.Uint64()))
	task, _ := tr.Get("task")
	data, _ := task.Map().Get("data")
	data.Map().PutInt("idx", int64(i/8))
	info, _ := tr.Get("info")
	info.Map().PutDouble("advantage", r.Float64()-0.5)

	nodes := tr.PutEmptySlice("nodes")
	calls := tr.PutEmptySlice("calls")
	ts := 1755800000.0
	node := func(parent int, msg pcommon.Map, sampled bool) {
		n := nodes.AppendEmpty().SetEmptyMap()
		if parent >= 0 {
			n.PutInt("parent", int64(parent))
		}
		msg.CopyTo(n.PutEmptyMap("message"))
		n.PutBool("sampled", sampled)
		ts += r.Float64()
		n.PutDouble("timestamp", ts)
		size := 0
		msg.Range(func(_ string, v pcommon.Value) bool { size += len(v.AsString()); return true })
		count := size/4 + int(tokens*40)
		ids, mask := n.PutEmptySlice("token_ids"), n.PutEmptySlice("mask")
		for range count {
			ids.AppendEmpty().SetInt(int64(r.IntN(151_000)))
			mask.AppendEmpty().SetBool(sampled)
		}
		n.PutEmptySlice("is_content")
		logprobs := n.PutEmptySlice("logprobs")
		if !sampled {
			return
		}
		adv := n.PutEmptySlice("advantages")
		for range count {
			logprobs.AppendEmpty().SetDouble(-r.ExpFloat64())
			adv.AppendEmpty().SetDouble(0.5)
		}
		c := calls.AppendEmpty().SetEmptyMap()
		c.PutInt("node", int64(nodes.Len()-1))
		c.PutStr("model", "Qwen/Qwen3-4B")
		sampling := c.PutEmptyMap("sampling")
		sampling.PutDouble("temperature", 1)
		sampling.PutInt("max_tokens", 4096)
		c.PutStr("endpoint", "/chat/completions")
		c.PutStr("finish_reason", "stop")
		u := c.PutEmptyMap("usage")
		u.PutInt("prompt_tokens", int64(r.IntN(8000)))
		u.PutInt("completion_tokens", int64(count))
		tm := c.PutEmptyMap("time")
		tm.PutDouble("start", ts-1)
		tm.PutDouble("end", ts)
	}
	msg := func(role string, n float64) pcommon.Map {
		m := pcommon.NewMap()
		m.PutStr("role", role)
		m.PutStr("content", text(r, n))
		return m
	}
	node(-1, msg("system", 40*chat), false)
	node(0, msg("user", 80*chat), false)
	for t := range turns {
		a := msg("assistant", 30*chat)
		a.PutStr("reasoning_content", text(r, 120*chat))
		if t < turns-1 {
			call := a.PutEmptySlice("tool_calls").AppendEmpty().SetEmptyMap()
			call.PutStr("id", fmt.Sprintf("call_%016x", r.Uint64()))
			call.PutStr("type", "function")
			fn := call.PutEmptyMap("function")
			fn.PutStr("name", "python")
			fn.PutStr("arguments", `{"code": "`+text(r, 40*chat)+`"}`)
		}
		node(nodes.Len()-1, a, true)
		if t < turns-1 {
			node(nodes.Len()-1, msg("tool", 60*chat), false)
		}
	}
	node(0, msg("user", 60*chat), false)
	last := msg("assistant", 30*chat)
	last.PutStr("reasoning_content", text(r, 120*chat))
	node(nodes.Len()-1, last, true)
	return doc
}

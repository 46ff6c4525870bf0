package sampletable

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

// benchShape is one realistic step: rows episodes whose chat text totals
// about textBytes each.
type benchShape struct {
	name      string
	rows      int
	branches  int
	messages  int // per branch
	msgBytes  int // per message
	promptLen int
	// extends: each branch holds the one before it and its own messages,
	// as verifiers records a multi-turn rollout (a branch per model call).
	extends bool
}

func benchShapes() []benchShape {
	return []benchShape{
		// A single-turn math rollout: system, user, assistant ≈ 2 KB.
		{name: "2KB", rows: 256, branches: 1, messages: 3, msgBytes: 680, promptLen: 600},
		// A long agentic rollout: 2 branches × 20 messages × 5 KB ≈ 200 KB.
		{name: "200KB", rows: 32, branches: 2, messages: 20, msgBytes: 5000, promptLen: 1000},
		// Its turns: the second branch holds the first one's 10 messages
		// and 10 more, the completion the 20 (≈ 150 KB of trajectory).
		{name: "200KB-turns", rows: 32, branches: 2, messages: 10, msgBytes: 5000, promptLen: 1000, extends: true},
	}
}

// vocabulary is the words of the generated chat text: drawn at random per
// episode, so neither dictionary encoding nor snappy sees repeats a real
// step would not have.
func vocabulary() []string {
	return strings.Fields(`the of and to a in is that for it as was with be by on not he this are or his from at which
	but have an they you were her she there been one all we their has would when if so what no out up into do can
	answer step therefore compute equation value total number let solve check result function return print def
	import class self list sum range len x y z n k i j 0 1 2 3 4 5 6 7 8 9 + - * / = ( ) { } [ ] : , .`)
}

func chatText(r *rand.Rand, words []string, n int) string {
	var sb strings.Builder
	sb.Grow(n + 16)
	for sb.Len() < n {
		sb.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			sb.WriteString("\n")
		} else {
			sb.WriteByte(' ')
		}
	}
	return sb.String()
}

// benchRecords builds the step's records as a trainer's OTel SDK sends
// them: a body map (or, asJSON, that map serialised into a string body).
// It returns them with their total string bytes.
func benchRecords(s benchShape, asJSON bool) (bodies []pcommon.Value, attrs pcommon.Map, textBytes int) {
	r := rand.New(rand.NewPCG(1, 2))
	words := vocabulary()
	attrs = pcommon.NewMap()
	attrs.PutInt(attrWorkStep, 10)
	roles := []string{"system", "user", "assistant"}
	for i := 0; i < s.rows; i++ {
		body := pcommon.NewValueMap()
		m := body.Map()
		m.PutStr("tag", "rollout")
		m.PutInt("problem_id", int64(i/8))
		m.PutStr("prompt", chatText(r, words, s.promptLen))
		m.PutStr("answer", fmt.Sprint(r.IntN(1000)))
		m.PutStr("env_name", "primeintellect/gsm8k")
		m.PutEmptyMap("task").PutStr("kind", "math")
		info := m.PutEmptyMap("info")
		info.PutStr("source", "train")
		info.PutInt("index", int64(i))
		m.PutDouble("reward", r.Float64())
		m.PutDouble("advantage", r.Float64()-0.5)
		metrics := m.PutEmptyMap("metrics")
		metrics.PutDouble("correct", 1)
		metrics.PutInt("turns", int64(s.messages))
		m.PutEmptyMap("timing").PutDouble("generation_ms", r.Float64()*1000)
		traj := m.PutEmptySlice("trajectory")
		for b := 0; b < s.branches; b++ {
			br := traj.AppendEmpty().SetEmptyMap()
			msgs := br.PutEmptySlice("messages")
			if s.extends && b > 0 {
				prev, _ := traj.At(b - 1).Map().Get("messages")
				prev.Slice().CopyTo(msgs)
			}
			for k := 0; k < s.messages; k++ {
				msg := msgs.AppendEmpty().SetEmptyMap()
				msg.PutStr("role", roles[k%len(roles)])
				msg.PutStr("content", chatText(r, words, s.msgBytes))
			}
			br.PutInt("num_input_tokens", int64(r.IntN(4000)))
			br.PutInt("num_output_tokens", int64(r.IntN(4000)))
		}
		textBytes += stringBytes(body)
		if asJSON {
			body = pcommon.NewValueStr(pjson.Encode(body))
		}
		bodies = append(bodies, body)
	}
	return bodies, attrs, textBytes
}

// stringBytes is the length of every string in v, keys included.
func stringBytes(v pcommon.Value) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return len(v.Str())
	case pcommon.ValueTypeMap:
		n := 0
		v.Map().Range(func(k string, mv pcommon.Value) bool {
			n += len(k) + stringBytes(mv)
			return true
		})
		return n
	case pcommon.ValueTypeSlice:
		n := 0
		for i := 0; i < v.Slice().Len(); i++ {
			n += stringBytes(v.Slice().At(i))
		}
		return n
	}
	return 0
}

// mapAll maps every body with a (nil: no arena) into eps, reusing its room.
func mapAll(tb testing.TB, a *Arena, bodies []pcommon.Value, attrs pcommon.Map, eps []Episode) []Episode {
	tb.Helper()
	eps = eps[:0]
	for _, body := range bodies {
		rec, err := FromRecordIn(a, attrs, body, 1, 0, testNow())
		if err != nil {
			tb.Fatal(err)
		}
		eps = append(eps, rec.Rows...)
	}
	return eps
}

// BenchmarkFromRecordAndEncode is the hot path: a step's records mapped
// and written as one object. MB/s counts the records' input text.
func BenchmarkFromRecordAndEncode(b *testing.B) {
	benchEncode(b, func() encodeFunc {
		enc := NewEncoder()
		return func(w io.Writer, eps []Episode) error { return enc.Encode(w, "run-1", 10, 0, eps) }
	})
}

// encodeFunc writes eps as one object of run-1, step 10, range 0.
type encodeFunc func(w io.Writer, eps []Episode) error

// benchEncode times newEncode's encoder (one per sub-benchmark, so none
// starts with buffers another shape grew) on every shape and body form.
func benchEncode(b *testing.B, newEncode func() encodeFunc) {
	for _, s := range benchShapes() {
		for _, form := range []struct {
			name   string
			asJSON bool
		}{{"map-body", false}, {"json-body", true}} {
			b.Run(s.name+"/"+form.name, func(b *testing.B) {
				bodies, attrs, textBytes := benchRecords(s, form.asJSON)
				var out bytes.Buffer
				eps := make([]Episode, 0, s.rows)
				encode := newEncode()
				b.SetBytes(int64(textBytes))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					eps = mapAll(b, nil, bodies, attrs, eps)
					out.Reset()
					if err := encode(&out, eps); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(s.rows*b.N)/b.Elapsed().Seconds(), "episodes/s")
				b.ReportMetric(float64(out.Len()), "object-bytes")
			})
		}
	}
}

// BenchmarkFromRecord is the mapping alone.
func BenchmarkFromRecord(b *testing.B) {
	for _, s := range benchShapes() {
		for _, form := range []struct {
			name   string
			asJSON bool
		}{{"map-body", false}, {"json-body", true}} {
			b.Run(s.name+"/"+form.name, func(b *testing.B) {
				bodies, attrs, textBytes := benchRecords(s, form.asJSON)
				eps := make([]Episode, 0, s.rows)
				b.SetBytes(int64(textBytes))
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					eps = mapAll(b, nil, bodies, attrs, eps)
				}
				b.ReportMetric(float64(s.rows*b.N)/b.Elapsed().Seconds(), "episodes/s")
			})
		}
	}
}

// BenchmarkFromRecordIntoArena is the mapping as the exporter runs it: the
// step's rows written into an arena released after each op.
func BenchmarkFromRecordIntoArena(b *testing.B) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			bodies, attrs, textBytes := benchRecords(s, false)
			pool := NewArenaPool(64)
			eps := make([]Episode, 0, s.rows)
			b.SetBytes(int64(textBytes))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				a := pool.Arena()
				eps = mapAll(b, a, bodies, attrs, eps)
				a.Release()
			}
			b.ReportMetric(float64(s.rows*b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}

// BenchmarkSnappyFloor is the floor under the encoder: Snappy over the
// same rows' text, column by column in pages of the writer's size, which
// the contract requires of any writer (AppendCellText). MB/s counts the
// same input text as above.
func BenchmarkSnappyFloor(b *testing.B) {
	for _, s := range benchShapes() {
		b.Run(s.name, func(b *testing.B) {
			bodies, attrs, textBytes := benchRecords(s, false)
			eps := mapAll(b, nil, bodies, attrs, nil)
			text := AppendCellText(nil, "run-1", 10, eps)
			dst := make([]byte, s2.MaxEncodedLen(PageSize))
			b.SetBytes(int64(textBytes))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for at := 0; at < len(text); at += PageSize {
					s2.EncodeSnappy(dst, text[at:min(len(text), at+PageSize)])
				}
			}
			b.ReportMetric(float64(s.rows*b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}

// benchDocuments builds, for every record of benchRecords, a native
// verifiers document of the same text: one trainable trace whose nodes
// make the same branches (sharing their first message, as a message graph
// does), a call with usage per assistant node, the prompt in task.data,
// and the column-keyed record's extra text (the prefix its branches
// repeat) as info padding, so that both carry the same string bytes.
func benchDocuments(s benchShape, asJSON bool) (bodies []pcommon.Value, attrs pcommon.Map, textBytes int) {
	columns, attrs, _ := benchRecords(s, false)
	r := rand.New(rand.NewPCG(3, 4))
	words := vocabulary()
	roles := []string{"system", "user", "assistant"}
	for i, col := range columns {
		body := pcommon.NewValueMap()
		m := body.Map()
		m.PutStr("id", fmt.Sprintf("%032x", i))
		env := m.PutEmptyMap("env")
		env.PutStr("id", "primeintellect/gsm8k")
		env.PutStr("name", "gsm8k")
		run := m.PutEmptyMap("run")
		run.PutStr("type", "train")
		run.PutStr("id", "prl-bench")
		work := run.PutEmptyMap("work")
		work.PutStr("type", "train")
		work.PutInt("step", 10)
		m.PutBool("ok", true)
		m.PutEmptySlice("errors")
		tr := m.PutEmptySlice("traces").AppendEmpty().SetEmptyMap()
		tr.PutInt("version", 1)
		tr.PutStr("id", fmt.Sprintf("%032x", i+1))
		task := tr.PutEmptyMap("task")
		task.PutStr("type", "MathTask")
		data := task.PutEmptyMap("data")
		data.PutInt("idx", int64(i/8))
		data.PutStr("prompt", chatText(r, words, s.promptLen))
		data.PutStr("answer", fmt.Sprint(r.IntN(1000)))
		agent := tr.PutEmptyMap("agent")
		agent.PutEmptyMap("config")
		agent.PutStr("name", "solver")
		agent.PutBool("trainable", true)
		nodes := tr.PutEmptySlice("nodes")
		calls := tr.PutEmptySlice("calls")
		node := func(parent int, role string) {
			n := nodes.AppendEmpty().SetEmptyMap()
			if parent >= 0 {
				n.PutInt("parent", int64(parent))
			}
			msg := n.PutEmptyMap("message")
			msg.PutStr("role", role)
			msg.PutStr("content", chatText(r, words, s.msgBytes))
			n.PutBool("sampled", role == "assistant")
			if role == "assistant" {
				c := calls.AppendEmpty().SetEmptyMap()
				c.PutInt("node", int64(nodes.Len()-1))
				u := c.PutEmptyMap("usage")
				u.PutInt("prompt_tokens", int64(r.IntN(4000)))
				u.PutInt("completion_tokens", int64(r.IntN(4000)))
			}
		}
		node(-1, roles[0])
		for b := 0; b < s.branches; b++ {
			for k := 1; k < s.messages; k++ {
				parent := nodes.Len() - 1
				if k == 1 {
					parent = 0
				}
				node(parent, roles[k%len(roles)])
			}
		}
		rewards := tr.PutEmptyMap("rewards").PutEmptyMap("correct")
		rewards.PutDouble("score", r.Float64())
		rewards.PutDouble("weight", 1)
		metrics := tr.PutEmptyMap("metrics")
		metrics.PutDouble("correct", 1)
		metrics.PutInt("turns", int64(s.messages))
		info := tr.PutEmptyMap("info")
		info.PutDouble("advantage", r.Float64()-0.5)
		tr.PutEmptyMap("timing").PutDouble("start", r.Float64()*1000)
		if pad := stringBytes(col) - stringBytes(body) - len("pad"); pad > 0 {
			info.PutStr("pad", chatText(r, words, pad)[:pad])
		}
		textBytes += stringBytes(body)
		if asJSON {
			body = pcommon.NewValueStr(pjson.Encode(body))
		}
		bodies = append(bodies, body)
	}
	return bodies, attrs, textBytes
}

// BenchmarkDocumentAgainstColumns maps the same step's records as native
// documents and as column-keyed bodies of equal text. MB/s counts the
// records' string bytes, the same for both.
func BenchmarkDocumentAgainstColumns(b *testing.B) {
	for _, s := range benchShapes() {
		for _, form := range []struct {
			name   string
			asJSON bool
		}{{"map-body", false}, {"json-body", true}} {
			for _, kind := range []struct {
				name  string
				build func(benchShape, bool) ([]pcommon.Value, pcommon.Map, int)
			}{{"columns", benchRecords}, {"document", benchDocuments}} {
				b.Run(s.name+"/"+form.name+"/"+kind.name, func(b *testing.B) {
					bodies, attrs, textBytes := kind.build(s, form.asJSON)
					eps := make([]Episode, 0, s.rows)
					b.SetBytes(int64(textBytes))
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						eps = mapAll(b, nil, bodies, attrs, eps)
					}
					b.ReportMetric(float64(s.rows*b.N)/b.Elapsed().Seconds(), "episodes/s")
				})
			}
		}
	}
}

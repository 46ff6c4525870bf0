package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// episode is what one prime.episode record derives from.
type episode struct {
	seed      uint64 // makes the chat text, so every episode is distinct
	step      int64  // prime.work.step
	problemID int64
	timestamp pcommon.Timestamp
	// padding is the length of filler text in the episode's messages; the
	// record's encoded size is its fixed part plus this.
	padding int
}

// vocabulary is the filler's words: pseudo-words with English-like letter
// frequencies, drawn with Zipf's law (fill), so that gzip and snappy see
// text that compresses about as natural text does (gzip ≈ 3:1), neither
// random bytes nor a few words repeated.
var vocabulary = pseudoWords(5000)

func pseudoWords(n int) []string {
	const letters = "etaoinshrdlcumwfgypbvkjxqz" // most frequent first
	r := rand.New(rand.NewPCG(7, 11))
	words := make([]string, n)
	for i := range words {
		w := make([]byte, 1+r.IntN(4)+r.IntN(5))
		for j := range w {
			w[j] = letters[min(len(letters)-1, int(r.ExpFloat64()*5))]
		}
		words[i] = string(w)
	}
	return words
}

// fill appends exactly n bytes of words drawn from r.
func fill(b *strings.Builder, r *rand.Rand, n int) {
	z := rand.NewZipf(r, 1.1, 1, uint64(len(vocabulary)-1))
	end := b.Len() + n
	for b.Len() < end {
		w := vocabulary[z.Uint64()]
		if room := end - b.Len(); len(w)+1 > room {
			b.WriteString(strings.Repeat(".", room))
			break
		}
		b.WriteByte(' ')
		b.WriteString(w)
	}
}

// fillEpisode writes ep into lr the way a verifiers trainer's episode
// reaches the exporter (docs/telemetry.md section 3): the event name, the
// dispatch step as an attribute, the sample table's columns in a map body,
// one two-turn trajectory whose last branch gives the completion and the
// token counts.
func fillEpisode(lr plog.LogRecord, ep episode) {
	r := rand.New(rand.NewPCG(ep.seed, uint64(ep.step)))
	a, b := 10+r.IntN(90), 1+r.IntN(50)

	text := func(head string, n int) string {
		var sb strings.Builder
		sb.Grow(len(head) + n)
		sb.WriteString(head)
		fill(&sb, r, n)
		return sb.String()
	}
	// The question takes a quarter of the padding, the reasoning the rest.
	question := text(fmt.Sprintf("Problem %d: a crate holds %d apples and a farmer adds %d more. How many now?", ep.problemID, a, b), ep.padding/4)
	reasoning := text("Let me add the two amounts.", ep.padding-ep.padding/4)
	final := fmt.Sprintf(`The answer is \boxed{%d}.`, a+b)

	lr.SetEventName("prime.episode")
	lr.SetTimestamp(ep.timestamp)
	lr.Attributes().PutInt("prime.work.step", ep.step)

	body := lr.Body().SetEmptyMap()
	body.PutStr("tag", "train")
	body.PutInt("problem_id", ep.problemID)
	body.PutStr("prompt", question)
	body.PutStr("answer", fmt.Sprint(a+b))
	body.PutStr("env_name", "primeintellect/vf-math")
	body.PutStr("task", "vf-math")
	body.PutDouble("reward", float64(r.IntN(2)))
	body.PutDouble("advantage", r.Float64()-0.5)

	traj := body.PutEmptySlice("trajectory")
	history := [][2]string{
		{"system", "You are a careful math tutor. Think step by step, then give the final answer as \\boxed{N}."},
		{"user", question},
		{"assistant", reasoning + " <tool>calculator(" + fmt.Sprint(a, " + ", b) + ")</tool>"},
		{"user", fmt.Sprintf("Tool result: %d", a+b)},
		{"assistant", final},
	}
	// Each assistant message ends a branch holding everything before it,
	// as verifiers records multi-turn rollouts.
	for _, end := range []int{3, 5} {
		branch := traj.AppendEmpty().SetEmptyMap()
		msgs := branch.PutEmptySlice("messages")
		for _, m := range history[:end] {
			msg := msgs.AppendEmpty().SetEmptyMap()
			msg.PutStr("role", m[0])
			msg.PutStr("content", m[1])
		}
		branch.PutInt("num_input_tokens", int64(end*40+ep.padding/8))
		branch.PutInt("num_output_tokens", int64(20+ep.padding/8))
	}

	metrics := body.PutEmptyMap("metrics")
	metrics.PutDouble("correct", 1)
	metrics.PutDouble("formatted", float64(r.IntN(2)))
	timing := body.PutEmptyMap("timing")
	timing.PutDouble("generation_ms", 200+r.Float64()*1800)
	timing.PutDouble("scoring_ms", 1+r.Float64()*20)
}

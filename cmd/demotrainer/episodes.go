package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// episodeSpec is everything one episode's body derives from. The simulation
// (simulation.go) decides the outcome; this file writes the chat that goes
// with it.
type episodeSpec struct {
	seed uint64
	// dispatchStep is the step the episode was dispatched at: its
	// prime.work.step, one less than the step it is trained in for an
	// off-policy straggler.
	dispatchStep int
	// index tells apart the episodes of one step (eval ones included).
	index     int
	eval      bool
	problemID int64
	// env is the environment as configured, possibly pinned (`slug@version`).
	env string
	// textBytes is the length of the chat text, the sum of the message
	// contents of the last trajectory branch.
	textBytes int
	// turns is 1 for a single answer, 2 for a tool call and a final answer;
	// each turn is one trajectory branch.
	turns     int
	correct   bool
	formatted bool
	reward    float64
	advantage float64
}

// chatMessage is one message of a chat completion.
type chatMessage struct{ role, content string }

// systemPrompt opens every conversation.
const systemPrompt = `You are a careful math tutor. Think step by step, then give the final answer as \boxed{N}.`

// fillerVocabulary makes up the deterministic padding that brings an
// episode's chat text to the requested size.
const fillerVocabulary = "first we note that the total is a sum of both parts so adding them gives " +
	"count check again carefully each apple crate holds more step then result number careful " +
	"reasoning keeps arithmetic honest and simple"

// chat is an episode's conversation: the branches of its trajectory, each
// holding the whole history up to and including its final message.
type chat struct {
	prompt   string
	answer   string
	branches [][]chatMessage
}

// problemStream is the random stream of the problems, apart from every
// run's -seed.
const problemStream = 0x70b1e3

// buildChat writes the conversation of spec: a problem about a + b, solved
// right or wrong and boxed or not as spec says, padded so that the last
// branch's message contents add up to spec.textBytes (or to the fixed text
// alone when that is already longer).
//
// The question is the problem's alone, as a dataset's is: its numbers and
// its padding derive from the problem id, not from the run's seed or the
// answer, so the rollouts of one problem, and runs of other seeds, ask it in
// the same words (prime-sync compare puts their answers side by side).
func buildChat(spec episodeSpec) chat {
	q := rand.New(rand.NewPCG(uint64(spec.problemID), problemStream))
	a, b := 10+q.IntN(90), 1+q.IntN(50)
	r := rand.New(rand.NewPCG(spec.seed, uint64(spec.dispatchStep)<<24|uint64(spec.index)<<1|boolBit(spec.eval)))
	answer := a + b
	given := answer
	if !spec.correct {
		given = answer + 1 + r.IntN(9)
	}
	final := fmt.Sprintf(" The answer is %d.", given)
	if spec.formatted {
		final = fmt.Sprintf(` The answer is \boxed{%d}.`, given)
	}

	question := [2]string{
		fmt.Sprintf("Problem %d (%s): A crate holds %d apples and a farmer adds %d more.", spec.problemID, trainerlib.EnvShortName(spec.env), a, b),
		" How many apples are in the crate now?",
	}
	// A message is its fixed parts with one filler slot between them.
	type slotted struct {
		role       string
		head, tail string
	}
	msgs := []slotted{
		{role: "system", head: systemPrompt},
		{role: "user", head: question[0], tail: question[1]},
	}
	if spec.turns > 1 {
		msgs = append(msgs,
			slotted{role: "assistant", head: "Let me add the two amounts.", tail: fmt.Sprintf(" <tool>calculator(%d + %d)</tool>", a, b)},
			slotted{role: "user", head: fmt.Sprintf("Tool result: %d", answer)},
			slotted{role: "assistant", head: "The calculator confirms the sum.", tail: final},
		)
	} else {
		msgs = append(msgs, slotted{role: "assistant", head: "Let me add the two amounts.", tail: final})
	}

	fixed := 0
	for _, m := range msgs {
		fixed += len(m.head) + len(m.tail)
	}
	// The question takes a quarter of the text (what its fixed words leave
	// of it), the reasoning the rest, split evenly between the assistant
	// turns.
	pad := max(0, spec.textBytes-fixed)
	padding := make([]int, len(msgs))
	padding[1] = min(pad, max(0, spec.textBytes/4-len(msgs[1].head)-len(msgs[1].tail)))
	var assistants []int
	for i, m := range msgs {
		if m.role == "assistant" {
			assistants = append(assistants, i)
		}
	}
	rest := pad - padding[1]
	for k, i := range assistants {
		padding[i] = rest / len(assistants)
		if k == len(assistants)-1 {
			padding[i] = rest - (len(assistants)-1)*(rest/len(assistants))
		}
	}

	words := strings.Fields(fillerVocabulary)
	history := make([]chatMessage, len(msgs))
	for i, m := range msgs {
		fill := r
		if i == 1 {
			fill = q // the question's padding is the problem's too
		}
		history[i] = chatMessage{role: m.role, content: m.head + trainerlib.Filler(fill, words, padding[i]) + m.tail}
	}
	c := chat{prompt: history[1].content, answer: fmt.Sprint(answer)}
	// Each assistant message ends a branch that holds everything before it.
	for _, i := range assistants {
		c.branches = append(c.branches, history[:i+1])
	}
	return c
}

// completion is the last branch's messages after the prompt.
func (c chat) completion() []chatMessage {
	return c.branches[len(c.branches)-1][2:]
}

// episodeBody is the prime.episode body of spec: a map with the sample
// table's columns, as telemetry.md section 3 reads it.
func episodeBody(spec episodeSpec) attribute.Value {
	c := buildChat(spec)
	r := rand.New(rand.NewPCG(spec.seed^0x5eed, uint64(spec.dispatchStep)<<24|uint64(spec.index)<<1|boolBit(spec.eval)))

	branches := make([]attribute.Value, len(c.branches))
	for i, msgs := range c.branches {
		last := msgs[len(msgs)-1]
		branches[i] = attribute.MapValue(
			attribute.KeyValue{Key: "messages", Value: messagesValue(msgs)},
			attribute.Int("num_input_tokens", tokens(msgs[:len(msgs)-1])),
			attribute.Int("num_output_tokens", tokens([]chatMessage{last})),
		)
	}
	generation := trainerlib.RoundTo(200+r.Float64()*1800, 1)
	scoring := trainerlib.RoundTo(1+r.Float64()*20, 1)
	tag := "train"
	if spec.eval {
		tag = "eval"
	}
	return attribute.MapValue(
		attribute.String("tag", tag),
		attribute.Int64("problem_id", spec.problemID),
		attribute.String("prompt", c.prompt),
		attribute.KeyValue{Key: "completion", Value: messagesValue(c.completion())},
		attribute.Slice("trajectory", branches...),
		attribute.String("answer", c.answer),
		attribute.String("env_name", trainerlib.EnvSlug(spec.env)),
		attribute.String("task", trainerlib.EnvShortName(spec.env)),
		attribute.Map("info",
			attribute.String("source", "demotrainer"),
			attribute.Int64("seed", int64(spec.seed)),
		),
		attribute.Float64("reward", spec.reward),
		attribute.Float64("advantage", spec.advantage),
		attribute.Map("metrics",
			attribute.Float64("correct", float64(boolBit(spec.correct))),
			attribute.Float64("format", float64(boolBit(spec.formatted))),
			attribute.Int("num_turns", spec.turns),
		),
		attribute.Map("timing",
			attribute.Float64("generation_ms", generation),
			attribute.Float64("scoring_ms", scoring),
			attribute.Float64("total_ms", trainerlib.RoundTo(generation+scoring, 1)),
		),
	)
}

func messagesValue(msgs []chatMessage) attribute.Value {
	vals := make([]attribute.Value, len(msgs))
	for i, m := range msgs {
		vals[i] = attribute.MapValue(attribute.String("role", m.role), attribute.String("content", m.content))
	}
	return attribute.SliceValue(vals...)
}

// tokens estimates a token count at four bytes a token.
func tokens(msgs []chatMessage) int {
	n := 0
	for _, m := range msgs {
		n += len(m.content)
	}
	return (n + 3) / 4
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

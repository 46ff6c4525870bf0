package main

import (
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/plog"
)

// tokenArrays are a rollout's token ids and logprobs as python/bench/cost.py
// (prime-otel's own cost bench) has a trainer send them beside the text.
type tokenArrays struct {
	PromptIDs          []int     `json:"prompt_ids"`
	CompletionIDs      []int     `json:"completion_ids"`
	CompletionLogprobs []float64 `json:"completion_logprobs"`
	CompletionMask     []int     `json:"completion_mask"`
}

// fillTokens writes cost.py's array_episode: a short chat episode whose one
// trajectory branch also carries its token arrays, sent as prime-otel sends
// it. The arrays take fifteen sixteenths of the padding (the text is in the
// record twice), so a large episode is mostly numbers. A logprob is a float32 (as an inference server computes
// it) widened to a float64, so it prints with Python's 17 or so digits.
func fillTokens(lr plog.LogRecord, ep episode) {
	r := rand.New(rand.NewPCG(ep.seed, uint64(ep.step)))
	a := 1 + r.IntN(1000)
	text := ep.padding / 16
	messages := []chatMessage{
		{Role: "system", Content: "Answer with a number."},
		{Role: "user", Content: fmt.Sprintf("What is %d+%d? ", a, a+1) + prose(r, text/3)},
		{Role: "assistant", Content: prose(r, text-text/3) + fmt.Sprintf(" So it is %d.", 2*a+1)},
	}
	// A completion token costs about 31 bytes of JSON (id, logprob, mask),
	// a prompt token 7: an even split of tokens, as cost.py's.
	n := max(1, (ep.padding-text)/38)
	arrays := &tokenArrays{PromptIDs: make([]int, n), CompletionIDs: make([]int, n), CompletionLogprobs: make([]float64, n), CompletionMask: make([]int, n)}
	for i := range n {
		arrays.PromptIDs[i] = r.IntN(150_000)
		arrays.CompletionIDs[i] = r.IntN(150_000)
		arrays.CompletionLogprobs[i] = float64(-float32(r.ExpFloat64()))
		arrays.CompletionMask[i] = 1
	}
	reward := float64(a % 2)
	doc := columnEpisode{
		Prompt: messages[:2], Completion: messages[2:], Answer: fmt.Sprint(2*a + 1), EnvName: "gsm8k",
		Reward: reward, Advantage: 0.5 - reward,
		Trajectory: []trajectoryStep{{Messages: messages, NumInputTokens: n, NumOutputTokens: n, Tokens: arrays}},
		Info:       map[string]any{"i": ep.seed},
	}
	setEpisode(lr, ep, jsonText(doc))
}

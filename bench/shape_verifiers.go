package main

import (
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/plog"
)

// The column-keyed episode as verifiers' to_record() writes it and
// prime-otel sends it (python/src/prime_otel/run.py log_episodes: one
// json.dumps of the record, the body a string): field order as written.
type (
	chatMessage struct {
		Role             string     `json:"role"`
		Content          string     `json:"content"`
		ReasoningContent string     `json:"reasoning_content,omitempty"`
		ToolCalls        []toolCall `json:"tool_calls,omitempty"`
		ToolCallID       string     `json:"tool_call_id,omitempty"`
	}
	toolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function toolFunction `json:"function"`
	}
	toolFunction struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // JSON text, as OpenAI's API has it
	}
	trajectoryStep struct {
		Messages        []chatMessage `json:"messages"`
		NumInputTokens  int           `json:"num_input_tokens"`
		NumOutputTokens int           `json:"num_output_tokens"`
		Tokens          *tokenArrays  `json:"tokens,omitempty"`
	}
	columnEpisode struct {
		Prompt     []chatMessage      `json:"prompt"`
		Completion []chatMessage      `json:"completion"`
		Answer     string             `json:"answer"`
		Task       string             `json:"task,omitempty"`
		EnvName    string             `json:"env_name"`
		ProblemID  int64              `json:"problem_id,omitempty"`
		Reward     float64            `json:"reward"`
		Advantage  float64            `json:"advantage"`
		Trajectory []trajectoryStep   `json:"trajectory"`
		Info       map[string]any     `json:"info"`
		Metrics    map[string]float64 `json:"metrics,omitempty"`
		Timing     map[string]float64 `json:"timing,omitempty"`
	}
)

// tokensOf is a model's token count for text, at about 4 bytes a token.
func tokensOf(msgs ...chatMessage) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + len(m.ReasoningContent)
		for _, c := range m.ToolCalls {
			n += len(c.Function.Arguments)
		}
	}
	return (n + 3) / 4
}

// fillVerifiers writes a tool-using rollout of two turns: the prompt
// (system and user), an assistant turn that reasons and calls a tool, the
// tool's answer, and a final assistant turn that reasons and answers. As
// verifiers records it, the completion is those three messages and each
// trajectory step holds the whole context up to its turn: the prompt and
// the first turn are in the record three times, the rest twice. Two turns,
// not more, so that the small episode is still about 2 KB.
func fillVerifiers(lr plog.LogRecord, ep episode) {
	r := rand.New(rand.NewPCG(ep.seed, uint64(ep.step)))
	a, b := 100+r.IntN(900), 10+r.IntN(90)
	p := ep.padding
	// The padding's shares: the reasoning of each turn a quarter, the
	// question, the tool's output and the answer an eighth each, the rest
	// the code and the first turn's words.
	prompt := []chatMessage{
		{Role: "system", Content: "Think step by step. Use the python tool for arithmetic. Answer as \\boxed{N}."},
		{Role: "user", Content: fmt.Sprintf("A depot ships %d crates a day for %d days. How many in all? ", a, b) + prose(r, p/8)},
	}
	call := toolCall{ID: fmt.Sprintf("call_%08x", r.Uint32()), Type: "function", Function: toolFunction{
		Name: "python", Arguments: jsonText(map[string]string{"code": code(r, p/16)}),
	}}
	completion := []chatMessage{
		{Role: "assistant", ReasoningContent: prose(r, p/4), Content: prose(r, p/16), ToolCalls: []toolCall{call}},
		{Role: "tool", ToolCallID: call.ID, Content: fmt.Sprint(a*b, "\n") + prose(r, p/8)},
		{Role: "assistant", ReasoningContent: prose(r, p/4), Content: prose(r, p/8) + fmt.Sprintf(" \\boxed{%d}", a*b)},
	}
	var traj []trajectoryStep
	for _, end := range []int{1, 3} {
		msgs := append(append([]chatMessage{}, prompt...), completion[:end]...)
		traj = append(traj, trajectoryStep{Messages: msgs, NumInputTokens: tokensOf(msgs[:len(msgs)-1]...), NumOutputTokens: tokensOf(msgs[len(msgs)-1])})
	}
	reward := float64(r.IntN(2))
	doc := columnEpisode{
		Prompt: prompt, Completion: completion, Answer: fmt.Sprint(a * b), Task: "math-python",
		EnvName: "math-python", ProblemID: ep.problemID, Reward: reward, Advantage: reward - 0.5 + (r.Float64()-0.5)/10,
		Trajectory: traj,
		Info:       map[string]any{"num_tool_calls": 1},
		Metrics:    map[string]float64{"correct_answer": reward, "num_turns": 2},
		Timing:     map[string]float64{"generation_ms": 800 + r.Float64()*9000, "scoring_ms": 1 + r.Float64()*20},
	}
	setEpisode(lr, ep, jsonText(doc))
}

// setEpisode sets what every prime-otel episode event has: the event name,
// the time of the call, prime.work.step and the JSON text body.
func setEpisode(lr plog.LogRecord, ep episode, body string) {
	lr.SetEventName("prime.episode")
	lr.SetTimestamp(ep.timestamp)
	lr.Attributes().PutInt("prime.work.step", ep.step)
	lr.Body().SetStr(body)
}

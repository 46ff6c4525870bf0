package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// evaluation is everything the run's documents derive from: the plan of its
// episodes and what every document repeats.
type evaluation struct {
	// runnerID is the runner's own id, the documents' run.id (verifiers'
	// eval CLI stamps its own; it is not the platform's evaluation id).
	runnerID   string
	runnerName string
	model      string
	// contentBytes is the sum of the message contents of a trace.
	contentBytes int
	seed         uint64
	episodes     []episodeSpec
}

// episodeSpec is one rollout of one example.
type episodeSpec struct {
	// index is the episode's position in the evaluation.
	index int
	// example is the example's index, the document's task.data.idx; the
	// rollouts of one example follow each other.
	example int
	// rollout numbers the example's rollouts from 0, in the order sent.
	rollout int
	// env is the environment as configured, possibly pinned (`slug@version`).
	env string
	// a and b make the example's question, "What is a*b?".
	a, b int
	// given is the final answer; it is right when correct.
	given   int
	correct bool
	// ok is false for an episode whose scoring failed: it has an errors
	// entry and a null reward.
	ok           bool
	judgeLatency float64
	id, traceID  string
	groupID      string
	// start is when the rollout began, in unix seconds.
	start float64
}

// baseTime is the documents' clock: the first rollout starts then, and each
// one 10 s after the previous. The record timestamps are the real time.
const baseTime = 1755800000.0

// failureMessage is the errors entry of a failed episode.
const (
	failureType    = "ScoringError"
	failureMessage = "judge request timed out after 30 s"
	failureStatus  = 504
)

// planEvaluation draws the evaluation of cfg. The outcomes (problems,
// correctness, failures) derive from -seed alone; the ids also from the run's
// identity, so that two evaluations never share an episode id.
func planEvaluation(cfg config) evaluation {
	identity := fnv.New64a()
	identity.Write([]byte(cfg.runKey + "\x00" + cfg.runID))
	ids := rand.New(rand.NewPCG(cfg.Seed, identity.Sum64()))
	outcomes := rand.New(rand.NewPCG(cfg.Seed, 0x6576616c)) // "eval"

	ev := evaluation{
		runnerID:     uuid(ids),
		runnerName:   cfg.name,
		model:        cfg.model,
		contentBytes: cfg.episodeBytes,
		seed:         cfg.Seed,
	}
	failed := map[int]bool{}
	for _, i := range outcomes.Perm(cfg.episodes)[:int(math.Round(cfg.errorRate*float64(cfg.episodes)))] {
		failed[i] = true
	}
	for example := 0; example*cfg.rolloutsPerExample < cfg.episodes; example++ {
		a, b := 2+outcomes.IntN(98), 2+outcomes.IntN(98)
		pCorrect := 0.3 + 0.6*outcomes.Float64()
		group := uuid(ids)
		env := cfg.environments[example%len(cfg.environments)]
		for rollout := 0; rollout < cfg.rolloutsPerExample && len(ev.episodes) < cfg.episodes; rollout++ {
			index := len(ev.episodes)
			e := episodeSpec{
				index: index, example: example, rollout: rollout, env: env,
				a: a, b: b, given: a * b,
				correct:      outcomes.Float64() < pCorrect,
				ok:           !failed[index],
				judgeLatency: trainerlib.RoundTo(0.2+1.3*outcomes.Float64(), 3),
				id:           hexID(ids),
				traceID:      hexID(ids),
				groupID:      group,
				start:        baseTime + 10*float64(index),
			}
			if wrong := 1 + outcomes.IntN(9); !e.correct {
				e.given += wrong
			}
			ev.episodes = append(ev.episodes, e)
		}
	}
	return ev
}

// score is the episode's correct_answer score; a failed episode has none.
func (e episodeSpec) score() (float64, bool) {
	if !e.ok {
		return 0, false
	}
	if e.correct {
		return 1, true
	}
	return 0, true
}

// reward is what the platform derives: the sum of score × weight over the
// non-null rewards, 0 when there are none. The only reward weighs 1.
func (e episodeSpec) reward() float64 {
	s, _ := e.score()
	return s * 1.0
}

// document is episode i as verifiers' Episode.to_record() writes it
// (episodes-native.md): the fixture's shape, one trace whose nodes fork into
// two branches, for an eval run (run.type eval, no run.work, no advantages).
func (ev evaluation) document(i int) object {
	e := ev.episodes[i]
	s := e.start
	at := func(d float64) float64 { return trainerlib.RoundTo(s+d, 3) }
	question := fmt.Sprintf("What is %d*%d?", e.a, e.b)
	answer := strconv.Itoa(e.given)

	contents := [5]string{
		"Answer briefly.",
		question,
		"Let me think...", // + padding + " " + answer
		fmt.Sprintf("Summary: asked %d*%d. Answer now.", e.a, e.b),
		answer,
	}
	fixed := 0
	for _, c := range contents {
		fixed += len(c)
	}
	fixed += 1 + len(answer)
	r := rand.New(rand.NewPCG(ev.seed, uint64(i)))
	contents[2] += trainerlib.Filler(r, strings.Fields(fillerVocabulary), max(0, ev.contentBytes-fixed)) + " " + answer

	data := obj(
		"idx", e.example,
		"prompt", question,
		"network_allow", []any{"*"},
		"network_block", []any{},
		"artifacts", []any{},
		"timeout", object{},
		"resources", object{},
		"question", question,
		"answer", strconv.Itoa(e.a*e.b),
	)
	task := obj("type", "MathTask", "data", data,
		"key", fmt.Sprintf("k-%d", e.example), "hash", fmt.Sprintf("h-%d", e.example))

	errs := []any{}
	if !e.ok {
		errs = append(errs, obj("type", failureType, "message", failureMessage, "status_code", failureStatus))
	}
	var rewards, judgeLatency any
	if score, ok := e.score(); ok {
		rewards = obj("correct_answer", obj("score", score, "weight", 1.0))
		judgeLatency = e.judgeLatency
	} else {
		rewards = obj("correct_answer", nil)
	}
	scoringTime := 30.0
	if e.ok {
		scoringTime = e.judgeLatency
	}

	tok := func(parts ...string) int {
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		return (n + 3) / 4
	}
	msg := func(role, content string) object { return obj("role", role, "content", content) }
	node := func(parent int, message object, sampled bool, ts float64, tokenIDs, mask, logprobs []any) object {
		n := object{}
		if parent >= 0 {
			n = append(n, member{"parent", parent})
		}
		return append(n,
			member{"message", message},
			member{"sampled", sampled},
			member{"timestamp", ts},
			member{"token_ids", tokenIDs},
			member{"mask", mask},
			member{"is_content", []any{}},
			member{"logprobs", logprobs},
		)
	}
	reasoning := fmt.Sprintf("%d*%d=%d", e.a, e.b, e.given)
	// Two branches fork at the system prompt: 0-1-2 answers at length, and
	// 0-3-4 answers again after a summary.
	nodes := []any{
		node(-1, msg("system", contents[0]), false, at(0.1), []any{1, 2}, []any{false, false}, []any{}),
		node(0, msg("user", contents[1]), false, at(0.1), []any{3, 4, 5}, []any{false, false, false}, []any{}),
		node(1, msg("assistant", contents[2]), true, at(1.5), []any{6, 7, 8, 9}, []any{false, true, true, true}, []any{-0.1, -0.2, -0.05}),
		node(0, msg("user", contents[3]), false, at(2.0), []any{10, 11}, []any{false, false}, []any{}),
		node(3, append(msg("assistant", contents[4]), member{"reasoning_content", reasoning}), true, at(2.9), []any{12, 13}, []any{false, true}, []any{-0.01}),
	}
	sampling := obj("temperature", temperature, "max_tokens", maxTokens)
	calls := []any{
		obj("node", 2, "model", ev.model, "sampling", sampling, "endpoint", "/chat/completions", "finish_reason", "stop",
			"usage", obj("prompt_tokens", tok(contents[0], contents[1]), "completion_tokens", tok(contents[2])),
			"time", obj("start", at(0.2), "end", at(1.4))),
		obj("node", 4, "model", ev.model, "sampling", sampling, "endpoint", "/chat/completions", "finish_reason", "stop",
			"usage", obj("prompt_tokens", tok(contents[3]), "completion_tokens", tok(contents[4]), "cached_input_tokens", tok(contents[0])),
			"time", obj("start", at(2.1), "end", at(2.8))),
	}

	trace := obj(
		"version", 1,
		"id", e.traceID,
		"verifiers", obj("version", "0.3.1.dev60", "commit", "a60a606"),
		"task", task,
		"agent", obj("config", obj("model", ev.model, "sampling", sampling), "name", "solver", "trainable", true),
		"tools", []any{},
		"nodes", nodes,
		"calls", calls,
		"request_rewrites", []any{},
		"response_rewrites", []any{},
		"rewards", rewards,
		"metrics", obj("num_turns", 2.0, "judge_latency", judgeLatency),
		"info", object{},
		"extra_usage", []any{},
		"is_completed", true,
		"ok", e.ok,
		"stop_condition", "stop",
		"errors", errs,
		"timing", obj(
			"start", at(0),
			"boot", obj("start", at(0), "end", at(0.05)),
			"setup", obj("start", at(0.05), "end", at(0.1)),
			"agent", obj("start", at(0.1), "end", at(3.0),
				"model", obj("duration", 1.9), "harness", obj("duration", 1.0)),
			"finalize", obj("start", at(3.0), "end", at(3.1)),
			"scoring", obj("start", at(3.1), "end", at(3.1+scoringTime)),
		),
	)

	run := obj("type", "eval", "id", ev.runnerID)
	if ev.runnerName != "" {
		run = append(run, member{"name", ev.runnerName})
	}
	return obj(
		"id", e.id,
		"env", obj("id", trainerlib.EnvSlug(e.env), "name", trainerlib.EnvShortName(e.env)),
		"task", task,
		"group", obj("id", e.groupID),
		"run", run,
		"ok", e.ok,
		"errors", errs,
		"traces", []any{trace},
	)
}

// fillerVocabulary makes up the deterministic padding of a long answer.
const fillerVocabulary = "first we note that the product is a sum of equal parts so adding them gives " +
	"count check again carefully each row holds more step then result number careful " +
	"reasoning keeps arithmetic honest and simple"

// hexID is a 32-hex-digit id, as verifiers writes episode and trace ids.
func hexID(r *rand.Rand) string {
	return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
}

// uuid is a random (version 4) UUID.
func uuid(r *rand.Rand) string {
	hi, lo := r.Uint64(), r.Uint64()
	hi = hi&^0xf000 | 0x4000
	lo = lo&^(0xc<<60) | 0x8<<60
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, hi>>16&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
}

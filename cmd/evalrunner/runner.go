package main

import (
	"context"
	"fmt"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// runner plays the evaluation: its episodes in batches, each batch flushed;
// then the summary event and prime.run.end, flushed.
type runner struct {
	cfg  config
	eval evaluation
	play trainerlib.Play
}

// outcome is what a run sent, for the summary line and the manifest.
type outcome struct {
	// sent are the episodes sent, in order.
	sent    []sentEpisode
	summary []summaryValue
	status  string
}

// sentEpisode is one episode as the manifest lists it.
type sentEpisode struct {
	ID         string  `json:"id"`
	Env        string  `json:"env"`
	ExampleIdx int     `json:"example_idx"`
	Rollout    int     `json:"rollout"`
	Reward     float64 `json:"reward"`
	OK         bool    `json:"ok"`
	// Bytes is the document's size as compact JSON.
	Bytes int `json:"bytes"`
}

// run plays the configured evaluation. An interrupt (ctx done) ends it early
// as cancelled, so the exporter still closes the evaluation out; the run then
// fails with the interrupt. Telemetry recorded before an error is flushed by
// the caller's shutdown.
func (r *runner) run(ctx context.Context) (outcome, error) {
	out := outcome{status: r.cfg.Status}
	var interrupted error
	for i, e := range r.eval.episodes {
		if i > 0 && i%r.cfg.batch == 0 {
			if err := r.play.Sleep(ctx, r.cfg.batchDelay); err != nil {
				interrupted = fmt.Errorf("interrupted after %d episodes: %w", i, err)
				break
			}
		}
		doc := r.eval.document(i)
		r.play.Events.Emit(ctx, trainerlib.EventEpisode, episodeBody(doc, r.cfg.jsonBody))
		out.sent = append(out.sent, sentEpisode{
			ID: e.id, Env: trainerlib.EnvSlug(e.env), ExampleIdx: e.example, Rollout: e.rollout,
			Reward: e.reward(), OK: e.ok, Bytes: len(jsonText(doc)),
		})
		if (i+1)%r.cfg.batch == 0 || i+1 == len(r.eval.episodes) {
			if err := r.play.FlushAfter(ctx, fmt.Sprintf("flush after episode %d", i+1)); err != nil {
				return out, err
			}
		}
	}

	// The summary and the end event go out even after an interrupt: the
	// evaluation is closed out as cancelled with what it scored so far,
	// rather than left for the exporter to time out.
	endCtx := context.WithoutCancel(ctx)
	if r.cfg.summary {
		out.summary = userSummary(r.eval.episodes[:len(out.sent)])
		r.play.Events.Emit(endCtx, trainerlib.EventMetrics, summaryBody(out.summary))
	}
	var err error
	out.status, err = r.play.End(endCtx, out.status, r.cfg.ErrorReason, interrupted, "flush at the end of the evaluation")
	if err != nil {
		return out, err
	}
	return out, interrupted
}

// summaryValue is one user summary key, in the order sent.
type summaryValue struct {
	name  string
	value any // an int or a float64
}

// userSummary is what an eval runner reports as its own summary: keys the
// platform would not compute, and one avg_metrics/<k> name, which the
// exporter nests as avg_metrics.<k>. A key with no value (no episodes) is
// left out.
func userSummary(sent []episodeSpec) []summaryValue {
	examples := map[int]bool{}
	correct, ok := 0, 0
	latency := 0.0
	for _, e := range sent {
		examples[e.example] = true
		if s, scored := e.score(); scored {
			ok++
			latency += e.judgeLatency
			if s == 1 {
				correct++
			}
		}
	}
	s := []summaryValue{{"num_examples", len(examples)}}
	if len(sent) > 0 {
		s = append(s, summaryValue{"accuracy", trainerlib.RoundTo(float64(correct)/float64(len(sent)), 6)})
	}
	if ok > 0 {
		s = append(s, summaryValue{"avg_metrics/judge_latency", trainerlib.RoundTo(latency/float64(ok), 6)})
	}
	return s
}

package main

import (
	"context"
	"fmt"
	"time"
)

// runner plays the evaluation: its episodes in batches, each batch flushed;
// then the summary event and prime.run.end, flushed.
type runner struct {
	cfg    config
	eval   evaluation
	events events
	// flush exports everything recorded so far and reports any failure.
	flush func(context.Context) error
	// sleep waits between batches; it returns early with ctx's error.
	sleep func(context.Context, time.Duration) error
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
	out := outcome{status: r.cfg.status}
	var interrupted error
	for i, e := range r.eval.episodes {
		if i > 0 && i%r.cfg.batch == 0 {
			if err := r.sleep(ctx, r.cfg.batchDelay); err != nil {
				interrupted = fmt.Errorf("interrupted after %d episodes: %w", i, err)
				break
			}
		}
		doc := r.eval.document(i)
		r.events.episode(ctx, doc, r.cfg.jsonBody)
		out.sent = append(out.sent, sentEpisode{
			ID: e.id, Env: envSlug(e.env), ExampleIdx: e.example, Rollout: e.rollout,
			Reward: e.reward(), OK: e.ok, Bytes: len(jsonText(doc)),
		})
		if (i+1)%r.cfg.batch == 0 || i+1 == len(r.eval.episodes) {
			if err := r.flush(ctx); err != nil {
				return out, &exportError{during: fmt.Sprintf("flush after episode %d", i+1), err: err}
			}
		}
	}

	// The summary and the end event go out even after an interrupt: the
	// evaluation is closed out as cancelled with what it scored so far,
	// rather than left for the exporter to time out.
	endCtx := context.WithoutCancel(ctx)
	if r.cfg.summary {
		out.summary = userSummary(r.eval.episodes[:len(out.sent)])
		r.events.summary(endCtx, out.summary)
	}
	reason := r.cfg.errorReason
	if interrupted != nil && out.status != statusNone {
		out.status, reason = statusCancelled, interrupted.Error()
	}
	if out.status != statusNone {
		r.events.runEnd(endCtx, out.status, reason)
	}
	if err := r.flush(endCtx); err != nil {
		return out, &exportError{during: "flush at the end of the evaluation", err: err}
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
		s = append(s, summaryValue{"accuracy", roundTo(float64(correct)/float64(len(sent)), 6)})
	}
	if ok > 0 {
		s = append(s, summaryValue{"avg_metrics/judge_latency", roundTo(latency/float64(ok), 6)})
	}
	return s
}

// sleepContext waits for d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

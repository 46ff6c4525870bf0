package main

import (
	"context"
	"fmt"
	"time"
)

// trainer plays the run: per step, its episodes, metrics and prime.metrics
// event, then a flush; at the end, prime.run.end.
type trainer struct {
	cfg    config
	in     instruments
	events events
	// flush exports everything recorded so far and reports any failure.
	flush func(context.Context) error
	// sleep waits between steps; it returns early with ctx's error.
	sleep func(context.Context, time.Duration) error
}

// outcome is what a run sent, for the summary line.
type outcome struct {
	steps        int
	episodes     int
	evalEpisodes int
	status       string
	// trainByDispatch counts train episodes by the step they were
	// dispatched at: the rows the sample table should hold per step.
	trainByDispatch map[int]int
}

// run plays the configured run. An interrupt (ctx done) ends it early as
// cancelled, so the exporter still closes the run out; the run then fails
// with the interrupt. Telemetry recorded before an error is flushed by the
// caller's shutdown.
func (t *trainer) run(ctx context.Context) (outcome, error) {
	out := outcome{status: t.cfg.status, trainByDispatch: map[int]int{}}
	var interrupted error
	for step := t.cfg.startStep; step <= t.cfg.steps; step++ {
		if step > t.cfg.startStep {
			if err := t.sleep(ctx, t.cfg.stepDelay); err != nil {
				interrupted = fmt.Errorf("interrupted after step %d: %w", step-1, err)
				break
			}
		}
		p := planStep(t.cfg, step)
		for _, e := range p.episodes {
			t.events.episode(ctx, e)
			out.trainByDispatch[e.dispatchStep]++
		}
		out.episodes += len(p.episodes)
		if p.eval != nil {
			t.events.episode(ctx, *p.eval)
			out.episodes++
			out.evalEpisodes++
		}
		t.in.record(ctx, p)
		t.events.stepMetrics(ctx, p)
		if err := t.flush(ctx); err != nil {
			return out, &exportError{during: fmt.Sprintf("flush after step %d", step), err: err}
		}
		out.steps = step
	}

	// The end event must go out even after an interrupt: the run is closed
	// out as cancelled rather than left for the exporter to time out.
	endCtx := context.WithoutCancel(ctx)
	reason := t.cfg.errorReason
	if interrupted != nil && out.status != statusNone {
		out.status, reason = statusCancelled, interrupted.Error()
	}
	if out.status != statusNone {
		t.events.runEnd(endCtx, out.status, reason)
	}
	if err := t.flush(endCtx); err != nil {
		return out, &exportError{during: "flush at the end of the run", err: err}
	}
	return out, interrupted
}

// sleepContext waits for d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

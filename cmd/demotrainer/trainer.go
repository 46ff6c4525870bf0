package main

import (
	"context"
	"fmt"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// trainer plays the run: per step, its episodes, metrics and prime.metrics
// event, then a flush; at the end, prime.run.end.
type trainer struct {
	cfg  config
	in   instruments
	play trainerlib.Play
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
	out := outcome{status: t.cfg.Status, trainByDispatch: map[int]int{}}
	var interrupted error
	for step := t.cfg.startStep; step <= t.cfg.steps; step++ {
		if step > t.cfg.startStep {
			if err := t.play.Sleep(ctx, t.cfg.stepDelay); err != nil {
				interrupted = fmt.Errorf("interrupted after step %d: %w", step-1, err)
				break
			}
		}
		p := planStep(t.cfg, step)
		for _, e := range p.episodes {
			sendEpisode(ctx, t.play.Events, e)
			out.trainByDispatch[e.dispatchStep]++
		}
		out.episodes += len(p.episodes)
		if p.eval != nil {
			sendEpisode(ctx, t.play.Events, *p.eval)
			out.episodes++
			out.evalEpisodes++
		}
		t.in.record(ctx, p)
		sendStepMetrics(ctx, t.play.Events, p)
		if err := t.play.FlushAfter(ctx, fmt.Sprintf("flush after step %d", step)); err != nil {
			return out, err
		}
		out.steps = step
	}

	// The end event must go out even after an interrupt.
	var err error
	out.status, err = t.play.End(context.WithoutCancel(ctx), out.status, t.cfg.ErrorReason, interrupted, "flush at the end of the run")
	if err != nil {
		return out, err
	}
	return out, interrupted
}

package main

import (
	"context"

	"go.opentelemetry.io/otel/attribute"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// sendEpisode emits one finished episode, with the step it was dispatched
// at and whether it is train or eval work.
func sendEpisode(ctx context.Context, ev trainerlib.Events, spec episodeSpec) {
	workType := "train"
	if spec.eval {
		workType = "eval"
	}
	ev.Emit(ctx, trainerlib.EventEpisode, episodeBody(spec),
		attribute.Int64("prime.work.step", int64(spec.dispatchStep)),
		attribute.String("prime.work.type", workType),
	)
}

// sendStepMetrics emits the step's optimizer scalars as a prime.metrics
// event, the path for a trainer that has a dict of metrics per step.
func sendStepMetrics(ctx context.Context, ev trainerlib.Events, p stepPlan) {
	ev.Emit(ctx, trainerlib.EventMetrics, attribute.Value{},
		attribute.Int64("prime.step", int64(p.step)),
		attribute.Float64("lr", learningRate),
		attribute.Float64("grad_norm", p.gradNorm),
	)
}

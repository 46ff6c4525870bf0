package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
)

// Event names of telemetry.md section 3.
const (
	eventEpisode = "prime.episode"
	eventMetrics = "prime.metrics"
	eventRunEnd  = "prime.run.end"
)

// events emits the log records of a run.
type events struct {
	logger log.Logger
	now    func() time.Time
}

func (ev events) emit(ctx context.Context, name string, body attribute.Value, attrs ...attribute.KeyValue) {
	var r log.Record
	r.SetEventName(name)
	r.SetTimestamp(ev.now())
	r.SetSeverity(log.SeverityInfo)
	r.SetSeverityText("INFO")
	if body.Type() != attribute.EMPTY {
		r.SetBody(body)
	}
	r.AddAttributes(attrs...)
	ev.logger.Emit(ctx, r)
}

// episode emits one finished episode.
func (ev events) episode(ctx context.Context, spec episodeSpec) {
	workType := "train"
	if spec.eval {
		workType = "eval"
	}
	ev.emit(ctx, eventEpisode, episodeBody(spec),
		attribute.Int64("prime.work.step", int64(spec.dispatchStep)),
		attribute.String("prime.work.type", workType),
	)
}

// stepMetrics emits the step's optimizer scalars as a prime.metrics event,
// the path for a trainer that has a dict of metrics per step.
func (ev events) stepMetrics(ctx context.Context, p stepPlan) {
	ev.emit(ctx, eventMetrics, attribute.Value{},
		attribute.Int64("prime.step", int64(p.step)),
		attribute.Float64("lr", learningRate),
		attribute.Float64("grad_norm", p.gradNorm),
	)
}

// runEnd tells the exporter the run is over.
func (ev events) runEnd(ctx context.Context, status, reason string) {
	attrs := []attribute.KeyValue{attribute.String("prime.run.status", status)}
	if status != statusCompleted {
		attrs = append(attrs, attribute.String("prime.run.error", reason))
	}
	ev.emit(ctx, eventRunEnd, attribute.Value{}, attrs...)
}

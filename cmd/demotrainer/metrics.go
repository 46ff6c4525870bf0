package main

import (
	"context"
	"errors"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// instruments are the step metrics of telemetry.md section 2.
type instruments struct {
	loss       metric.Float64Gauge
	entropy    metric.Float64Gauge
	rewardMean metric.Float64Gauge
	step       metric.Int64Gauge
	reward     metric.Float64Histogram
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var errs [5]error
	in.loss, errs[0] = m.Float64Gauge("loss", metric.WithDescription("training loss of the step's batch"))
	in.entropy, errs[1] = m.Float64Gauge("entropy", metric.WithDescription("mean token entropy of the step's batch"))
	in.rewardMean, errs[2] = m.Float64Gauge("reward/mean", metric.WithDescription("mean episode reward, overall and per environment"))
	in.step, errs[3] = m.Int64Gauge("step", metric.WithDescription("the training step"))
	in.reward, errs[4] = m.Float64Histogram("reward",
		metric.WithDescription("episode rewards of the step"),
		metric.WithExplicitBucketBoundaries(0, 0.25, 0.5, 0.75, 1))
	return in, errors.Join(errs[:]...)
}

// record records step p. Every point but `step` itself carries prime.step;
// `step` goes bare, so the exporter's fallback (the `step` gauge with the
// same timestamp) is exercised too.
func (in instruments) record(ctx context.Context, p stepPlan) {
	step := attribute.Int64("prime.step", int64(p.step))
	at := metric.WithAttributes(step)
	in.loss.Record(ctx, p.loss, at)
	in.entropy.Record(ctx, p.entropy, at)
	in.rewardMean.Record(ctx, p.rewardMean(), at)
	byEnv := p.rewardMeanByEnv()
	for _, env := range slices.Sorted(maps.Keys(byEnv)) {
		in.rewardMean.Record(ctx, byEnv[env], metric.WithAttributes(step, attribute.String("env", env)))
	}
	in.step.Record(ctx, int64(p.step))
	for _, e := range p.episodes {
		in.reward.Record(ctx, e.reward, at)
	}
}

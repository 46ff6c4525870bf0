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

// events emits the log records of an evaluation.
type events struct {
	logger log.Logger
	now    func() time.Time
}

// emit sends one event. Its timestamp is set: a sample's created_at comes
// from it, and the exporter tells a replayed episode by content and time.
func (ev events) emit(ctx context.Context, name string, body attribute.Value, attrs ...attribute.KeyValue) {
	var r log.Record
	r.SetEventName(name)
	now := ev.now()
	r.SetTimestamp(now)
	r.SetObservedTimestamp(now)
	r.SetSeverity(log.SeverityInfo)
	r.SetSeverityText("INFO")
	if body.Type() != attribute.EMPTY {
		r.SetBody(body)
	}
	r.AddAttributes(attrs...)
	ev.logger.Emit(ctx, r)
}

// episode emits one finished episode: its native document as the body, as a
// map or as JSON text. An evaluation has no steps, so the record carries no
// prime.work.step, and the document no run.work: every episode is a sample.
func (ev events) episode(ctx context.Context, doc object, jsonBody bool) {
	body := attrValue(doc)
	if jsonBody {
		body = attribute.StringValue(string(jsonText(doc)))
	}
	ev.emit(ctx, eventEpisode, body)
}

// summary emits the user's summary keys as the body of a prime.metrics
// event; an evaluation has no step, so there is no prime.step.
func (ev events) summary(ctx context.Context, s []summaryValue) {
	kvs := make([]attribute.KeyValue, len(s))
	for i, v := range s {
		kvs[i] = attribute.KeyValue{Key: attribute.Key(v.name), Value: attrValue(v.value)}
	}
	ev.emit(ctx, eventMetrics, attribute.MapValue(kvs...))
}

// runEnd tells the exporter the evaluation is over.
func (ev events) runEnd(ctx context.Context, status, reason string) {
	attrs := []attribute.KeyValue{attribute.String("prime.run.status", status)}
	if status != statusCompleted {
		attrs = append(attrs, attribute.String("prime.run.error", reason))
	}
	ev.emit(ctx, eventRunEnd, attribute.Value{}, attrs...)
}

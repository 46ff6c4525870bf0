package trainerlib

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
)

// Event names of telemetry.md section 3.
const (
	EventEpisode = "prime.episode"
	EventMetrics = "prime.metrics"
	EventRunEnd  = "prime.run.end"
)

// Events emits the log records of a run.
type Events struct {
	Logger log.Logger
	Now    func() time.Time
	// StampObserved sets the observed time to the time too, where the SDK
	// would set its own clock's a moment later. The eval runner does, the
	// trainer leaves it to the SDK; either way the exporter reads the time.
	StampObserved bool
}

// Emit sends one event. Its timestamp is set: a sample's created_at comes
// from it, and the exporter tells a replayed episode by content and time.
func (ev Events) Emit(ctx context.Context, name string, body attribute.Value, attrs ...attribute.KeyValue) {
	var r log.Record
	r.SetEventName(name)
	now := ev.Now()
	r.SetTimestamp(now)
	if ev.StampObserved {
		r.SetObservedTimestamp(now)
	}
	r.SetSeverity(log.SeverityInfo)
	r.SetSeverityText("INFO")
	if body.Type() != attribute.EMPTY {
		r.SetBody(body)
	}
	r.AddAttributes(attrs...)
	ev.Logger.Emit(ctx, r)
}

// RunEnd tells the exporter the run is over; a status other than completed
// carries its reason.
func (ev Events) RunEnd(ctx context.Context, status, reason string) {
	attrs := []attribute.KeyValue{attribute.String("prime.run.status", status)}
	if status != StatusCompleted {
		attrs = append(attrs, attribute.String("prime.run.error", reason))
	}
	ev.Emit(ctx, EventRunEnd, attribute.Value{}, attrs...)
}

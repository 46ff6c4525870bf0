// Package queuefill reads, in process, how full the collector's sending
// queues are: the size and capacity exporterhelper publishes as its
// self-telemetry gauges otelcol_exporter_queue_size and
// otelcol_exporter_queue_capacity. exporterhelper has no API for them; it
// only registers a callback that observes both on the meter provider it is
// built with.
//
// Tap wraps that meter provider. Every instrument and callback still goes
// to the collector's provider untouched (the gauges are exported as before);
// the callback that observes the two queue gauges is also kept, and Read
// calls it as a metric reader would. Reading so works at every telemetry
// level: with level none the collector's provider is a no-op that never runs
// callbacks, but the callback is still registered, so still kept. When
// exporterhelper has no queue (sending_queue disabled) nothing is
// registered and Read reports nothing.
package queuefill

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
)

// The gauges' names, exporterhelper's self-telemetry contract.
const (
	sizeGauge     = "otelcol_exporter_queue_size"
	capacityGauge = "otelcol_exporter_queue_capacity"
)

// Queues holds the taps of one exporter's signals (one exporterhelper
// instance, one queue each). It is safe for concurrent use.
type Queues struct {
	mu   sync.Mutex
	taps []*tap // in Tap order
}

// Fill is one signal's queue: Size of Capacity, in the queue's sizer
// (requests, items or bytes).
type Fill struct {
	Signal         string
	Size, Capacity int64
}

// Tap returns mp for the signal's exporterhelper instance, keeping the
// queue gauges' callback that instance registers on it.
func (q *Queues) Tap(signal string, mp metric.MeterProvider) metric.MeterProvider {
	t := &tap{signal: signal}
	q.mu.Lock()
	q.taps = append(q.taps, t)
	q.mu.Unlock()
	return provider{MeterProvider: mp, t: t}
}

// Read observes every tapped queue now; a signal whose exporterhelper
// registered no queue gauges is left out.
func (q *Queues) Read(ctx context.Context) []Fill {
	q.mu.Lock()
	taps := append([]*tap(nil), q.taps...)
	q.mu.Unlock()
	var out []Fill
	for _, t := range taps {
		if f, ok := t.read(ctx); ok {
			out = append(out, f)
		}
	}
	return out
}

// Describe is Read for a log line, e.g. "logs 12/1000, metrics 0/1000
// requests"; unit is the queue's sizer. It says so when no queue is known.
func (q *Queues) Describe(ctx context.Context, unit string) string {
	fills := q.Read(ctx)
	if len(fills) == 0 {
		return "no sending queue"
	}
	parts := make([]string, len(fills))
	for i, f := range fills {
		parts[i] = fmt.Sprintf("%s %d/%d", f.Signal, f.Size, f.Capacity)
	}
	return strings.Join(parts, ", ") + " " + unit
}

// tap is one signal's kept callbacks.
type tap struct {
	signal string

	mu        sync.Mutex
	seq       int
	callbacks map[int]metric.Callback
}

func (t *tap) keep(f metric.Callback) (forget func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.callbacks == nil {
		t.callbacks = map[int]metric.Callback{}
	}
	t.seq++
	id := t.seq
	t.callbacks[id] = f
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.callbacks, id)
	}
}

func (t *tap) read(ctx context.Context) (Fill, bool) {
	t.mu.Lock()
	callbacks := make([]metric.Callback, 0, len(t.callbacks))
	for _, f := range t.callbacks {
		callbacks = append(callbacks, f)
	}
	t.mu.Unlock()
	o := &capture{}
	for _, f := range callbacks {
		_ = f(ctx, o) // exporterhelper's callbacks never fail
	}
	return Fill{Signal: t.signal, Size: o.size, Capacity: o.capacity}, o.seenSize && o.seenCapacity
}

// provider hands out meters that tap the queue gauges.
type provider struct {
	metric.MeterProvider
	t *tap
}

func (p provider) Meter(name string, opts ...metric.MeterOption) metric.Meter {
	return meter{Meter: p.MeterProvider.Meter(name, opts...), t: p.t}
}

// meter marks the two queue gauges it creates (gauge) and keeps the
// callbacks that observe them.
type meter struct {
	metric.Meter
	t *tap
}

// gauge is a queue gauge of the collector's provider, marked so that a
// callback's observations of it can be told apart: the no-op provider's
// instruments are all equal.
type gauge struct {
	metric.Int64ObservableGauge
	name string
}

func (m meter) Int64ObservableGauge(name string, opts ...metric.Int64ObservableGaugeOption) (metric.Int64ObservableGauge, error) {
	g, err := m.Meter.Int64ObservableGauge(name, opts...)
	if err != nil || (name != sizeGauge && name != capacityGauge) {
		return g, err
	}
	return &gauge{Int64ObservableGauge: g, name: name}, nil
}

func (m meter) RegisterCallback(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	own := make([]metric.Observable, len(instruments))
	tapped := false
	for i, inst := range instruments {
		own[i] = inst
		if g, ok := inst.(*gauge); ok {
			own[i], tapped = g.Int64ObservableGauge, true
		}
	}
	if !tapped {
		return m.Meter.RegisterCallback(f, instruments...)
	}
	reg, err := m.Meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		return f(ctx, unwrapping{o})
	}, own...)
	if err != nil {
		return nil, err
	}
	return registration{Registration: reg, forget: m.t.keep(f)}, nil
}

// registration forgets the kept callback too.
type registration struct {
	metric.Registration
	forget func()
}

func (r registration) Unregister() error {
	r.forget()
	return r.Registration.Unregister()
}

// unwrapping passes observations of a marked gauge to the collector's
// provider as observations of its own instrument.
type unwrapping struct{ metric.Observer }

func (u unwrapping) ObserveInt64(inst metric.Int64Observable, v int64, opts ...metric.ObserveOption) {
	if g, ok := inst.(*gauge); ok {
		inst = g.Int64ObservableGauge
	}
	u.Observer.ObserveInt64(inst, v, opts...)
}

// capture is the observer Read gives the kept callbacks.
type capture struct {
	embedded.Observer
	size, capacity         int64
	seenSize, seenCapacity bool
}

func (c *capture) ObserveFloat64(metric.Float64Observable, float64, ...metric.ObserveOption) {}

func (c *capture) ObserveInt64(inst metric.Int64Observable, v int64, _ ...metric.ObserveOption) {
	g, ok := inst.(*gauge)
	if !ok {
		return
	}
	switch g.name {
	case sizeGauge:
		c.size, c.seenSize = v, true
	case capacityGauge:
		c.capacity, c.seenCapacity = v, true
	}
}

package queuefill

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// blockedLogs is an exporterhelper logs exporter built on set through a
// tap, with a queue of capacity 10 and one consumer whose push blocks until
// the test ends: what is consumed after the first request stays in the
// queue. The request being pushed counts too, until its push returns.
func blockedLogs(t *testing.T, set exporter.Settings) (exporter.Logs, *Queues) {
	t.Helper()
	q := &Queues{}
	set.MeterProvider = q.Tap("logs", set.MeterProvider)
	qc := exporterhelper.NewDefaultQueueConfig()
	qc.QueueSize = 10
	qc.NumConsumers = 1
	pushing := make(chan struct{}, 1)
	release := make(chan struct{})
	exp, err := exporterhelper.NewLogs(context.Background(), set, struct{}{}, func(context.Context, plog.Logs) error {
		select {
		case pushing <- struct{}{}:
		default:
		}
		<-release
		return nil
	}, exporterhelper.WithQueue(configoptional.Some(qc)))
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	t.Cleanup(func() { close(release) }) // runs first
	require.NoError(t, exp.ConsumeLogs(context.Background(), oneRecord()))
	<-pushing // the consumer holds the first request; the rest stays queued
	return exp, q
}

func oneRecord() plog.Logs {
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr("x")
	return ld
}

// With telemetry level none the collector's provider is a no-op: its
// callbacks never run, and the fill is read all the same.
func TestTheFillOfExporterhelpersQueueIsReadThroughANoopMeterProvider(t *testing.T) {
	exp, q := blockedLogs(t, exportertest.NewNopSettings(component.MustNewType("prime")))
	for range 3 {
		require.NoError(t, exp.ConsumeLogs(context.Background(), oneRecord()))
	}
	assert.Equal(t, []Fill{{Signal: "logs", Size: 4, Capacity: 10}}, q.Read(context.Background()))
	assert.Equal(t, "logs 4/10 requests", q.Describe(context.Background(), "requests"))
}

// With an SDK provider the gauges are still exported as before.
func TestTheTappedGaugesStillReachTheCollectorsOwnTelemetry(t *testing.T) {
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(component.MustNewType("prime"))
	set.TelemetrySettings = tel.NewTelemetrySettings()
	exp, q := blockedLogs(t, set)
	for range 2 {
		require.NoError(t, exp.ConsumeLogs(context.Background(), oneRecord()))
	}

	assert.Equal(t, []Fill{{Signal: "logs", Size: 3, Capacity: 10}}, q.Read(context.Background()))
	for name, want := range map[string]int64{sizeGauge: 3, capacityGauge: 10} {
		m, err := tel.GetMetric(name)
		require.NoError(t, err, name)
		points := m.Data.(metricdata.Gauge[int64]).DataPoints
		require.Len(t, points, 1, name)
		assert.Equal(t, want, points[0].Value, name)
	}
}

// After shutdown exporterhelper unregisters its callbacks, and the tap
// forgets them: nothing is read from a stopped queue.
func TestAShutDownQueueIsNoLongerRead(t *testing.T) {
	var q Queues
	set := exportertest.NewNopSettings(component.MustNewType("prime"))
	set.MeterProvider = q.Tap("metrics", set.MeterProvider)
	exp, err := exporterhelper.NewLogs(context.Background(), set, struct{}{},
		func(context.Context, plog.Logs) error { return nil }, exporterhelper.WithQueue(configoptional.Some(exporterhelper.NewDefaultQueueConfig())))
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	require.Len(t, q.Read(context.Background()), 1)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, exp.Shutdown(ctx))
	assert.Empty(t, q.Read(context.Background()))
}

func TestWithoutASendingQueueThereIsNothingToRead(t *testing.T) {
	var q Queues
	set := exportertest.NewNopSettings(component.MustNewType("prime"))
	set.MeterProvider = q.Tap("logs", set.MeterProvider)
	exp, err := exporterhelper.NewLogs(context.Background(), set, struct{}{},
		func(context.Context, plog.Logs) error { return nil })
	require.NoError(t, err)
	require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, exp.Shutdown(context.Background())) })
	assert.Empty(t, q.Read(context.Background()))
	assert.Equal(t, "no sending queue", q.Describe(context.Background(), "requests"))
}

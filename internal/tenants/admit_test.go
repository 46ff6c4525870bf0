package tenants

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// sinkExporter is a signal's exporter that keeps what it consumes.
type sinkExporter struct {
	component.StartFunc
	component.ShutdownFunc
	*consumertest.LogsSink
	*consumertest.MetricsSink
}

func (sinkExporter) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

// asked is one question an Admit was asked.
type asked struct {
	signal         string
	bytes, records int
}

func TestARequestGoesOnOnlyWhenAdmittedAskedWithItsProtobufSizeAndRecords(t *testing.T) {
	var questions []asked
	refuse := errors.New("over the limit")
	answer := error(nil)
	admit := func(_ context.Context, signal string, bytes, records int) error {
		questions = append(questions, asked{signal, bytes, records})
		return answer
	}
	sink := sinkExporter{LogsSink: &consumertest.LogsSink{}, MetricsSink: &consumertest.MetricsSink{}}
	logs, metrics := AdmitLogs(sink, admit), AdmitMetrics(sink, admit)

	ld := plog.NewLogs()
	lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	lrs.AppendEmpty().Body().SetStr("one")
	lrs.AppendEmpty().Body().SetStr("two")
	md := pmetric.NewMetrics()
	dps := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty().SetEmptyGauge().DataPoints()
	for range 3 {
		dps.AppendEmpty().SetDoubleValue(1)
	}
	require.NoError(t, logs.ConsumeLogs(context.Background(), ld))
	require.NoError(t, metrics.ConsumeMetrics(context.Background(), md))
	answer = refuse
	assert.ErrorIs(t, logs.ConsumeLogs(context.Background(), ld), refuse)
	assert.ErrorIs(t, metrics.ConsumeMetrics(context.Background(), md), refuse)

	assert.Equal(t, 2, sink.LogsSink.LogRecordCount(), "only the admitted request went on")
	assert.Equal(t, 3, sink.MetricsSink.DataPointCount())
	logsSize, metricsSize := (&plog.ProtoMarshaler{}).LogsSize(ld), (&pmetric.ProtoMarshaler{}).MetricsSize(md)
	assert.Equal(t, []asked{{"logs", logsSize, 2}, {"metrics", metricsSize, 3}, {"logs", logsSize, 2}, {"metrics", metricsSize, 3}}, questions)
	assert.Positive(t, logsSize)
}

func TestWithoutAnAdmitTheExporterIsLeftAsItIs(t *testing.T) {
	sink := sinkExporter{LogsSink: &consumertest.LogsSink{}, MetricsSink: &consumertest.MetricsSink{}}
	assert.Equal(t, sink, AdmitLogs(sink, nil))
	assert.Equal(t, sink, AdmitMetrics(sink, nil))
}

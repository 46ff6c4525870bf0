package primeexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// pythonGauge is a gauge point as the OTel Python SDK sends one recorded with
// a numpy step: prime.step stringified.
func pythonGauge(name string, v float64, step string) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	resource(rm.Resource(), trainRun("py"))
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName(name)
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetDoubleValue(v)
	dp.Attributes().PutStr("prime.step", step)
	return md
}

// pythonEvent is a prime.metrics event whose attributes are given raw, as
// the Python SDK turns numpy scalars into strings and keeps bools.
func pythonEvent(t *testing.T, kv map[string]any) func(plog.LogRecord) {
	return func(lr plog.LogRecord) {
		lr.SetEventName("prime.metrics")
		require.NoError(t, lr.Attributes().FromRaw(kv))
	}
}

func TestPythonStringifiedAndBoolValuesArePostedAsNumbersAndCountedAsCoerced(t *testing.T) {
	tests := []struct {
		name        string
		push        func(t *testing.T, h *harness) error
		want        map[int64]map[string]float64
		wantCoerced map[[2]string]int64 // {signal, reason} → count
		wantBad     int64               // bad_value rejections
	}{
		{"a gauge with a numpy prime.step",
			func(_ *testing.T, h *harness) error {
				return h.exp.pushMetrics(context.Background(), pythonGauge("loss", 0.5, "20"))
			},
			map[int64]map[string]float64{20: {"loss": 0.5}},
			map[[2]string]int64{{"metrics", "number_string"}: 1},
			0},
		{"a prime.metrics event with a numpy step, numpy values and bools",
			func(t *testing.T, h *harness) error {
				return h.exp.pushLogs(context.Background(), events(trainRun("py"), pythonEvent(t, map[string]any{
					"prime.step": "3", "m/f32": "0.5", "lr": "1e-06", "done": true, "warm": false, "loss": 0.25,
				})))
			},
			map[int64]map[string]float64{3: {"m/f32": 0.5, "lr": 1e-6, "done": 1, "warm": 0, "loss": 0.25}},
			map[[2]string]int64{{"logs", "number_string"}: 3, {"logs", "bool"}: 2},
			0},
		{"a prime.metrics event whose body map holds the values",
			func(t *testing.T, h *harness) error {
				return h.exp.pushLogs(context.Background(), events(trainRun("py"), func(lr plog.LogRecord) {
					lr.SetEventName("prime.metrics")
					lr.Attributes().PutInt("prime.step", 4)
					require.NoError(t, lr.Body().SetEmptyMap().FromRaw(map[string]any{"acc": "0.75", "ok": true, "note": "NaN"}))
				}))
			},
			map[int64]map[string]float64{4: {"acc": 0.75, "ok": 1}},
			map[[2]string]int64{{"logs", "number_string"}: 1, {"logs", "bool"}: 1},
			1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			require.NoError(t, tt.push(t, h))
			assert.Equal(t, tt.want, h.onlyRun().Metrics)
			for _, signal := range []string{"metrics", "logs"} {
				for _, reason := range []string{"number_string", "bool"} {
					assert.Equal(t, tt.wantCoerced[[2]string{signal, reason}],
						h.count(metricCoerced, map[string]string{"signal": signal, "reason": reason}), "%s %s", signal, reason)
				}
			}
			assert.Equal(t, tt.wantBad, h.count(metricRejected, map[string]string{"reason": "bad_value"}))
			assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "bad_step"}))
		})
	}
}

func TestAFailedStepWithAStringifiedStepIsHandedBackAndLandsAtThatStep(t *testing.T) {
	h := newHarness(t, nil)
	md := pythonGauge("loss", 0.5, "1")
	pythonGauge("loss", 0.4, "2").ResourceMetrics().MoveAndAppendTo(md.ResourceMetrics())
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{}, rfttest.Fault{Status: 500}, rfttest.Fault{Status: 500})

	err := h.exp.pushMetrics(context.Background(), md)
	var partial consumererror.Metrics
	require.ErrorAs(t, err, &partial)
	retry := partial.Data()
	require.Equal(t, 1, retry.DataPointCount(), "only step 2's point comes back")
	step, _ := retry.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Attributes().Get("prime.step")
	assert.Equal(t, "2", step.AsString(), "handed back as it came")

	require.NoError(t, h.exp.pushMetrics(context.Background(), retry))
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}, 2: {"loss": 0.4}}, h.onlyRun().Metrics)
}

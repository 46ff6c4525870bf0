package primeexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
)

func TestAPrimeMetricsEventTakesTheStepMetricsPath(t *testing.T) {
	h := newHarness(t, nil)
	ld := events(trainRun("ev"),
		metricsEvent(7, map[string]float64{"lr": 1e-6, "grad_norm": 0.5}),
		func(lr plog.LogRecord) {
			lr.SetEventName("prime.metrics")
			body := lr.Body().SetEmptyMap()
			body.PutInt("prime.step", 8) // a body map; the step still comes from the attribute
			lr.Attributes().PutInt("prime.step", 8)
			body.PutDouble("loss", 0.25)
		},
	)
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	run := h.onlyRun()
	assert.Equal(t, map[string]float64{"lr": 1e-6, "grad_norm": 0.5}, run.Metrics[7])
	assert.Equal(t, 0.25, run.Metrics[8]["loss"])
}

func TestTheEventNameAttributeWorksForSDKsWithoutTheField(t *testing.T) {
	h := newHarness(t, nil)
	ld := events(trainRun("old-sdk"), func(lr plog.LogRecord) {
		lr.Attributes().PutStr("event.name", "prime.metrics")
		lr.Attributes().PutInt("prime.step", 2)
		lr.Attributes().PutDouble("loss", 0.5)
	})
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	assert.Equal(t, 0.5, h.onlyRun().Metrics[2]["loss"])
}

func TestOrdinaryLogLinesAndUnknownEventsAreIgnoredAndCounted(t *testing.T) {
	h := newHarness(t, nil)
	ld := events(trainRun("noise"),
		plainLog("epoch 1 started"),
		func(lr plog.LogRecord) { lr.SetEventName("prime.unknown_thing") },
		metricsEvent(1, map[string]float64{"loss": 1}),
	)
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	assert.Equal(t, map[string]float64{"loss": 1}, h.onlyRun().Metrics[1], "the good record still lands")
	assert.Equal(t, int64(2), h.count(metricSkipped, map[string]string{"reason": "not_an_event"}))
	assert.Contains(t, h.logText(), "prime.unknown_thing")
	assert.NotContains(t, h.logText(), "epoch 1 started", "ordinary log lines are not echoed")
}

func TestAMetricsEventWithABadValueLosesOnlyThatValue(t *testing.T) {
	h := newHarness(t, nil)
	ld := events(trainRun("bad"), func(lr plog.LogRecord) {
		lr.SetEventName("prime.metrics")
		lr.Attributes().PutInt("prime.step", 3)
		lr.Attributes().PutDouble("loss", 0.5)
		lr.Attributes().PutStr("note", "not a number")
	}, func(lr plog.LogRecord) {
		lr.SetEventName("prime.metrics")
		lr.Attributes().PutStr("prime.step", "three")
		lr.Attributes().PutDouble("loss", 0.1)
	})
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))
	assert.Equal(t, map[int64]map[string]float64{3: {"loss": 0.5}}, h.onlyRun().Metrics)
	text := h.logText()
	assert.Contains(t, text, "note")
	assert.Contains(t, text, "prime.step")
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "bad_value"}))
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "bad_step"}))
}

func TestMetricsAndLogsOfOneRunArrivingTogetherCreateOneRun(t *testing.T) {
	for i := 0; i < 20; i++ {
		h := newHarness(t, nil)
		ctx := context.Background()
		concurrently(
			func() {
				assert.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("race"), map[int64]map[string]float64{1: {"loss": 1}})))
			},
			func() {
				assert.NoError(t, h.exp.pushLogs(ctx, events(trainRun("race"), metricsEvent(1, map[string]float64{"lr": 0.1}))))
			},
			func() {
				assert.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("race"), map[int64]map[string]float64{2: {"loss": 0.5}})))
			},
		)
		run := h.onlyRun()
		assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1, "lr": 0.1}, 2: {"loss": 0.5}}, run.Metrics)
	}
}

func TestAPrimeMetricsEventIsPostedAsThePlatformsSDKPostsIt(t *testing.T) {
	tests := []struct {
		name       string
		record     func(plog.LogRecord)
		want       []string // each post's metrics object
		wantNoStep int64
	}{
		{"an event with no step is the row of its record's time",
			timedMetricsEvent(atNoon, atNoonHalf, map[string]float64{"inference/ttft": 0.25}),
			[]string{`{"_timestamp":1767225600,"inference/ttft":0.25}`}, 0},
		{"an event with no step and no record time is the row of its observed time",
			timedMetricsEvent(0, atNoonHalf, map[string]float64{"inference/ttft": 0.25}),
			[]string{`{"_timestamp":1767225600.5,"inference/ttft":0.25}`}, 0},
		{"an event with neither time is rejected as having no step",
			timedMetricsEvent(0, 0, map[string]float64{"inference/ttft": 0.25}),
			nil, 1},
		{"an event with a step carries its time as _timestamp",
			func(lr plog.LogRecord) {
				metricsEvent(4, map[string]float64{"loss": 0.5})(lr)
				lr.SetTimestamp(atNoonHalf)
			},
			[]string{`{"_timestamp":1767225600.5,"loss":0.5,"step":4}`}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("ev-t"), tt.record)))
			var want []string
			for _, m := range tt.want {
				want = append(want, `{"run_id":"`+h.onlyRun().ID+`","metrics":`+m+`}`)
			}
			assert.Equal(t, want, metricsBodies(h.platform), "the exact bodies on the wire")
			assert.Equal(t, tt.wantNoStep, h.count(metricRejected, map[string]string{"reason": "no_step"}))
		})
	}
}

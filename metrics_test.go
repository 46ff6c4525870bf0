package primeexporter

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestEveryStepOfARunBecomesOnePostWithTheStepInside(t *testing.T) {
	h := newHarness(t, nil)
	md := gauges(trainRun("r1"), map[int64]map[string]float64{
		1: {"loss": 0.5, "reward/mean": 0.25},
		2: {"loss": 0.4, "reward/mean": 0.5},
	})
	require.NoError(t, h.exp.pushMetrics(context.Background(), md))

	run := h.onlyRun()
	assert.Equal(t, map[int64]map[string]float64{
		1: {"loss": 0.5, "reward/mean": 0.25},
		2: {"loss": 0.4, "reward/mean": 0.5},
	}, run.Metrics)
	assert.Equal(t, 2, run.MetricPosts, "one post per step")
}

func TestEveryMetricTypeIsMappedIntoTheStepPost(t *testing.T) {
	h := newHarness(t, nil)
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	resource(rm.Resource(), trainRun("types"))
	sm := rm.ScopeMetrics().AppendEmpty()

	g := sm.Metrics().AppendEmpty()
	g.SetName("reward/mean")
	gp := g.SetEmptyGauge().DataPoints().AppendEmpty()
	gp.SetDoubleValue(0.5)
	gp.Attributes().PutInt("prime.step", 3)
	gp.Attributes().PutStr("env", "gsm8k")

	s := sm.Metrics().AppendEmpty()
	s.SetName("tokens")
	sp := s.SetEmptySum().DataPoints().AppendEmpty()
	sp.SetIntValue(1200)
	sp.Attributes().PutInt("prime.step", 3)

	hi := sm.Metrics().AppendEmpty()
	hi.SetName("reward")
	hp := hi.SetEmptyHistogram().DataPoints().AppendEmpty()
	hp.SetCount(4)
	hp.SetSum(2)
	hp.SetMin(0)
	hp.SetMax(1)
	hp.Attributes().PutInt("prime.step", 3)

	eh := sm.Metrics().AppendEmpty()
	eh.SetName("latency")
	ep := eh.SetEmptyExponentialHistogram().DataPoints().AppendEmpty()
	ep.SetCount(2)
	ep.SetSum(3)
	ep.Attributes().PutInt("prime.step", 3)

	su := sm.Metrics().AppendEmpty()
	su.SetName("loss")
	sup := su.SetEmptySummary().DataPoints().AppendEmpty()
	sup.SetCount(10)
	sup.SetSum(5)
	q := sup.QuantileValues().AppendEmpty()
	q.SetQuantile(0.5)
	q.SetValue(0.45)
	sup.Attributes().PutInt("prime.step", 3)

	nan := sm.Metrics().AppendEmpty()
	nan.SetName("grad_norm")
	np := nan.SetEmptyGauge().DataPoints().AppendEmpty()
	np.SetDoubleValue(math.NaN())
	np.Attributes().PutInt("prime.step", 3)

	require.NoError(t, h.exp.pushMetrics(context.Background(), md))
	assert.Equal(t, map[string]float64{
		"reward/mean{env=gsm8k}": 0.5,
		"tokens":                 1200,
		"reward/count":           4, "reward/sum": 2, "reward/mean": 0.5, "reward/min": 0, "reward/max": 1,
		"latency/count": 2, "latency/sum": 3, "latency/mean": 1.5,
		"loss/count": 10, "loss/sum": 5, "loss/q0.5": 0.45,
	}, h.onlyRun().Metrics[3])
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "non_finite"}))
	assert.Contains(t, h.logText(), "grad_norm", "the dropped value is named")
}

func TestAPointReExportedWithTheSameValueIsNotSentAgain(t *testing.T) {
	h := newHarness(t, nil)
	// Cumulative temporality re-exports every step seen so far.
	first := gauges(trainRun("cum"), map[int64]map[string]float64{1: {"loss": 0.5}})
	second := gauges(trainRun("cum"), map[int64]map[string]float64{1: {"loss": 0.5}, 2: {"loss": 0.4}})
	require.NoError(t, h.exp.pushMetrics(context.Background(), first))
	require.NoError(t, h.exp.pushMetrics(context.Background(), second))
	require.NoError(t, h.exp.pushMetrics(context.Background(), second))

	run := h.onlyRun()
	assert.Equal(t, 2, run.MetricPosts, "step 1 once, step 2 once")
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}, 2: {"loss": 0.4}}, run.Metrics)
}

func TestAChangedValueOfASentStepIsSentAgain(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(trainRun("c"), map[int64]map[string]float64{1: {"loss": 0.5}})))
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(trainRun("c"), map[int64]map[string]float64{1: {"loss": 0.3}})))
	run := h.onlyRun()
	assert.Equal(t, 2, run.MetricPosts)
	assert.Equal(t, 0.3, run.Metrics[1]["loss"])
}

func TestOnlyTheFailedStepIsHandedBackForRetryAndTheSentStepsAreNotResent(t *testing.T) {
	h := newHarness(t, nil)
	md := gauges(trainRun("partial"), map[int64]map[string]float64{
		1: {"loss": 0.5}, 2: {"loss": 0.4}, 3: {"loss": 0.3},
	})
	// Steps go in order: step 1 passes, step 2 fails on both in-place
	// attempts with a 500 (about that post, not the platform: see
	// TestOnceThePlatformIsDownTheLaterStepsGoBackUnsent), step 3 passes.
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{}, rfttest.Fault{Status: 500}, rfttest.Fault{Status: 500})

	err := h.exp.pushMetrics(context.Background(), md)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "a 500 is worth retrying")
	var partial consumererror.Metrics
	require.True(t, errors.As(err, &partial))
	retry := partial.Data()
	entries := retry.DataPointCount()
	assert.Equal(t, 1, entries, "only step 2's point comes back")
	step, _ := retry.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Attributes().Get("prime.step")
	assert.Equal(t, int64(2), step.Int())

	run := h.onlyRun()
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}, 3: {"loss": 0.3}}, run.Metrics)

	require.NoError(t, h.exp.pushMetrics(context.Background(), retry))
	run = h.onlyRun()
	assert.Equal(t, 3, run.MetricPosts, "the retry posts step 2 only")
	assert.Equal(t, 0.4, run.Metrics[2]["loss"])
}

func TestAPointWithNeitherAStepNorATimeIsRejectedAndTheRestOfTheBatchGoes(t *testing.T) {
	h := newHarness(t, nil)
	md := gauges(trainRun("nostep"), map[int64]map[string]float64{4: {"loss": 0.5}})
	sm := md.ResourceMetrics().At(0).ScopeMetrics().At(0)
	m := sm.Metrics().AppendEmpty()
	m.SetName("orphan")
	m.SetEmptyGauge().DataPoints().AppendEmpty().SetDoubleValue(1)

	require.NoError(t, h.exp.pushMetrics(context.Background(), md))
	assert.Equal(t, map[int64]map[string]float64{4: {"loss": 0.5}}, h.onlyRun().Metrics)
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "no_step"}))
	assert.Contains(t, h.logText(), "orphan")
}

func TestAResourceWithoutIdentityIsRejectedAndOtherResourcesStillGo(t *testing.T) {
	h := newHarness(t, nil)
	md := gauges(map[string]string{"service.name": "anonymous"}, map[int64]map[string]float64{1: {"loss": 1}})
	gauges(trainRun("named"), map[int64]map[string]float64{1: {"loss": 0.5}}).ResourceMetrics().At(0).CopyTo(md.ResourceMetrics().AppendEmpty())

	require.NoError(t, h.exp.pushMetrics(context.Background(), md))
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}}, h.onlyRun().Metrics)
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "no_identity"}))
	assert.Contains(t, h.logText(), "prime.run.key")
}

func TestARunWithNoModelIsRejectedWithoutARequest(t *testing.T) {
	h := newHarness(t, nil)
	md := gauges(map[string]string{"prime.run.key": "nomodel"}, map[int64]map[string]float64{1: {"loss": 1}})
	require.NoError(t, h.exp.pushMetrics(context.Background(), md))
	assert.Empty(t, h.platform.Runs())
	assert.Empty(t, h.platform.Requests())
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "run_refused"}))
	assert.Contains(t, h.logText(), "prime.run.model")
}

func TestManyRunsGoThroughOneExporter(t *testing.T) {
	h := newHarness(t, nil)
	md := pmetric.NewMetrics()
	for _, key := range []string{"a", "b", "c"} {
		gauges(trainRun(key), map[int64]map[string]float64{1: {"loss": 1}}).ResourceMetrics().At(0).CopyTo(md.ResourceMetrics().AppendEmpty())
	}
	require.NoError(t, h.exp.pushMetrics(context.Background(), md))
	runs := h.platform.Runs()
	require.Len(t, runs, 3)
	for _, r := range runs {
		assert.Equal(t, 1, r.MetricPosts)
	}
	assert.Equal(t, 3, countLogs(h, "Created run"), "one log line per run")
}

func countLogs(h *harness, msg string) int {
	return h.logs.FilterMessage(msg).Len()
}

// Times as a trainer's SDK stamps its points, and the unix seconds the
// platform's SDK would post for them (time.time()).
const (
	atNoon     = pcommon.Timestamp(1_767_225_600_000_000_000) // 1767225600
	atNoonHalf = pcommon.Timestamp(1_767_225_600_500_000_000) // 1767225600.5
)

func TestEveryRowIsPostedAsThePlatformsSDKPostsIt(t *testing.T) {
	tests := []struct {
		name   string
		points []timedPoint
		want   []string // each post's metrics object, in posting order
	}{
		{"a step's post carries the newest time of its points as _timestamp",
			[]timedPoint{{"loss", 0.5, atNoon, 3}, {"kl", 0.25, atNoonHalf, 3}, {"lr", 0.125, 0, 3}},
			[]string{`{"_timestamp":1767225600.5,"kl":0.25,"loss":0.5,"lr":0.125,"step":3}`}},
		{"a step whose points have no time posts no _timestamp",
			[]timedPoint{{"loss", 0.5, 0, 3}},
			[]string{`{"loss":0.5,"step":3}`}},
		{"a point with no step is the row of its time: _timestamp and no step",
			[]timedPoint{{"inference/ttft", 0.25, atNoon, nil}},
			[]string{`{"_timestamp":1767225600,"inference/ttft":0.25}`}},
		{"points with no step at one time are one post, one post per time, after the steps",
			[]timedPoint{
				{"inference/ttft", 0.5, atNoonHalf, nil},
				{"inference/ttft", 0.25, atNoon, nil},
				{"inference/tps", 900, atNoon, nil},
				{"loss", 0.5, atNoon, 1},
			},
			[]string{
				`{"_timestamp":1767225600,"loss":0.5,"step":1}`,
				`{"_timestamp":1767225600,"inference/tps":900,"inference/ttft":0.25}`,
				`{"_timestamp":1767225600.5,"inference/ttft":0.5}`,
			}},
		{"a value named _timestamp is replaced by the row's time, a step's or a time's",
			[]timedPoint{{"_timestamp", 5, atNoon, 2}, {"loss", 0.5, atNoon, 2}, {"_timestamp", 5, atNoonHalf, nil}, {"x", 1, atNoonHalf, nil}},
			[]string{
				`{"_timestamp":1767225600,"loss":0.5,"step":2}`,
				`{"_timestamp":1767225600.5,"x":1}`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			require.NoError(t, h.exp.pushMetrics(context.Background(), timedGauges(t, trainRun("rows"), tt.points...)))
			run := h.onlyRun()
			var want []string
			for _, m := range tt.want {
				want = append(want, `{"run_id":"`+run.ID+`","metrics":`+m+`}`)
			}
			assert.Equal(t, want, metricsBodies(h.platform), "the exact bodies on the wire")
			assert.Equal(t, len(tt.want), run.MetricPosts, "the platform took every post")
		})
	}
}

func TestAPointWithNoStepLandsInTheRowOfItsTime(t *testing.T) {
	h := newHarness(t, nil)
	md := timedGauges(t, trainRun("timed"),
		timedPoint{"inference/ttft", 0.25, atNoon, nil}, timedPoint{"loss", 0.5, atNoon, 1})
	require.NoError(t, h.exp.pushMetrics(context.Background(), md))
	run := h.onlyRun()
	assert.Equal(t, map[float64]map[string]float64{1767225600: {"inference/ttft": 0.25}}, run.TimeMetrics)
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}}, run.Metrics)
	assert.Zero(t, h.count(metricRejected, nil), "nothing is rejected")
}

func TestAStepReExportedAtALaterTimeIsStillAlreadySent(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	// Cumulative temporality re-exports step 1 at every collection, with
	// the collection's time.
	require.NoError(t, h.exp.pushMetrics(ctx, timedGauges(t, trainRun("cum-t"), timedPoint{"loss", 0.5, atNoon, 1})))
	require.NoError(t, h.exp.pushMetrics(ctx, timedGauges(t, trainRun("cum-t"),
		timedPoint{"loss", 0.5, atNoonHalf, 1}, timedPoint{"loss", 0.4, atNoonHalf, 2})))

	id := h.onlyRun().ID
	assert.Equal(t, []string{
		`{"run_id":"` + id + `","metrics":{"_timestamp":1767225600,"loss":0.5,"step":1}}`,
		`{"run_id":"` + id + `","metrics":{"_timestamp":1767225600.5,"loss":0.4,"step":2}}`,
	}, metricsBodies(h.platform), "a new _timestamp alone does not send step 1 again")
	assert.Equal(t, int64(1), h.count(metricSkipped, map[string]string{"reason": "already_sent"}))
}

func TestATimeRowIsNotRememberedAsSent(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	md := timedGauges(t, trainRun("again"), timedPoint{"inference/ttft", 0.25, atNoon, nil})
	require.NoError(t, h.exp.pushMetrics(ctx, md))
	require.NoError(t, h.exp.pushMetrics(ctx, md))

	run := h.onlyRun()
	assert.Equal(t, 2, run.MetricPosts, "each push posts the row")
	assert.Equal(t, map[float64]map[string]float64{1767225600: {"inference/ttft": 0.25}}, run.TimeMetrics, "the platform keeps one row per time")
	assert.Zero(t, h.count(metricSkipped, map[string]string{"reason": "already_sent"}))
}

// --- values coerced from Python's SDK ---

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

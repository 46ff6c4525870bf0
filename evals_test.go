package primeexporter

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// evalRun is an evaluation's resource with one environment the fake's hub
// resolves by name.
func evalRun(key string) map[string]string {
	return map[string]string{"prime.run.kind": "eval", "prime.run.key": key, "prime.run.environments": "math-python", "prime.run.model": "m"}
}

// plainSample is a prime.episode record whose body is a sample as it is.
func plainSample(id string, reward float64) func(plog.LogRecord) {
	return func(lr plog.LogRecord) {
		lr.SetEventName("prime.episode")
		m := lr.Body().SetEmptyMap()
		if id != "" {
			m.PutStr("sample_id", id)
		}
		m.PutDouble("reward", reward)
	}
}

func (h *harness) onlyEvaluation() rfttest.Evaluation {
	h.t.Helper()
	evs := h.platform.Evaluations()
	require.Len(h.t, evs, 1)
	return evs[0]
}

func TestAnIdleEvaluationIsMarkedFailedAsCrashed(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
	require.NoError(t, h.exp.pushLogs(context.Background(), events(evalRun("idle"), plainSample("s-1", 1))))
	require.Eventually(t, func() bool {
		evs := h.platform.Evaluations()
		return len(evs) == 1 && evs[0].Status == rfttest.StatusFailed
	}, 5*time.Second, 10*time.Millisecond)
	ev := h.onlyEvaluation()
	assert.Equal(t, "crashed: no telemetry for 100ms", ev.ErrorMessage)
	assert.Len(t, ev.Samples, 1)
}

func TestAnEvaluationTakesDataForFinalizeGraceAfterItsEnd(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FinalizeGrace = 300 * time.Millisecond })
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(evalRun("grace"), plainSample("s-1", 1), runEnd("completed", ""))))
	// Within the grace period: the other pipeline's late data still lands.
	require.NoError(t, h.exp.pushLogs(ctx, events(evalRun("grace"), plainSample("s-2", 0))))
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(map[string]string{"prime.run.kind": "eval", "prime.run.key": "grace"},
		map[int64]map[string]float64{0: {"accuracy": 0.5}})))
	require.Eventually(t, func() bool {
		evs := h.platform.Evaluations()
		return len(evs) == 1 && evs[0].Finalized
	}, 5*time.Second, 10*time.Millisecond)
	ev := h.onlyEvaluation()
	assert.Len(t, ev.Samples, 2)
	assert.Equal(t, "0.5", fmt.Sprint(ev.Summary["avg_reward"]), "computed from both samples")
	assert.Equal(t, "0.5", fmt.Sprint(ev.Summary["accuracy"]), "a metric point sets a summary key")

	require.NoError(t, h.exp.pushLogs(ctx, events(evalRun("grace"), plainSample("s-3", 1))))
	assert.Len(t, h.onlyEvaluation().Samples, 2, "after the close-out, data is refused")
	assert.Equal(t, int64(1), h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "run_closed"}))
}

func TestAPlainSampleWithoutSampleIDIsRejectedAloneNamingTheKey(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(evalRun("plain"), plainSample("", 1), plainSample("s-1", 1))))
	ev := h.onlyEvaluation()
	assert.Len(t, ev.Samples, 1, "the other sample lands")
	assert.Equal(t, int64(1), h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "no_sample_id"}))
	assert.Contains(t, h.logText(), "sample_id")
}

func TestAnEvaluationAndATrainingRunOfOneKeyAreTwoRunsOnThePlatform(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(evalRun("same"), plainSample("s-1", 1))))
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("same"), map[int64]map[string]float64{1: {"loss": 1}})))
	assert.Len(t, h.platform.Evaluations(), 1)
	assert.Len(t, h.platform.Runs(), 1)
}

func TestTwoCollectorsOnOneRedisCreateOneEvaluationAndDeliverEachSampleOnce(t *testing.T) {
	f := newFleet(t)
	a, b := f.collector(), f.collector()
	ctx := context.Background()
	// The create is slow, so that the other collector's first data comes
	// while it is on its way.
	f.platform.Inject(rfttest.RouteEvalCreate, rfttest.Fault{Delay: 200 * time.Millisecond})
	concurrently(
		func() { assert.NoError(t, a.exp.pushLogs(ctx, events(evalRun("fleet-eval"), plainSample("s-a", 1)))) },
		func() { assert.NoError(t, b.exp.pushLogs(ctx, events(evalRun("fleet-eval"), plainSample("s-b", 0)))) },
	)
	// A replay through the other collector leaves out what was delivered.
	require.NoError(t, b.exp.pushLogs(ctx, events(evalRun("fleet-eval"), plainSample("s-a", 1))))
	assert.Equal(t, 1, f.paths("/evaluations/"), "one create request for the fleet")
	ev := a.onlyEvaluation()
	assert.Len(t, ev.Samples, 2)
	require.NoError(t, a.exp.pushLogs(ctx, events(evalRun("fleet-eval"), runEnd("completed", ""))))
	require.Eventually(t, func() bool {
		e, _ := f.platform.Evaluation(ev.ID)
		return e.Finalized
	}, 10*time.Second, 10*time.Millisecond)
	a.shutdown()
	b.shutdown()
	assert.Equal(t, 1, f.paths("/finalize"), "finalized once")
}

package primeexporter

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

const hostmetricsScope = "github.com/open-telemetry/opentelemetry-collector-contrib/receiver/hostmetricsreceiver/internal/scraper/memoryscraper"

var ambientT0 = pcommon.Timestamp(1_767_225_600_000_000_000)

// hostMemory is one hostmetrics scrape of the memory share at ts, for a
// resource with attrs.
func hostMemory(attrs map[string]string, ts pcommon.Timestamp, share float64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	resource(rm.Resource(), attrs)
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(hostmetricsScope)
	m := sm.Metrics().AppendEmpty()
	m.SetName("system.memory.utilization")
	dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
	dp.SetTimestamp(ts)
	dp.SetDoubleValue(share)
	dp.Attributes().PutStr("state", "used")
	return md
}

// timeRows are a run's time-keyed rows by seconds since ambientT0.
func timeRows(t *testing.T, h *harness) map[float64]map[string]float64 {
	t.Helper()
	out := map[float64]map[string]float64{}
	for at, row := range h.onlyRun().TimeMetrics {
		out[at-float64(ambientT0)/1e9] = row
	}
	return out
}

func TestAmbientMetricsNeverCreateARunAndJoinItOnceItsTrainerOpensIt(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, hostMemory(map[string]string{"prime.run.key": "r1"}, ambientT0, 0.25)))
	assert.Empty(t, h.platform.Runs(), "ambient data created a run")

	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("r1"), map[int64]map[string]float64{1: {"loss": 0.5}})))
	require.NoError(t, h.exp.pushMetrics(ctx, hostMemory(map[string]string{"prime.run.key": "r1"}, ambientT0+15e9, 0.5)))

	assert.Equal(t, map[float64]map[string]float64{
		0:  {"system/memory.percent": 25},
		15: {"system/memory.percent": 50},
	}, timeRows(t, h), "the waiting scrape joined the run, then the next")
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}}, h.onlyRun().Metrics)
	assert.Zero(t, h.count(metricRejected, nil))
}

func TestAmbientMetricsWithAModelMissingDoNotRefuseTheRun(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	// No prime.run.model: trainer data would be run_refused.
	require.NoError(t, h.exp.pushMetrics(ctx, hostMemory(map[string]string{"prime.run.key": "r1"}, ambientT0, 0.25)))
	assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "run_refused"}))
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("r1"), map[int64]map[string]float64{1: {"loss": 0.5}})))
	require.Len(t, h.platform.Runs(), 1)
	assert.Equal(t, "Qwen/Qwen3-8B", h.onlyRun().Spec["base_model"], "the trainer's spec, untouched")
}

func TestAmbientMetricsOfAScrapeTargetDoNotMakeARunOfItsInstanceID(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ambient.Wait = 0 })
	// The prometheus receiver sets service.instance.id to the target's address.
	md := hostMemory(map[string]string{"service.instance.id": "127.0.0.1:9400", "service.name": "dcgm"}, ambientT0, 0.25)
	require.NoError(t, h.exp.pushMetrics(context.Background(), md))
	assert.Empty(t, h.platform.Runs())
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "ambient_no_run"}))
	assert.Contains(t, h.logText(), "k8s.pod.name")
}

func TestAmbientMetricsOfAPodJoinTheRunItsTrainerAnnounced(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	trainer := trainRun("r1")
	trainer["k8s.namespace.name"], trainer["k8s.pod.name"] = "rl", "trainer-a-0"
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainer, map[int64]map[string]float64{1: {"loss": 0.5}})))
	// What groupbyattrs makes of a dcgm-exporter scrape: the pod's labels on the resource.
	gpu := hostMemory(map[string]string{"namespace": "rl", "pod": "trainer-a-0"}, ambientT0, 0.75)
	other := hostMemory(map[string]string{"namespace": "rl", "pod": "trainer-b-0"}, ambientT0, 0.1)
	other.ResourceMetrics().MoveAndAppendTo(gpu.ResourceMetrics())
	require.NoError(t, h.exp.pushMetrics(ctx, gpu))
	assert.Equal(t, map[float64]map[string]float64{0: {"system/memory.percent": 75}}, timeRows(t, h), "only its own pod's")
}

func TestAmbientMetricsAfterTheRunEndedAreSkippedAndCounted(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("r1"), map[int64]map[string]float64{1: {"loss": 0.5}})))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("r1"), runEnd("completed", ""))))
	h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
	require.NoError(t, h.exp.pushMetrics(ctx, hostMemory(map[string]string{"prime.run.key": "r1"}, ambientT0, 0.25)))
	assert.Empty(t, h.onlyRun().TimeMetrics)
	assert.Equal(t, int64(1), h.count(metricSkipped, map[string]string{"reason": "ambient_run_ended"}))
	assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "run_closed"}), "ambient data is not the trainer's late data")
}

func TestAmbientKeysPastTheRunsCapAreDroppedAndCountedAndTheFirstOnesFlow(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ambient.MaxKeys = 3 })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("r1"), map[int64]map[string]float64{1: {"loss": 0.5}})))
	for scrape := range 3 {
		md := pmetric.NewMetrics()
		rm := md.ResourceMetrics().AppendEmpty()
		resource(rm.Resource(), map[string]string{"prime.run.key": "r1", "prime.ambient": "host"})
		m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
		m.SetName("requests")
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(ambientT0 + pcommon.Timestamp(scrape)*15e9)
		dp.SetDoubleValue(1)
		dp.Attributes().PutStr("request_id", fmt.Sprint(scrape)) // a new label value every scrape
		m = rm.ScopeMetrics().At(0).Metrics().AppendEmpty()
		m.SetName("steady")
		dp = m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetTimestamp(ambientT0 + pcommon.Timestamp(scrape)*15e9)
		dp.SetDoubleValue(2)
		require.NoError(t, h.exp.pushMetrics(ctx, md))
	}
	assert.Equal(t, map[float64]map[string]float64{
		0:  {"system/requests{request_id=0}": 1, "system/steady": 2},
		15: {"system/requests{request_id=1}": 1, "system/steady": 2},
		30: {"system/steady": 2},
	}, timeRows(t, h))
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "ambient_key_cap"}))
	assert.Contains(t, h.logText(), "ambient::max_keys")
}

func TestAmbientDataDoesNotKeepAnIdleRunAlive(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("r1"), map[int64]map[string]float64{1: {"loss": 0.5}})))
	_, before := h.exp.live.reg.Open()
	require.NoError(t, h.exp.pushMetrics(ctx, hostMemory(map[string]string{"prime.run.key": "r1"}, ambientT0, 0.25)))
	n, after := h.exp.live.reg.Open()
	assert.Equal(t, 1, n)
	assert.GreaterOrEqual(t, after, before, "an ambient push reset the run's idle time")
}

func TestAGPUOfAKnownPodJoinsThatPodsRunWhateverRunKeyTheNodesCollectorGaveIt(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	for _, pod := range []string{"a", "b"} {
		trainer := trainRun("run-" + pod)
		trainer["k8s.namespace.name"], trainer["k8s.pod.name"] = "rl", "trainer-"+pod
		require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainer, map[int64]map[string]float64{1: {"loss": 0.5}})))
	}
	// A collector beside trainer a, scraping the whole node.
	gpu := hostMemory(map[string]string{"prime.run.key": "run-a", "namespace": "rl", "pod": "trainer-b"}, ambientT0, 0.75)
	require.NoError(t, h.exp.pushMetrics(ctx, gpu))
	var got []string
	for _, r := range h.platform.Runs() {
		if len(r.TimeMetrics) > 0 {
			got = append(got, r.ID)
		}
	}
	require.Len(t, got, 1)
	b, err := h.exp.live.reg.Join(ctx, h.exp.live.reg.RunKey(hostMemory(trainRun("run-b"), 0, 0).ResourceMetrics().At(0).Resource()))
	require.NoError(t, err)
	defer b.Release()
	assert.Equal(t, b.ID(), got[0], "the pod's run took it, not the run key's")
}

func TestAPodWithNoRunWaitsItsBoundThenIsDroppedAndCountedWithALine(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ambient.Wait = 20 * time.Millisecond })
	ctx := context.Background()
	pod := map[string]string{"namespace": "rl", "pod": "nobody-0"}
	require.NoError(t, h.exp.pushMetrics(ctx, hostMemory(pod, ambientT0, 0.5)))
	assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "ambient_no_run"}), "it waits first")
	time.Sleep(30 * time.Millisecond)
	require.NoError(t, h.exp.pushMetrics(ctx, hostMemory(pod, ambientT0+15e9, 0.5)))
	assert.Equal(t, int64(1), h.count(metricRejected, map[string]string{"reason": "ambient_no_run"}), "the first scrape, past the wait")
	assert.Contains(t, h.logText(), "pod:rl/nobody-0")
	assert.Empty(t, h.platform.Runs())
}

func TestAmbientRowsThatFailToPostGoBackToRetryNamedAndLandWhenReplayed(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("r1"), map[int64]map[string]float64{1: {"loss": 0.5}})))
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: http.StatusServiceUnavailable}, rfttest.Fault{Status: http.StatusServiceUnavailable})
	err := h.exp.pushMetrics(ctx, hostMemory(map[string]string{"prime.run.key": "r1"}, ambientT0, 0.25))
	require.Error(t, err)
	var retry consumererror.Metrics
	require.ErrorAs(t, err, &retry)
	md := retry.Data()
	require.Equal(t, 1, md.ResourceMetrics().Len())
	assert.Equal(t, "prime.ambient", md.ResourceMetrics().At(0).ScopeMetrics().At(0).Scope().Name(), "handed back named")
	require.NoError(t, h.exp.pushMetrics(ctx, md))
	assert.Equal(t, map[float64]map[string]float64{0: {"system/memory.percent": 25}}, timeRows(t, h))
}

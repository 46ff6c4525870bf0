package primeexporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/internal/metadata"
	"github.com/primeintellect/primeexporter/internal/sampletable"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// rendezvous holds the first metrics post until another arrives (or a
// bound passes): a push that sends its runs one after another cannot get a
// second post out while the first is held.
type rendezvous struct {
	mu         sync.Mutex
	posts      int
	holding    bool
	release    chan struct{}
	overlapped bool
}

func (rv *rendezvous) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/rft/metrics") {
			rv.mu.Lock()
			rv.posts++
			if rv.posts == 1 {
				rv.holding, rv.release = true, make(chan struct{})
				release := rv.release
				rv.mu.Unlock()
				select {
				case <-release:
				case <-time.After(10 * time.Second):
				}
				rv.mu.Lock()
				rv.holding = false
			} else if rv.holding && !rv.overlapped {
				rv.overlapped = true
				close(rv.release)
			}
			rv.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

func TestABatchsRunsAreSentAtOnceAndEachRunsDataInOrder(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	rv := &rendezvous{}
	front := httptest.NewServer(rv.wrap(srv.Handler()))
	t.Cleanup(front.Close)

	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = front.URL + "/api/v1/rft"
	cfg.APIKey = testAPIKey
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	h := newHarnessWithHost(t, srv, cfg, componenttest.NewNopHost())

	// Run a has two resources in the batch, steps 1 then 2; run b one.
	ld := plog.NewLogs()
	for _, part := range []plog.Logs{
		events(trainRun("a"), metricsEvent(1, map[string]float64{"loss": 1})),
		events(trainRun("b"), metricsEvent(1, map[string]float64{"loss": 10})),
		events(trainRun("a"), metricsEvent(2, map[string]float64{"loss": 2})),
	} {
		part.ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
	}
	require.NoError(t, h.exp.pushLogs(context.Background(), ld))

	assert.True(t, rv.overlapped, "a second run's post reached the platform while the first was held")
	posts := postedMetrics(t, srv)
	a := h.runByKey("a").ID
	require.Len(t, posts[a], 2)
	assert.Equal(t, []float64{1, 2}, []float64{posts[a][0]["step"], posts[a][1]["step"]}, "one run's resources in the batch's order")
	assert.Len(t, posts[h.runByKey("b").ID], 1)
}

func TestAPushThatFindsThePlatformDownHandsBackEveryRunsDataInTheBatchsOrder(t *testing.T) {
	h := newHarness(t, nil)
	h.platform.SetOutage(&rfttest.Fault{Status: http.StatusServiceUnavailable})

	ld := plog.NewLogs()
	keys := []string{"a", "b", "c", "a"}
	for i, key := range keys {
		events(trainRun(key), metricsEvent(int64(i+1), map[string]float64{"loss": float64(i)})).ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
	}
	err := h.exp.pushLogs(context.Background(), ld)
	require.Error(t, err)

	var back consumererror.Logs
	require.ErrorAs(t, err, &back, "the error carries the data to retry")
	retry := back.Data()
	require.Equal(t, len(keys), retry.ResourceLogs().Len(), "every resource is handed back")
	for i, key := range keys {
		v, _ := retry.ResourceLogs().At(i).Resource().Attributes().Get("prime.run.key")
		assert.Equal(t, key, v.Str(), "resource %d", i)
		step, _ := retry.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords().At(0).Attributes().Get("prime.step")
		assert.Equal(t, int64(i+1), step.Int(), "resource %d keeps its records", i)
	}
}

// handBackAttr is the resource attribute a hand-back's token travels in
// (internal/runs.AttrHandBack), spelled out so that the root's tests go
// through its API only.
const handBackAttr = "prime.exporter.hand_back"

func TestResourcesAreAlikeWhateverTheirHandBackTokens(t *testing.T) {
	res := func(attrs map[string]string, token int64) pcommon.Resource {
		r := pcommon.NewResource()
		resource(r, attrs)
		if token != 0 {
			r.Attributes().PutInt(handBackAttr, token)
		}
		return r
	}
	a := trainRun("x")
	assert.True(t, sameResource(res(a, 0), res(a, 0)))
	assert.True(t, sameResource(res(a, 1), res(a, 2)), "tokens differ")
	assert.True(t, sameResource(res(a, 1), res(a, 0)), "one has a token")
	assert.True(t, sameResource(res(a, 0), res(a, 1)), "the other has a token")
	assert.False(t, sameResource(res(a, 0), res(trainRun("y"), 0)))
	more := trainRun("x")
	more["host.name"] = "n1"
	assert.False(t, sameResource(res(a, 0), res(more, 0)), "an attribute more")
	assert.False(t, sameResource(res(more, 0), res(a, 0)), "an attribute less")
}

// A time row has no step to hand back by: its retry must carry exactly the
// points or records of that time, stamped as they came, so that the retry
// posts the same row.
func TestATimeRowWhosePostFailsIsHandedBackAloneAndLandsOnceOnTheRetry(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// push sends a step row (at atNoon) and a time row (at
		// atNoonHalf), checks what the push handed back, and returns a
		// push of it.
		push func(t *testing.T, h *harness) (retry func() error)
	}{
		{"a metric point with no step",
			func(t *testing.T, h *harness) func() error {
				md := timedGauges(t, trainRun("tr"),
					timedPoint{"loss", 0.5, atNoon, 1}, timedPoint{"inference/ttft", 0.25, atNoonHalf, nil})
				var back consumererror.Metrics
				require.ErrorAs(t, h.exp.pushMetrics(ctx, md), &back)
				require.Equal(t, 1, back.Data().DataPointCount(), "only the time row's point comes back")
				dp := back.Data().ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0)
				assert.Equal(t, atNoonHalf, dp.Timestamp(), "stamped as it came")
				return func() error { return h.exp.pushMetrics(ctx, back.Data()) }
			}},
		{"a prime.metrics event with no step",
			func(t *testing.T, h *harness) func() error {
				ld := events(trainRun("tr"),
					func(lr plog.LogRecord) {
						metricsEvent(1, map[string]float64{"loss": 0.5})(lr)
						lr.SetTimestamp(atNoon)
					},
					timedMetricsEvent(atNoonHalf, 0, map[string]float64{"inference/ttft": 0.25}))
				var back consumererror.Logs
				require.ErrorAs(t, h.exp.pushLogs(ctx, ld), &back)
				require.Equal(t, 1, back.Data().LogRecordCount(), "only the time row's record comes back")
				lr := back.Data().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0)
				assert.Equal(t, atNoonHalf, lr.Timestamp(), "stamped as it came")
				return func() error { return h.exp.pushLogs(ctx, back.Data()) }
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			// The step row goes through; the time row's post fails on
			// both in-place attempts.
			h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{}, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
			retry := tt.push(t, h)
			require.NoError(t, retry())

			run := h.onlyRun()
			timeRow := `{"run_id":"` + run.ID + `","metrics":{"_timestamp":1767225600.5,"inference/ttft":0.25}}`
			assert.Equal(t, []string{
				`{"run_id":"` + run.ID + `","metrics":{"_timestamp":1767225600,"loss":0.5,"step":1}}`,
				timeRow, timeRow, // the two failed attempts
				timeRow, // the retry, the same row
			}, metricsBodies(h.platform))
			assert.Equal(t, 2, run.MetricPosts, "each row landed once")
			assert.Equal(t, map[float64]map[string]float64{1767225600.5: {"inference/ttft": 0.25}}, run.TimeMetrics)
			assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}}, run.Metrics)
		})
	}
}

// --- the configured run ---

func TestTheConfiguredRunIDAttachesWithoutARequest(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Run.ID = "run-sidecar" })
	h.platform.AddRun("run-sidecar")
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(trainRun("ignored-key"), map[int64]map[string]float64{1: {"loss": 1}})))
	run, ok := h.platform.Run("run-sidecar")
	require.True(t, ok)
	assert.Equal(t, 1, run.MetricPosts)
	assert.Len(t, h.platform.Runs(), 1)
}

// --- faults: what is retried in place, what goes back to the collector (the fault rig) ---

// The spec's retry table (rft-api.md, "Error classes and retry policy")
// driven through the exporter, route by route: what is retried in place,
// what a push hands back to the collector, what lands, and what is not
// called.

// retryFault is one retryable row of the table, as the network or a
// gateway produces it.
type retryFault struct {
	name   string
	script rfttest.Fault // what the fake answers; unused when refused
	// refused: the connection is refused, so the request never left.
	refused bool
	// unambiguous: the failure proves the request was never processed
	// (429, connection refused), so even create is retried in place.
	unambiguous bool
	// processed: the platform did the work before the answer was lost.
	processed bool
	// retryAfter is the server's Retry-After as a duration; approx says it
	// was an HTTP-date, dated when the fault was served, whose second
	// granularity makes it inexact.
	retryAfter time.Duration
	approx     bool
}

func retryFaults() []retryFault {
	return []retryFault{
		{name: "429 without Retry-After", script: rfttest.Fault{Status: 429}, unambiguous: true},
		{name: "429 with Retry-After in seconds", script: rfttest.Fault{Status: 429, RetryAfter: "7"}, unambiguous: true, retryAfter: 7 * time.Second},
		{name: "429 with Retry-After as an HTTP-date", script: rfttest.Fault{Status: 429}, unambiguous: true, retryAfter: 30 * time.Second, approx: true},
		{name: "503", script: rfttest.Fault{Status: 503}},
		{name: "503 with Retry-After", script: rfttest.Fault{Status: 503, RetryAfter: "3"}, retryAfter: 3 * time.Second},
		{name: "502", script: rfttest.Fault{Status: 502}},
		{name: "504", script: rfttest.Fault{Status: 504}},
		{name: "502 after processing (a lost response)", script: rfttest.Fault{Status: 502, AfterProcessing: true}, processed: true},
		{name: "connection dropped before processing", script: rfttest.Fault{DropConnection: true}},
		{name: "connection dropped after processing", script: rfttest.Fault{DropConnection: true, AfterProcessing: true}, processed: true},
		{name: "no answer within the client timeout", script: rfttest.Fault{Delay: faultHang}},
		{name: "no answer within the client timeout, after processing", script: rfttest.Fault{Delay: faultHang, AfterProcessing: true}, processed: true},
		{name: "connection refused", refused: true, unambiguous: true},
	}
}

// arm makes the next n requests of route fail with f.
func (f retryFault) arm(r *faultRig, route rfttest.Route, n int) {
	if f.refused {
		r.net.refuseNext(route, n)
		return
	}
	script := f.script
	if f.approx {
		script.RetryAfterDate = f.retryAfter
	}
	faults := make([]rfttest.Fault, n)
	for i := range faults {
		faults[i] = script
	}
	r.platform.Inject(route, faults...)
}

// checkWait asserts a wait the client or the push asked for: the server's
// Retry-After when it sent one, else the first jittered backoff step.
func (f retryFault) checkWait(t *testing.T, what string, got time.Duration, jitteredBackoff bool) {
	t.Helper()
	switch {
	case f.approx:
		assert.InDelta(t, float64(f.retryAfter), float64(got), float64(3*time.Second), "%s honours the Retry-After date", what)
	case f.retryAfter > 0:
		assert.Equal(t, f.retryAfter, got, "%s honours Retry-After", what)
	case jitteredBackoff:
		assert.True(t, got >= 500*time.Millisecond && got < 1500*time.Millisecond, "%s is 1 s jittered ×0.5–1.5, got %s", what, got)
	default:
		assert.Zero(t, got, "%s: no Retry-After, no throttle", what)
	}
}

// faultRoute drives one platform route through the exporter.
type faultRoute struct {
	route rfttest.Route
	// push sends data whose delivery makes the route's request.
	push func(r *faultRig) error
	// closeOut: the request belongs to the run's asynchronous close-out,
	// so the push itself succeeds whatever happens to it.
	closeOut bool
	// landed asserts the data is on the tracked run, exactly once.
	landed func(t *testing.T, r *faultRig)
}

var faultRunKey = trainRun("faults")

func pushOneStep(r *faultRig) error {
	return r.exp.pushMetrics(context.Background(), gauges(faultRunKey, map[int64]map[string]float64{1: {"loss": 0.5}}))
}

func pushOneEpisode(r *faultRig) error {
	return r.exp.pushLogs(context.Background(), events(faultRunKey, episode(10, "x")))
}

// trackedRun is the platform run the exporter writes to: the last one
// created (an earlier one can only be an orphan of a lost create answer).
func (r *faultRig) trackedRun() rfttest.Run {
	r.t.Helper()
	runs := r.platform.Runs()
	require.NotEmpty(r.t, runs, "no run on the platform")
	return runs[len(runs)-1]
}

func oneStepLanded(t *testing.T, r *faultRig) {
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}}, r.trackedRun().Metrics)
}

func oneEpisodeLanded(t *testing.T, r *faultRig) {
	assert.Equal(t, []string{"step 10: q-x#0:0"}, objects(t, r.trackedRun()), "one confirmed object with the episode once")
}

func faultRoutes() []faultRoute {
	return []faultRoute{
		{route: rfttest.RouteCreate, push: pushOneStep, landed: oneStepLanded},
		{route: rfttest.RouteMetrics, push: pushOneStep, landed: oneStepLanded},
		{route: rfttest.RoutePresign, push: pushOneEpisode, landed: oneEpisodeLanded},
		{route: rfttest.RoutePut, push: pushOneEpisode, landed: oneEpisodeLanded},
		{route: rfttest.RouteConfirm, push: pushOneEpisode, landed: oneEpisodeLanded},
		{
			route:    rfttest.RouteFinalize,
			closeOut: true,
			push: func(r *faultRig) error {
				return r.exp.pushLogs(context.Background(), events(faultRunKey, runEnd("completed", "")))
			},
			landed: func(t *testing.T, r *faultRig) {
				run := r.trackedRun()
				assert.Equal(t, rfttest.StatusCompleted, run.Status)
				assert.True(t, run.Finalized, "closed by finalize")
				assert.Zero(t, r.calls()[rfttest.RouteStatus], "a retryable finalize failure does not fall back to the status route")
			},
		},
		{
			route:    rfttest.RouteStatus,
			closeOut: true,
			push: func(r *faultRig) error {
				return r.exp.pushLogs(context.Background(), events(faultRunKey, runEnd("failed", "boom")))
			},
			landed: func(t *testing.T, r *faultRig) {
				run := r.trackedRun()
				assert.Equal(t, rfttest.StatusFailed, run.Status)
				assert.Equal(t, "boom", run.ErrorMessage)
			},
		},
	}
}

const duplicateWarning = "a duplicate, empty run may exist"

func TestEveryRetryableFaultIsRetriedInPlaceExactlyWhereTheSpecAllows(t *testing.T) {
	for _, route := range faultRoutes() {
		for _, f := range retryFaults() {
			t.Run(string(route.route)+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				r := newFaultRig(t)
				f.arm(r, route.route, 1)
				err := route.push(r)
				if route.closeOut {
					r.waitCloseOut()
				}
				calls := r.calls()

				if f.unambiguous || route.route != rfttest.RouteCreate {
					require.NoError(t, err)
					assert.Equal(t, 2, calls[route.route], "the failed attempt and the one that landed")
					waits := r.inPlaceWaits()
					require.Len(t, waits, 1, "one wait between the two attempts")
					f.checkWait(t, "the in-place wait", waits[0], true)
					route.landed(t, r)
					assert.Len(t, r.platform.Runs(), 1, "exactly one run")
					assert.NotContains(t, r.logText(), duplicateWarning)
					return
				}

				// Create is not replayable: after an ambiguous failure it is
				// not sent again in place; the data goes back to the
				// collector and the next attempt creates again.
				require.Error(t, err)
				assert.False(t, consumererror.IsPermanent(err), "the data stays for the collector's retry")
				var back consumererror.Metrics
				require.True(t, errors.As(err, &back), "the push hands the data back: %v", err)
				assert.Equal(t, 1, back.Data().DataPointCount(), "all of it: the run has no id yet")
				f.checkWait(t, "the push's throttle", throttleOf(err), false)
				assert.Equal(t, 1, calls[rfttest.RouteCreate], "create is not replayed after an ambiguous failure")
				assert.Zero(t, calls[rfttest.RouteMetrics], "nothing is written for a run without an id")
				assert.Empty(t, r.inPlaceWaits())
				assert.Contains(t, r.logText(), duplicateWarning)
				assert.Contains(t, r.logText(), `run=prime.run.key="faults"`, "the warning names the run identity")
				orphans := 0
				if f.processed {
					orphans = 1
				}
				assert.Len(t, r.platform.Runs(), orphans, "a run only when the platform processed the create")

				require.NoError(t, route.push(r), "the collector's retry")
				runs := r.platform.Runs()
				require.Len(t, runs, orphans+1)
				if orphans == 1 {
					assert.Zero(t, runs[0].MetricPosts, "the orphan stays empty")
				}
				route.landed(t, r)
			})
		}
	}
}

// attemptsOf is how many times the client tries a route in place: the
// harness's MaxAttempts for platform calls, the default 3 for object PUTs.
func attemptsOf(route rfttest.Route) int {
	if route == rfttest.RoutePut {
		return 3
	}
	return 2
}

func TestWhenTheInPlaceAttemptsRunOutOnlyWhatFailedGoesBackToTheCollector(t *testing.T) {
	type handBack struct {
		route rfttest.Route
		push  func(r *faultRig) error
		// back asserts the handed-back data is exactly the failed part and
		// returns the collector's retry of it.
		back   func(t *testing.T, r *faultRig, err error) func() error
		landed func(t *testing.T, r *faultRig)
		calls  map[rfttest.Route]int // after the retry landed, by route, for a failing route's attempts a
	}
	threeSteps := func(r *faultRig) error {
		return r.exp.pushMetrics(context.Background(), gauges(faultRunKey, map[int64]map[string]float64{
			1: {"loss": 0.5}, 2: {"loss": 0.4}, 3: {"loss": 0.3},
		}))
	}
	metricsBack := func(wantPoints int, wantStep int64) func(*testing.T, *faultRig, error) func() error {
		return func(t *testing.T, r *faultRig, err error) func() error {
			var back consumererror.Metrics
			require.True(t, errors.As(err, &back), "the push hands data back: %v", err)
			require.Equal(t, wantPoints, back.Data().DataPointCount())
			if wantStep > 0 {
				step, _ := back.Data().ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Attributes().Get("prime.step")
				assert.Equal(t, wantStep, step.Int(), "only the step that failed")
			}
			return func() error { return r.exp.pushMetrics(context.Background(), back.Data()) }
		}
	}
	twoSteps := func(r *faultRig) error {
		return r.exp.pushLogs(context.Background(), events(faultRunKey, episode(10, "x"), episode(20, "y")))
	}
	episodesBack := func(t *testing.T, r *faultRig, err error) func() error {
		var back consumererror.Logs
		require.True(t, errors.As(err, &back), "the push hands data back: %v", err)
		// Step 10 failed with the platform down, so step 20 went back
		// unsent; its object is made by the retry.
		require.Equal(t, 2, back.Data().LogRecordCount(), "step 10's record and step 20's, unsent")
		return func() error { return r.exp.pushLogs(context.Background(), back.Data()) }
	}
	episodesLanded := func(t *testing.T, r *faultRig) {
		assert.ElementsMatch(t, []string{"step 10: q-x#0:0", "step 20: q-y#0:0"}, objects(t, r.trackedRun()), "each step once")
	}
	a := func(route rfttest.Route) int { return attemptsOf(route) }
	cases := []handBack{
		{
			// Step 1 fails: the platform is down, so steps 2 and 3 go
			// back unsent, keeping the run's steps in order.
			route: rfttest.RouteMetrics, push: threeSteps, back: metricsBack(3, 0),
			landed: func(t *testing.T, r *faultRig) {
				assert.Equal(t, map[int64]map[string]float64{1: {"loss": 0.5}, 2: {"loss": 0.4}, 3: {"loss": 0.3}}, r.trackedRun().Metrics)
			},
			calls: map[rfttest.Route]int{rfttest.RouteCreate: 1, rfttest.RouteMetrics: a(rfttest.RouteMetrics) + 3},
		},
		{
			route: rfttest.RoutePresign, push: twoSteps, back: episodesBack, landed: episodesLanded,
			calls: map[rfttest.Route]int{rfttest.RouteCreate: 1, rfttest.RoutePresign: a(rfttest.RoutePresign) + 2, rfttest.RoutePut: 2, rfttest.RouteConfirm: 2},
		},
		{
			// The retry reuses the presigned URL: no second presign.
			route: rfttest.RoutePut, push: twoSteps, back: episodesBack, landed: episodesLanded,
			calls: map[rfttest.Route]int{rfttest.RouteCreate: 1, rfttest.RoutePresign: 2, rfttest.RoutePut: a(rfttest.RoutePut) + 2, rfttest.RouteConfirm: 2},
		},
		{
			// The retry only confirms: the object is never uploaded twice.
			route: rfttest.RouteConfirm, push: twoSteps, back: episodesBack, landed: episodesLanded,
			calls: map[rfttest.Route]int{rfttest.RouteCreate: 1, rfttest.RoutePresign: 2, rfttest.RoutePut: 2, rfttest.RouteConfirm: a(rfttest.RouteConfirm) + 2},
		},
	}
	for _, c := range cases {
		for _, f := range retryFaults() {
			t.Run(string(c.route)+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				r := newFaultRig(t)
				f.arm(r, c.route, a(c.route))
				err := c.push(r)
				require.Error(t, err)
				assert.False(t, consumererror.IsPermanent(err))
				f.checkWait(t, "the push's throttle", throttleOf(err), false)
				retry := c.back(t, r, err)
				require.NoError(t, retry(), "the collector's retry")
				c.landed(t, r)
				assert.Len(t, r.platform.Runs(), 1)
				calls := r.calls()
				for route, want := range c.calls {
					assert.Equal(t, want, calls[route], "%s requests", route)
				}
				assert.Zero(t, calls[rfttest.RouteFinalize]+calls[rfttest.RouteStatus])
			})
		}
	}
}

func TestACreateRefusedUntilTheAttemptsRunOutIsHandedBackWithoutADuplicateWarning(t *testing.T) {
	for _, f := range retryFaults() {
		if !f.unambiguous {
			continue // the table above: one ambiguous failure already ends the push
		}
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			r := newFaultRig(t)
			f.arm(r, rfttest.RouteCreate, 2)
			err := pushOneStep(r)
			require.Error(t, err)
			assert.False(t, consumererror.IsPermanent(err))
			f.checkWait(t, "the push's throttle", throttleOf(err), false)
			var back consumererror.Metrics
			require.True(t, errors.As(err, &back))
			assert.Equal(t, 1, back.Data().DataPointCount())
			assert.Empty(t, r.platform.Runs(), "the request was never processed")
			assert.NotContains(t, r.logText(), duplicateWarning, "nothing can have been created")
			assert.Zero(t, r.calls()[rfttest.RouteMetrics])

			require.NoError(t, r.exp.pushMetrics(context.Background(), back.Data()))
			oneStepLanded(t, r)
			assert.Len(t, r.platform.Runs(), 1)
		})
	}
}

func TestACloseOutThatFailsForAWhileIsTriedAgainUntilItLands(t *testing.T) {
	for _, route := range faultRoutes() {
		if !route.closeOut {
			continue
		}
		for _, f := range retryFaults() {
			t.Run(string(route.route)+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				r := newFaultRig(t)
				// Two rounds of in-place attempts fail; the third lands.
				f.arm(r, route.route, 4)
				require.NoError(t, route.push(r))
				r.waitCloseOut()
				route.landed(t, r)
				assert.Equal(t, 5, r.calls()[route.route])
				assert.Contains(t, r.logText(), "Closed out run")
				assert.NotContains(t, r.logText(), "Could not close out run")
			})
		}
	}
}

// A 401 on finalize that whoami does not confirm (the platform accepts the
// key) was about that request: it falls back to the status route as any
// other refusal of finalize does, and the collector goes on.
func TestAFinalize401ThatTheKeySurvivesFallsBackToTheStatusRoute(t *testing.T) {
	r := newFaultRig(t)
	r.platform.Inject(rfttest.RouteFinalize, rfttest.Fault{Status: http.StatusUnauthorized})
	route := faultRouteOf(t, rfttest.RouteFinalize)
	require.NoError(t, route.push(r))
	r.waitCloseOut()
	run := r.trackedRun()
	assert.Equal(t, rfttest.StatusCompleted, run.Status)
	assert.Equal(t, 1, r.calls()[rfttest.RouteStatus])
	whoamis := 0
	for _, req := range r.platform.Requests() {
		if strings.HasSuffix(req.Path, "/user/whoami") {
			whoamis++
		}
	}
	assert.Equal(t, 1, whoamis, "the 401 was checked with whoami")
	assert.Contains(t, r.logText(), "accepts the API key")
}

// faultRouteOf is faultRoutes' row of route.
func faultRouteOf(t *testing.T, route rfttest.Route) faultRoute {
	t.Helper()
	for _, fr := range faultRoutes() {
		if fr.route == route {
			return fr
		}
	}
	t.Fatalf("no fault route %s", route)
	return faultRoute{}
}

// The rows of the table that are never retried: the status codes that
// say the request itself is wrong or not allowed.
func TestAPermanentAnswerIsNeitherRetriedInPlaceNorHandedBack(t *testing.T) {
	type outcome struct {
		reason string // the records_rejected reason of the dropped data; "" for a close-out
		check  func(t *testing.T, r *faultRig, status int)
	}
	stillRunning := func(t *testing.T, r *faultRig, _ int) {
		assert.Equal(t, rfttest.StatusRunning, r.trackedRun().Status, "nothing more can be done")
		assert.Contains(t, r.logText(), "Could not close out run")
	}
	outcomes := map[rfttest.Route]outcome{
		rfttest.RouteCreate: {reason: "run_refused", check: func(t *testing.T, r *faultRig, _ int) {
			assert.Empty(t, r.platform.Runs())
			assert.Zero(t, r.calls()[rfttest.RouteMetrics])
		}},
		rfttest.RouteMetrics: {reason: "platform_rejected"},
		rfttest.RoutePresign: {reason: "upload_rejected"},
		rfttest.RoutePut:     {reason: "upload_rejected"},
		rfttest.RouteConfirm: {reason: "upload_rejected"},
		rfttest.RouteFinalize: {check: func(t *testing.T, r *faultRig, status int) {
			run := r.trackedRun()
			if status == http.StatusUnauthorized {
				// A bad key is bad for every call: no fallback request.
				assert.Equal(t, rfttest.StatusRunning, run.Status)
				assert.Zero(t, r.calls()[rfttest.RouteStatus])
				return
			}
			assert.Equal(t, rfttest.StatusCompleted, run.Status, "a refused finalize falls back to the status route")
			assert.False(t, run.Finalized)
			assert.Equal(t, 1, r.calls()[rfttest.RouteStatus])
		}},
		rfttest.RouteStatus: {check: stillRunning},
	}
	for _, route := range faultRoutes() {
		for _, status := range []int{400, 401, 403, 404} {
			t.Run(string(route.route)+"/"+http.StatusText(status), func(t *testing.T) {
				t.Parallel()
				r := newFaultRig(t)
				r.platform.Inject(route.route, rfttest.Fault{Status: status})
				if status == http.StatusUnauthorized {
					// whoami refuses the key too: the key is bad, not the request.
					r.platform.Inject(rfttest.RouteWhoami, rfttest.Fault{Status: status})
				}
				require.NoError(t, route.push(r), "dropped and counted, not retried")
				if route.closeOut {
					r.waitCloseOut()
				}
				assert.Equal(t, 1, r.calls()[route.route], "not retried in place")
				assert.Empty(t, r.inPlaceWaits())
				o := outcomes[route.route]
				if o.reason != "" && status == http.StatusUnauthorized && route.route != rfttest.RouteCreate {
					// The key itself is refused: the data of the request
					// that trips the guard counts as every later one's.
					o.reason = "unauthorized"
				}
				if o.reason != "" {
					assert.Positive(t, r.count(metricRejected, map[string]string{"reason": o.reason}), "counted as %s", o.reason)
				}
				if o.check != nil {
					o.check(t, r, status)
				}
			})
		}
	}
}

func TestOnceThePlatformIsDownTheLaterStepsGoBackUnsent(t *testing.T) {
	tests := []struct {
		name   string
		fault  rfttest.Fault
		posted []int64 // the steps on the platform after the push
		back   int     // points handed back
		// order is every metrics request's step, in arrival order,
		// through the push and its retry.
		order []int64
	}{
		{"a 503 stops the push and the steps stay in order", rfttest.Fault{Status: 503}, nil, 3, []int64{1, 1, 1, 2, 3}},
		{"a 502 stops the push and the steps stay in order", rfttest.Fault{Status: 502}, nil, 3, []int64{1, 1, 1, 2, 3}},
		{"a 500 is about one post: the later steps still go", rfttest.Fault{Status: 500}, []int64{2, 3}, 1, []int64{1, 1, 2, 3, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newFaultRig(t)
			r.platform.Inject(rfttest.RouteMetrics, tt.fault, tt.fault)
			err := r.exp.pushMetrics(context.Background(), gauges(faultRunKey, map[int64]map[string]float64{
				1: {"loss": 0.5}, 2: {"loss": 0.4}, 3: {"loss": 0.3},
			}))
			var back consumererror.Metrics
			require.ErrorAs(t, err, &back)
			assert.Equal(t, tt.back, back.Data().DataPointCount())
			var posted []int64
			for step := range r.trackedRun().Metrics {
				posted = append(posted, step)
			}
			assert.ElementsMatch(t, tt.posted, posted)

			require.NoError(t, r.exp.pushMetrics(context.Background(), back.Data()))
			assert.Len(t, r.trackedRun().Metrics, 3, "everything lands with the retry")
			var order []int64
			for _, req := range r.platform.Requests() {
				if rfttest.TrainingRoute(req.Method, req.Path) != rfttest.RouteMetrics {
					continue
				}
				var body struct {
					Metrics map[string]float64 `json:"metrics"`
				}
				require.NoError(t, json.Unmarshal(req.Body, &body))
				order = append(order, int64(body.Metrics["step"]))
			}
			assert.Equal(t, tt.order, order)
		})
	}
}

// The collector's batcher merges many requests into one push: one
// resource per request, each with the run's next step.
func TestOnceThePlatformIsDownTheRestOfTheBatchGoesBackUnsent(t *testing.T) {
	t.Run("metrics", func(t *testing.T) {
		r := newFaultRig(t)
		md := gauges(faultRunKey, map[int64]map[string]float64{1: {"loss": 0.5}})
		gauges(faultRunKey, map[int64]map[string]float64{2: {"loss": 0.4}}).ResourceMetrics().At(0).CopyTo(md.ResourceMetrics().AppendEmpty())
		r.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
		var back consumererror.Metrics
		require.ErrorAs(t, r.exp.pushMetrics(context.Background(), md), &back)
		assert.Equal(t, 2, back.Data().DataPointCount(), "both resources come back")
		assert.Equal(t, 2, r.calls()[rfttest.RouteMetrics], "step 2 was not posted")
	})
	t.Run("logs", func(t *testing.T) {
		r := newFaultRig(t)
		ld := events(faultRunKey, metricsEvent(10, map[string]float64{"lr": 0.1}), episode(10, "x"))
		events(faultRunKey, episode(20, "y")).ResourceLogs().At(0).CopyTo(ld.ResourceLogs().AppendEmpty())
		r.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
		var back consumererror.Logs
		require.ErrorAs(t, r.exp.pushLogs(context.Background(), ld), &back)
		assert.Equal(t, 3, back.Data().LogRecordCount(), "the event and both episodes come back")
		assert.Zero(t, r.calls()[rfttest.RoutePresign], "no upload was tried")

		require.NoError(t, r.exp.pushLogs(context.Background(), back.Data()))
		assert.ElementsMatch(t, []string{"step 10: q-x#0:0", "step 20: q-y#0:0"}, objects(t, r.trackedRun()))
		assert.Equal(t, map[int64]map[string]float64{10: {"lr": 0.1}}, r.trackedRun().Metrics)
	})
}

// --- benchmarks ---

// pushShape is one benchmark batch: requests of perRequest episodes of one
// run and step, side by side as exporterhelper's batcher appends them,
// each episode's chat text about textBytes.
type pushShape struct {
	name                 string
	requests, perRequest int
	textBytes            int
}

func pushShapes() []pushShape {
	return []pushShape{
		{name: "2KB", requests: 4, perRequest: 256, textBytes: 2 << 10},
		{name: "200KB", requests: 4, perRequest: 8, textBytes: 200 << 10},
	}
}

// pushBatch builds the shape's batch for a run: prime.episode records whose
// trajectory has two branches, the second repeating the first's
// conversation, as a multi-turn verifiers rollout does.
func pushBatch(s pushShape, run string, seed uint64) plog.Logs {
	r := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("the of and to a in is that for it as was with be by on not this are or from at which answer step therefore compute value total number let solve check result")
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	ld := plog.NewLogs()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for q := range s.requests {
		rl := ld.ResourceLogs().AppendEmpty()
		resource(rl.Resource(), trainRun(run))
		records := rl.ScopeLogs().AppendEmpty().LogRecords()
		for i := range s.perRequest {
			lr := records.AppendEmpty()
			lr.SetEventName("prime.episode")
			lr.SetTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Duration(q*s.perRequest+i) * time.Microsecond)))
			lr.Attributes().PutInt("prime.work.step", 10)
			body := lr.Body().SetEmptyMap()
			question, reasoning := text(s.textBytes/4), text(s.textBytes-s.textBytes/4)
			body.PutStr("prompt", question)
			body.PutStr("answer", "42")
			body.PutDouble("reward", 1)
			body.PutDouble("advantage", r.Float64()-0.5)
			traj := body.PutEmptySlice("trajectory")
			history := [][2]string{{"system", "Think step by step."}, {"user", question}, {"assistant", reasoning}, {"user", "Tool result: 42"}, {"assistant", "The answer is 42."}}
			for _, end := range []int{3, 5} {
				msgs := traj.AppendEmpty().SetEmptyMap().PutEmptySlice("messages")
				for _, m := range history[:end] {
					msg := msgs.AppendEmpty().SetEmptyMap()
					msg.PutStr("role", m[0])
					msg.PutStr("content", m[1])
				}
			}
			body.PutEmptyMap("metrics").PutDouble("correct", 1)
		}
	}
	return ld
}

// BenchmarkPushLogs is the exporter's samples path end to end, from a
// batch's records to its confirmed objects: mapping, fingerprints, Parquet
// with Snappy, presign → PUT → confirm against the fake platform (which
// keeps no bytes). Each op is a new run's batch, so none is a replay.
// BenchmarkPushLogsSnappyFloor is its floor: Snappy over the same rows'
// cell text. MB/s counts that text in both.
func BenchmarkPushLogs(b *testing.B) {
	for _, s := range pushShapes() {
		b.Run(s.name, func(b *testing.B) {
			srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey, DiscardObjects: true})
			b.Cleanup(srv.Close)
			cfg := createDefaultConfig().(*Config)
			cfg.ClientConfig.Endpoint = srv.BaseURL() + "/rft"
			cfg.APIKey = configopaque.String(testAPIKey)
			cfg.TeamID = "team-1"
			set := exportertest.NewNopSettings(metadata.Type)
			shared, err := newExporters().get(cfg, set)
			if err != nil {
				b.Fatal(err)
			}
			if err := shared.Start(context.Background(), componenttest.NewNopHost()); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = shared.Shutdown(context.Background()) })
			exp := shared.Unwrap()
			batches := make([]plog.Logs, 0, 8)
			for i := range cap(batches) {
				batches = append(batches, pushBatch(s, fmt.Sprintf("bench-%d", i), uint64(i)))
			}
			b.SetBytes(int64(len(cellText(b, batches[0]))))
			b.ReportAllocs()
			b.ResetTimer()
			n, gen := 0, 0
			for b.Loop() {
				if n == len(batches) { // new runs: nothing is a replay
					b.StopTimer()
					gen++
					for i := range batches {
						batches[i] = pushBatch(s, fmt.Sprintf("bench-%d-%d", gen, i), uint64(gen*len(batches)+i))
					}
					n = 0
					b.StartTimer()
				}
				if err := exp.pushLogs(context.Background(), batches[n]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(s.requests*s.perRequest*b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}

func BenchmarkPushLogsSnappyFloor(b *testing.B) {
	for _, s := range pushShapes() {
		b.Run(s.name, func(b *testing.B) {
			text := cellText(b, pushBatch(s, "bench", 1))
			dst := make([]byte, s2.MaxEncodedLen(sampletable.PageSize))
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for b.Loop() {
				for at := 0; at < len(text); at += sampletable.PageSize {
					s2.EncodeSnappy(dst, text[at:min(len(text), at+sampletable.PageSize)])
				}
			}
			b.ReportMetric(float64(s.requests*s.perRequest*b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}

// cellText is the string cells of the batch's rows, as the table holds them.
func cellText(b *testing.B, ld plog.Logs) []byte {
	var text []byte
	for _, rl := range ld.ResourceLogs().All() {
		for _, lr := range rl.ScopeLogs().At(0).LogRecords().All() {
			rec, err := sampletable.FromRecord(lr.Attributes(), lr.Body(), lr.Timestamp(), lr.ObservedTimestamp(), time.Now())
			if err != nil {
				b.Fatal(err)
			}
			text = sampletable.AppendCellText(text, "run-00000000", rec.Step, rec.Rows)
		}
	}
	return text
}

package primeexporter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

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
// through its API only; endWithStep2InRetry checks that retries carry it.
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

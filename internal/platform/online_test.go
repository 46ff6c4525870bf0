package platform

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func newOnline(t *testing.T, srv *rfttest.Server, key string) *Online {
	t.Helper()
	c, err := rft.New(rft.Options{BaseURL: srv.BaseURL(), APIKey: key, MaxAttempts: 1})
	require.NoError(t, err)
	o := NewOnline(c, componenttest.NewNopHost(), zap.NewNop())
	t.Cleanup(o.CloseIdleConnections)
	return o
}

func TestAStoreResumesFromTheProgressAnEarlierAttemptSaved(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: "k"})
	t.Cleanup(srv.Close)
	o := newOnline(t, srv, "k")
	ctx := context.Background()
	srv.AddRun("run-1")

	var saved []Object
	srv.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 400})
	err := store(ctx, o, "run-1", Object{Step: 10}, []byte("body"), func(obj Object) { saved = append(saved, obj) })
	require.Error(t, err)
	require.Len(t, saved, 1, "the upload: presign and PUT in one stage")
	assert.NotEmpty(t, saved[0].Key)
	assert.True(t, saved[0].Put)

	before := len(srv.Requests())
	require.NoError(t, store(ctx, o, "run-1", saved[0], []byte("body"), func(Object) { t.Fatal("nothing new to save") }))
	after := srv.Requests()[before:]
	require.Len(t, after, 1, "only the confirm is left")
	assert.Contains(t, after[0].Path, "confirm")
	run, _ := srv.Run("run-1")
	require.Len(t, run.Objects, 1)
	assert.True(t, run.Objects[0].Confirmed)
}

func TestAnExpiredURLIsPresignedAgainUnlessThePUTWentThrough(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: "k"})
	t.Cleanup(srv.Close)
	o := newOnline(t, srv, "k")
	ctx := context.Background()
	srv.AddRun("run-1")
	stale := Object{Step: 10, URL: "http://127.0.0.1:1/gone", Key: "old", PresignedAt: time.Now().Add(-time.Hour), ExpiresIn: 15 * time.Minute}
	var saved []Object
	srv.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 400})
	require.Error(t, store(ctx, o, "run-1", stale, []byte("b"), func(obj Object) { saved = append(saved, obj) }))
	require.Len(t, saved, 1)
	assert.NotEqual(t, "old", saved[0].Key, "a fresh key")
	assert.True(t, saved[0].Put)

	// The PUT went through: however old its URL, only the confirm is left.
	put := saved[0]
	put.PresignedAt = time.Now().Add(-time.Hour)
	before := srv.RequestsByRoute()
	require.NoError(t, store(ctx, o, "run-1", put, []byte("b"), func(Object) { t.Fatal("nothing new to save") }))
	after := srv.RequestsByRoute()
	assert.Equal(t, before[rfttest.RoutePresign], after[rfttest.RoutePresign], "no presign")
	assert.Equal(t, before[rfttest.RoutePut], after[rfttest.RoutePut], "no PUT")
	assert.Equal(t, before[rfttest.RouteConfirm]+1, after[rfttest.RouteConfirm])
}

func TestAPUTThatFailsAfterAFreshPresignIsTriedAgainAtThatURLWithoutASecondPresign(t *testing.T) {
	srv, o, _, _ := watchedOnline(t)
	ctx := context.Background()

	srv.Inject(rfttest.RoutePut, rfttest.Fault{Status: 500})
	failed, done, err := o.Advance(ctx, "run-1", Object{Step: 10}, []byte("b"))
	require.Error(t, err)
	assert.False(t, done)
	assert.NotEmpty(t, failed.URL, "the presigned URL comes back with the PUT's error")
	assert.NotEmpty(t, failed.Key)
	assert.False(t, failed.PresignedAt.IsZero())
	assert.False(t, failed.Put)

	put, done, err := o.Advance(ctx, "run-1", failed, []byte("b"))
	require.NoError(t, err)
	assert.False(t, done, "the confirm is left")
	assert.Equal(t, failed.Key, put.Key)
	assert.Equal(t, failed.URL, put.URL)
	assert.True(t, put.Put)
	byRoute := srv.RequestsByRoute()
	assert.Equal(t, 1, byRoute[rfttest.RoutePresign], "one presign")
	assert.Equal(t, 2, byRoute[rfttest.RoutePut], "two PUTs to the one URL")
}

// Object storage's 401 is about the URL, not the key: only the presign's
// 401 goes to whoami, and trips the guard when whoami refuses the key too.
func TestA401OnThePUTLeavesTheKeyGuardAloneWhileOneOnThePresignTripsIt(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{{Key: "sk-a", ID: "a"}}})
	t.Cleanup(srv.Close)
	o := newOnline(t, srv, "sk-a")
	ctx := context.Background()
	srv.AddRunOwnedBy("run-1", "a")

	srv.Inject(rfttest.RoutePut, rfttest.Fault{Status: 401})
	_, _, err := o.Advance(ctx, "run-1", Object{Step: 1}, []byte("b"))
	rerr, ok := rft.AsError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 401, rerr.StatusCode, "the PUT's 401: %v", err)
	assert.NotErrorIs(t, err, ErrRequestUnauthorized, "not taken for the API's 401")
	require.NoError(t, o.Refused())
	assert.Zero(t, srv.RequestsByRoute()[rfttest.RouteWhoami], "whoami is not asked")

	srv.RevokeKey("sk-a")
	puts := srv.RequestsByRoute()[rfttest.RoutePut]
	_, _, err = o.Advance(ctx, "run-1", Object{Step: 2}, []byte("b"))
	require.Error(t, err)
	require.ErrorIs(t, o.Refused(), ErrUnauthorized, "the presign's 401, confirmed by whoami, trips the guard")
	assert.Equal(t, 1, srv.RequestsByRoute()[rfttest.RouteWhoami])
	assert.Equal(t, puts, srv.RequestsByRoute()[rfttest.RoutePut], "no PUT after a failed presign")
}

func TestA401StopsEveryCallWithoutARequest(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: "the-right-key"})
	t.Cleanup(srv.Close)
	o := newOnline(t, srv, "a-wrong-key")
	ctx := context.Background()
	_, err := o.CreateRun(ctx, rft.CreateRunRequest{BaseModel: "m", Environments: []rft.Environment{}}, Origin{})
	require.Error(t, err)
	require.Error(t, o.Refused())
	assert.ErrorIs(t, o.Refused(), ErrUnauthorized)

	before := len(srv.Requests())
	assert.ErrorIs(t, o.PostMetrics(ctx, "run-1", map[string]float64{"step": 1}), ErrUnauthorized)
	assert.ErrorIs(t, o.Finalize(ctx, "run-1", 0), ErrUnauthorized)
	assert.ErrorIs(t, store(ctx, o, "run-1", Object{Step: 1}, nil, func(Object) {}), ErrUnauthorized)
	assert.Len(t, srv.Requests(), before, "no request after the refusal")
}

// A 401 that whoami does not confirm (the platform accepts the key) fails
// that one request for good, and nothing else: a sender who can make the
// platform answer 401 for a run must not stop every run of the collector.
func TestA401ThatWhoamiDoesNotConfirmFailsThatRequestOnly(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: "k"})
	t.Cleanup(srv.Close)
	o := newOnline(t, srv, "k")
	ctx := context.Background()
	srv.AddRun("run-1")
	srv.AddRun("run-2")

	srv.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 401}, rfttest.Fault{Status: 401})
	err := o.PostMetrics(ctx, "run-1", map[string]float64{"step": 1})
	require.ErrorIs(t, err, ErrRequestUnauthorized)
	assert.True(t, Permanent(err), "that request's data is not retried")
	assert.False(t, KeyRefused(err), "the key is not refused")
	require.NoError(t, o.Refused())

	// The second 401 within the confirmation's lifetime asks whoami no more.
	whoamis := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if r.Path == "/api/v1/user/whoami" {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, whoamis())
	require.ErrorIs(t, o.PostMetrics(ctx, "run-1", map[string]float64{"step": 2}), ErrRequestUnauthorized)
	assert.Equal(t, 1, whoamis())

	require.NoError(t, o.PostMetrics(ctx, "run-2", map[string]float64{"step": 1}), "every other call goes on")
	require.NoError(t, o.Refused())
}

func TestATenantsKeyRevokedRightAfterWhoamiAcceptedItTripsItsGuardAtTheFirst401(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{{Key: "sk-carol", ID: "carol"}}})
	t.Cleanup(srv.Close)
	var told int
	o := newOnline(t, srv, "sk-carol").ForTenant(func() { told++ })
	ctx := context.Background()
	srv.AddRun("run-1")

	// whoami accepts the key on a 401 about one request...
	srv.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 401})
	require.ErrorIs(t, o.PostMetrics(ctx, "run-1", map[string]float64{"step": 1}), ErrRequestUnauthorized)
	// ...and the key is revoked a moment later: the next 401 asks again.
	srv.RevokeKey("sk-carol")
	require.Error(t, o.PostMetrics(ctx, "run-1", map[string]float64{"step": 2}))
	require.ErrorIs(t, o.Refused(), ErrTenantUnauthorized, "the tenant's guard tripped at the first 401 after the revocation")
	assert.Equal(t, 1, told, "the gateway is told of the trip, once")
	require.Error(t, o.PostMetrics(ctx, "run-1", map[string]float64{"step": 3}))
	assert.Equal(t, 1, told)
}

// watchedOnline is an Online with one attempt per call (PUTs too), its
// log observed and its outage watches on a clock the test moves; the fake
// platform holds run-1.
func watchedOnline(t *testing.T) (*rfttest.Server, *Online, *atomic.Int64, *observer.ObservedLogs) {
	t.Helper()
	srv := rfttest.NewServer(rfttest.Options{APIKey: "k"})
	t.Cleanup(srv.Close)
	srv.AddRun("run-1")
	now := &atomic.Int64{}
	core, logs := observer.New(zapcore.InfoLevel)
	c, err := rft.New(rft.Options{BaseURL: srv.BaseURL(), APIKey: "k", MaxAttempts: 1, PutAttempts: 1})
	require.NoError(t, err)
	o := NewOnline(c, componenttest.NewNopHost(), zap.New(core), WithOutageClock(func() time.Time { return time.Unix(0, now.Load()) }))
	t.Cleanup(o.CloseIdleConnections)
	return srv, o, now, logs
}

// Object storage is another service than the API: its outage is its own,
// and the API's successes meanwhile do not end it.
func TestAnObjectStorageOutageIsWatchedApartFromTheAPI(t *testing.T) {
	srv, o, now, logs := watchedOnline(t)
	ctx := context.Background()

	srv.Inject(rfttest.RoutePut, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	require.Error(t, store(ctx, o, "run-1", Object{Step: 1}, []byte("b"), func(Object) {}), "presign lands, the PUT fails")
	require.NoError(t, o.PostMetrics(ctx, "run-1", map[string]float64{"step": 1, "loss": 1}))
	now.Add(int64(61 * time.Second))
	require.Error(t, store(ctx, o, "run-1", Object{Step: 2}, []byte("b"), func(Object) {}))
	require.Equal(t, 1, logs.Len())
	warning := logs.All()[0].ContextMap()
	assert.Equal(t, "object storage", warning["service"])
	assert.Equal(t, "put object", warning["routes"])
	assert.Equal(t, int64(2), warning["failures"])

	require.NoError(t, store(ctx, o, "run-1", Object{Step: 3}, []byte("b"), func(Object) {}))
	require.Equal(t, 2, logs.Len())
	assert.Equal(t, "Outage over: the service answers again", logs.All()[1].Message)
	assert.Equal(t, "object storage", logs.All()[1].ContextMap()["service"])
}

// A presign that lands before a failed PUT is the API answering: it ends
// the API's outage, and the PUT's failure is object storage's.
func TestAPresignThatLandsBeforeAFailedPUTEndsTheAPIsOutage(t *testing.T) {
	srv, o, _, logs := watchedOnline(t)
	ctx := context.Background()

	srv.Inject(rfttest.RoutePresign, rfttest.Fault{Status: 503})
	srv.Inject(rfttest.RoutePut, rfttest.Fault{Status: 503})
	_, _, err := o.Advance(ctx, "run-1", Object{Step: 1}, []byte("b"))
	require.Error(t, err, "the presign fails")
	assert.True(t, o.api.down.Load(), "the API's outage began")
	assert.False(t, o.objects.down.Load(), "nothing was PUT")

	_, _, err = o.Advance(ctx, "run-1", Object{Step: 1}, []byte("b"))
	require.Error(t, err, "the presign lands, the PUT fails")
	assert.False(t, o.api.down.Load(), "the API answered")
	assert.True(t, o.objects.down.Load(), "object storage's outage began")
	require.Equal(t, 1, logs.Len())
	assert.Equal(t, "platform API", logs.All()[0].ContextMap()["service"])
	assert.Equal(t, "Outage over: the service answers again", logs.All()[0].Message)
}

// Only a failure that says the service is down counts: a refusal is an
// answer, and a call cut short by shutdown says nothing.
func TestARefusalOrACancelledCallIsNoOutage(t *testing.T) {
	srv, o, now, logs := watchedOnline(t)

	srv.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 400}, rfttest.Fault{Status: 422})
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, ctx := range []context.Context{context.Background(), context.Background(), cancelled} {
		require.Error(t, o.PostMetrics(ctx, "run-1", map[string]float64{"step": 1, "loss": 1}))
		now.Add(int64(time.Minute))
	}
	require.NoError(t, o.PostMetrics(context.Background(), "run-1", map[string]float64{"step": 1, "loss": 1}))
	assert.Zero(t, logs.Len(), "no outage began, so none ended")
}

// store takes obj through both stages, saving the object after the
// upload, as the uploader does; an error ends it.
func store(ctx context.Context, objs Objects, runID string, obj Object, body []byte, save func(Object)) error {
	for {
		next, done, err := objs.Advance(ctx, runID, obj, body)
		if err != nil || done {
			return err
		}
		obj = next
		save(obj)
	}
}

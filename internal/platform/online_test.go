package platform

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"

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
	err := o.Store(ctx, "run-1", Object{Step: 10}, []byte("body"), func(obj Object) { saved = append(saved, obj) })
	require.Error(t, err)
	require.Len(t, saved, 2, "the presign, then the PUT")
	assert.NotEmpty(t, saved[0].Key)
	assert.False(t, saved[0].Put)
	assert.True(t, saved[1].Put)

	before := len(srv.Requests())
	require.NoError(t, o.Store(ctx, "run-1", saved[1], []byte("body"), func(Object) { t.Fatal("nothing new to save") }))
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
	srv.AddRun("run-1")
	stale := Object{Step: 10, URL: "http://127.0.0.1:1/gone", Key: "old", PresignedAt: time.Now().Add(-time.Hour), ExpiresIn: 15 * time.Minute}
	var saved []Object
	require.NoError(t, o.Store(context.Background(), "run-1", stale, []byte("b"), func(obj Object) { saved = append(saved, obj) }))
	require.NotEmpty(t, saved)
	assert.NotEqual(t, "old", saved[0].Key, "a fresh key")
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
	assert.ErrorIs(t, o.Store(ctx, "run-1", Object{Step: 1}, nil, func(Object) {}), ErrUnauthorized)
	assert.Len(t, srv.Requests(), before, "no request after the refusal")
}

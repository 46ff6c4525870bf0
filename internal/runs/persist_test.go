package runs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"
	"github.com/primeintellect/primeexporter/internal/upload"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// restartable starts registries one after another on one platform and one
// storage extension's data, the way a collector with file_storage
// restarts.
type restartable struct {
	t        *testing.T
	platform *rfttest.Server
	api      *platform.Online
	storage  *memstorage.Client
	edits    []func(*runs.Config)
}

func newRestartable(t *testing.T, edits ...func(*runs.Config)) *restartable {
	srv := fleettest.NewPlatform(t)
	return &restartable{t: t, platform: srv, api: fleettest.Online(t, srv), storage: memstorage.New(), edits: edits}
}

// start is one collector process; stop it with Crash (kill -9) or
// Shutdown.
func (rs *restartable) start() *fleettest.Collector {
	cfg := fleettest.Config(append([]func(*runs.Config){retryOnFailure}, rs.edits...)...)
	return fleettest.NewCollector(rs.t, cfg, rs.api, runstore.NewExtensionStore(rs.storage, runstore.ExtensionOptions{}))
}

// uploader is the owner of a process's sample objects on objs and store,
// as the exporter's backend builds it.
func uploader(objs platform.Objects, store runs.Store) *upload.Objects {
	return upload.NewObjects(objs, store.(upload.ObjectStore), logonce.New(zap.NewNop(), 0))
}

// uploadEpisodes is one push of step's episodes (their fingerprints) for
// res's run, as the exporter's upload makes it: the episodes delivered
// before are left out and the rest go as one object through o, whose body
// names its sample_id range and its episodes. It returns the episodes left
// out.
func uploadEpisodes(reg *runs.Registry, o *upload.Objects, res pcommon.Resource, step int64, episodes ...uint64) (leftOut []uint64, err error) {
	ctx := context.Background()
	l, err := reg.Acquire(ctx, res, reject.SignalLogs, len(episodes))
	if err != nil {
		return nil, err
	}
	defer l.Release()
	delivered, err := o.Delivered(ctx, l, step, episodes)
	if err != nil {
		return nil, err
	}
	var fresh []uint64
	var fp uint64
	for i, e := range episodes {
		if delivered[i] {
			leftOut = append(leftOut, e)
			continue
		}
		fresh = append(fresh, e)
		fp = fp*31 + e
	}
	if len(fresh) == 0 {
		return leftOut, nil
	}
	obj := o.Take(ctx, l, fp, step)
	return leftOut, o.Send(ctx, l, fp, obj, fmt.Appendf(nil, "range %d: %v", obj.Range, fresh), fresh)
}

// pathsSince lists the paths of the platform's requests from the n-th on,
// without the API's prefix.
func pathsSince(srv *rfttest.Server, n int) []string {
	var out []string
	for _, r := range srv.Requests()[n:] {
		out = append(out, strings.TrimPrefix(r.Path, "/api/v1"))
	}
	return out
}

// objectsOf lists a run's confirmed objects as "step S: <body>".
func objectsOf(t *testing.T, run rfttest.Run) []string {
	t.Helper()
	var out []string
	for _, o := range run.Objects {
		require.True(t, o.Confirmed, "object %s is confirmed", o.Key)
		out = append(out, fmt.Sprintf("step %d: %s", o.Step, o.Body))
	}
	return out
}

func TestARestartWithStorageKeepsTheRunAndItsSampleRanges(t *testing.T) {
	rs := newRestartable(t)
	first := rs.start()
	_, err := uploadEpisodes(first.Reg, uploader(first.Objects, first.Store), fleettest.KeyedResource("keep"), 10, 1)
	require.NoError(t, err)
	_, err = postStep(first.Reg, fleettest.KeyedResource("keep"), 10, map[string]float64{"loss": 1})
	require.NoError(t, err)
	first.Crash()

	second := rs.start()
	_, err = uploadEpisodes(second.Reg, uploader(second.Objects, second.Store), fleettest.KeyedResource("keep"), 10, 2)
	require.NoError(t, err)
	_, err = postStep(second.Reg, fleettest.KeyedResource("keep"), 11, map[string]float64{"loss": 0.5})
	require.NoError(t, err)
	endRun(t, second.Reg, fleettest.KeyedResource("keep"), "completed", "")
	run := waitStatus(t, rs.platform, onlyRun(t, rs.platform).ID, rfttest.StatusCompleted)
	assert.Len(t, rs.platform.Runs(), 1, "one run across the restart")
	assert.Equal(t, []string{"step 10: range 0: [1]", "step 10: range 1024: [2]"}, objectsOf(t, run),
		"the restart counts in the band above the one the run's record held, reusing no range")
	assert.Equal(t, map[int64]map[string]float64{10: {"loss": 1}, 11: {"loss": 0.5}}, run.Metrics)
}

func TestAReplayedBatchAfterARestartIsNotUploadedTwice(t *testing.T) {
	rs := newRestartable(t)
	first := rs.start()
	_, err := uploadEpisodes(first.Reg, uploader(first.Objects, first.Store), fleettest.KeyedResource("replay"), 10, 1, 2)
	require.NoError(t, err)
	// The collector died before the persistent queue learnt of the
	// success: it hands the same batch over again.
	first.Crash()
	second := rs.start()
	leftOut, err := uploadEpisodes(second.Reg, uploader(second.Objects, second.Store), fleettest.KeyedResource("replay"), 10, 1, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"step 10: range 0: [1 2]"}, objectsOf(t, onlyRun(t, rs.platform)))
	assert.Equal(t, []uint64{1, 2}, leftOut, "both episodes are known delivered")
}

func TestAnUploadThatWasPutBeforeACrashIsOnlyConfirmedAfterTheRestart(t *testing.T) {
	rs := newRestartable(t)
	first := rs.start()
	rs.platform.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	_, err := uploadEpisodes(first.Reg, uploader(first.Objects, first.Store), fleettest.KeyedResource("resume"), 10, 1)
	require.Error(t, err)
	first.Crash()

	second := rs.start()
	before := len(rs.platform.Requests())
	_, err = uploadEpisodes(second.Reg, uploader(second.Objects, second.Store), fleettest.KeyedResource("resume"), 10, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"step 10: range 0: [1]"}, objectsOf(t, onlyRun(t, rs.platform)))
	assert.Equal(t, []string{"/rft/samples/confirm"}, pathsSince(rs.platform, before), "after the restart: the confirm alone")
	assert.Equal(t, map[rfttest.Route]int{rfttest.RouteCreate: 1, rfttest.RoutePresign: 1, rfttest.RoutePut: 1, rfttest.RouteConfirm: 3},
		rs.platform.RequestsByRoute(), "before it: one presign and one PUT, the two failed confirms")
}

func TestARunThatEndedBeforeACrashIsClosedOutAfterTheRestart(t *testing.T) {
	rs := newRestartable(t, func(c *runs.Config) { c.FinalizeGrace = time.Hour })
	first := rs.start()
	_, err := postStep(first.Reg, fleettest.KeyedResource("ended"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	endRun(t, first.Reg, fleettest.KeyedResource("ended"), "failed", "OOM")
	first.Crash()
	rs.edits = nil // finalize_grace 0
	rs.start()
	run := waitStatus(t, rs.platform, rs.platform.Runs()[0].ID, rfttest.StatusFailed)
	assert.Equal(t, "OOM", run.ErrorMessage)
}

func TestAClosedRunStaysClosedAcrossARestart(t *testing.T) {
	rs := newRestartable(t)
	first := rs.start()
	_, err := postStep(first.Reg, fleettest.KeyedResource("done"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	endRun(t, first.Reg, fleettest.KeyedResource("done"), "completed", "")
	waitStatus(t, rs.platform, onlyRun(t, rs.platform).ID, rfttest.StatusCompleted)
	waitClosed(t, first, 1)
	first.Shutdown()

	second := rs.start()
	before := len(rs.platform.Requests())
	_, err = postStep(second.Reg, fleettest.KeyedResource("done"), 2, map[string]float64{"loss": 1})
	require.ErrorIs(t, err, runs.ErrSkipped)
	assert.Len(t, rs.platform.Requests(), before)
	assert.Equal(t, 1, second.Tel.Rejected(reject.RunClosed))
}

package primeexporter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/primeintellect/primeexporter/internal/memstorage"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// memStorage is a storage extension whose data outlives the exporters that
// use it, as file_storage's does across a collector restart.
type memStorage struct {
	component.StartFunc
	component.ShutdownFunc
	client *memstorage.Client
}

func newMemStorage() *memStorage { return &memStorage{client: memstorage.New()} }

func (m *memStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return m.client, nil
}

type extensionsHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h extensionsHost) GetExtensions() map[component.ID]component.Component { return h.exts }

var storageID = component.MustNewID("file_storage")

// restartable starts exporters one after another on one platform and one
// storage, the way a collector restarts.
type restartable struct {
	t        *testing.T
	platform *rfttest.Server
	storage  *memStorage
	edit     func(*Config)
	// broken, when set, is the storage extension instead of storage.
	broken component.Component
}

func newRestartable(t *testing.T, edit func(*Config)) *restartable {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	return &restartable{t: t, platform: srv, storage: newMemStorage(), edit: edit}
}

// start is one collector process; stop it with crash (no shutdown: kill -9)
// or shutdown.
func (rs *restartable) start() *harness {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = rs.platform.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.Storage = &storageID
	if rs.edit != nil {
		rs.edit(cfg)
	}
	var ext component.Component = rs.storage
	if rs.broken != nil {
		ext = rs.broken
	}
	host := &statusHost{Host: extensionsHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: ext}}}
	return newHarnessWithHost(rs.t, rs.platform, cfg, host)
}

// crash abandons an exporter as kill -9 would: nothing is shut down.
func crash(h *harness) { h.abandon() }

func TestARestartWithStorageKeepsTheRunAndItsSampleRanges(t *testing.T) {
	rs := newRestartable(t, nil)
	ctx := context.Background()
	first := rs.start()
	require.NoError(t, first.exp.pushLogs(ctx, events(trainRun("keep"), episode(10, "a"), metricsEvent(10, map[string]float64{"loss": 1}))))
	crash(first)

	second := rs.start()
	require.NoError(t, second.exp.pushLogs(ctx, events(trainRun("keep"), episode(10, "late"), metricsEvent(11, map[string]float64{"loss": 0.5}), runEnd("completed", ""))))
	run := second.waitStatus(second.onlyRun().ID, rfttest.StatusCompleted)
	assert.Len(t, rs.platform.Runs(), 1, "one run across the restart")
	assert.Equal(t, []string{"step 10: q-a#0:0", "step 10: q-late#1:0"}, objects(t, run), "the range counter survived")
	assert.Equal(t, map[int64]map[string]float64{10: {"loss": 1}, 11: {"loss": 0.5}}, run.Metrics)
}

func TestAReplayedBatchAfterARestartIsNotUploadedTwice(t *testing.T) {
	rs := newRestartable(t, nil)
	ctx := context.Background()
	batch := events(trainRun("replay"), episode(10, "a"), episode(10, "b"))
	first := rs.start()
	require.NoError(t, first.exp.pushLogs(ctx, batch))
	// The collector died before the persistent queue learnt of the
	// success: it hands the same batch over again.
	crash(first)
	second := rs.start()
	require.NoError(t, second.exp.pushLogs(ctx, batch))
	assert.Equal(t, []string{"step 10: q-a#0:0 q-b#0:1"}, objects(t, second.onlyRun()))
	assert.Equal(t, int64(2), second.count(metricSkipped, map[string]string{"reason": "already_delivered"}))
}

func TestAnUploadThatWasPutBeforeACrashIsOnlyConfirmedAfterTheRestart(t *testing.T) {
	rs := newRestartable(t, nil)
	ctx := context.Background()
	batch := events(trainRun("resume"), episode(10, "a"))
	first := rs.start()
	rs.platform.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	err := first.exp.pushLogs(ctx, batch)
	var partial consumererror.Logs
	require.True(t, errors.As(err, &partial))
	crash(first)

	second := rs.start()
	require.NoError(t, second.exp.pushLogs(ctx, partial.Data()))
	assert.Equal(t, []string{"step 10: q-a#0:0"}, objects(t, second.onlyRun()))
	assert.Equal(t, []string{"presign", "put", "confirm", "confirm", "confirm"}, routes(rs.platform), "after the restart: the confirm alone")
}

func TestARunThatEndedBeforeACrashIsClosedOutAfterTheRestart(t *testing.T) {
	rs := newRestartable(t, func(c *Config) { c.FinalizeGrace = time.Hour })
	ctx := context.Background()
	first := rs.start()
	require.NoError(t, first.exp.pushLogs(ctx, events(trainRun("ended"), metricsEvent(1, map[string]float64{"loss": 1}), runEnd("failed", "OOM"))))
	crash(first)
	rs.edit = func(c *Config) { c.FinalizeGrace = 0 }
	second := rs.start()
	run := second.waitStatus(rs.platform.Runs()[0].ID, rfttest.StatusFailed)
	assert.Equal(t, "OOM", run.ErrorMessage)
}

func TestAClosedRunStaysClosedAcrossARestart(t *testing.T) {
	rs := newRestartable(t, nil)
	ctx := context.Background()
	first := rs.start()
	require.NoError(t, first.exp.pushLogs(ctx, events(trainRun("done"), metricsEvent(1, map[string]float64{"loss": 1}), runEnd("completed", ""))))
	first.waitStatus(first.onlyRun().ID, rfttest.StatusCompleted)
	require.Eventually(t, func() bool { return first.count(metricRuns, map[string]string{"event": "closed"}) == 1 }, 5*time.Second, time.Millisecond)
	first.shutdown()

	second := rs.start()
	before := len(rs.platform.Requests())
	require.NoError(t, second.exp.pushMetrics(ctx, gauges(trainRun("done"), map[int64]map[string]float64{2: {"loss": 1}})))
	assert.Len(t, rs.platform.Requests(), before)
	assert.Equal(t, int64(1), second.count(metricRejected, map[string]string{"reason": "run_closed"}))
}

func TestWithoutStorageARestartCreatesASecondRunAndSaysSo(t *testing.T) {
	h := newHarness(t, nil)
	assert.Contains(t, h.logText(), "a second run")
	assert.Contains(t, h.logText(), "random sample_id ranges")
}

func TestAFullDiskIsARecoverableErrorStatusAndLosesNothingOnceSpaceComesBack(t *testing.T) {
	rs := newRestartable(t, nil)
	ctx := context.Background()
	first := rs.start()
	rs.storage.client.Fill("/var/lib/otelcol/prime/exporter_prime__runs")
	require.NoError(t, first.exp.pushLogs(ctx, events(trainRun("full"), episode(10, "a"), metricsEvent(10, map[string]float64{"loss": 1}))),
		"a push is not failed for the run state it cannot write")
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, first.statuses())
	assert.Contains(t, first.logText(), "Storage does not take the run registry's writes")
	assert.Contains(t, first.logText(), "directory=/var/lib/otelcol/prime")

	// Space comes back: the next write takes what waited (the status
	// clears after writes have gone through for a while: internal/runstore/extension_backlog_test.go).
	rs.storage.client.Free()
	require.NoError(t, first.exp.pushLogs(ctx, events(trainRun("full"), episode(20, "b"))))
	crash(first)

	second := rs.start()
	require.NoError(t, second.exp.pushLogs(ctx, events(trainRun("full"), episode(10, "a"), episode(20, "c"), runEnd("completed", ""))))
	run := second.waitStatus(second.onlyRun().ID, rfttest.StatusCompleted)
	assert.Len(t, rs.platform.Runs(), 1, "the run created while the disk was full is remembered")
	assert.Equal(t, []string{"step 10: q-a#0:0", "step 20: q-b#0:0", "step 20: q-c#1:0"}, objects(t, run),
		"the episode delivered while the disk was full is not uploaded again, and its range is not reused")
}

// unopenable is a storage extension whose client cannot be opened, as
// file_storage's for a file bbolt cannot read.
type unopenable struct {
	component.StartFunc
	component.ShutdownFunc
}

func (unopenable) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return nil, errors.New("invalid database")
}

func TestARunRegistryThatCannotBeOpenedDoesNotStopTheCollector(t *testing.T) {
	rs := newRestartable(t, nil)
	rs.broken = unopenable{}
	h := rs.start()

	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, h.statuses())
	assert.Contains(t, h.logText(), "Cannot open the run registry in storage: the exporter goes on without it")
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("unopened"), episode(10, "a"))), "data still goes out")
	assert.Len(t, rs.platform.Runs(), 1)
}

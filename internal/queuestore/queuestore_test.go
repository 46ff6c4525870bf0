package queuestore

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"
)

var storageID = component.MustNewID("file_storage")

// disk is a storage extension over one memstorage.Client: a restart
// finds what the last process left, as on a file_storage directory.
type disk struct {
	component.StartFunc
	component.ShutdownFunc
	client *memstorage.Client
}

func (d disk) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return d.client, nil
}

type host struct {
	exts    map[component.ID]component.Component
	mu      sync.Mutex
	reports []componentstatus.Status
}

func (h *host) GetExtensions() map[component.ID]component.Component { return h.exts }

func (h *host) Report(ev *componentstatus.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reports = append(h.reports, ev.Status())
}

// delivery records what the queue's consumer was given; the first request
// waits for open, so that the rest wait in the queue meanwhile.
type delivery struct {
	mu   sync.Mutex
	got  map[string]int
	open chan struct{}
	once sync.Once
}

func newDelivery() *delivery { return &delivery{got: map[string]int{}, open: make(chan struct{})} }

func (d *delivery) push(_ context.Context, ld plog.Logs) error {
	<-d.open
	if ld.ResourceLogs().Len() == 0 {
		// The item of an Offer the full disk refused: the queue's write
		// index moved on without it, and it reads as nothing.
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got[ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(0).Body().Str()]++
	return nil
}

func (d *delivery) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.got)
}

func record(body string) plog.Logs {
	ld := plog.NewLogs()
	ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty().Body().SetStr(body)
	return ld
}

func startQueue(t *testing.T, client *memstorage.Client, d *delivery, wrap bool, logger *zap.Logger) exporter.Logs {
	t.Helper()
	q := exporterhelper.NewDefaultQueueConfig()
	q.StorageID = &storageID
	q.NumConsumers = 1
	q.Batch = configoptional.None[exporterhelper.BatchConfig]()
	set := exportertest.NewNopSettings(component.MustNewType("prime"))
	exp, err := exporterhelper.NewLogs(context.Background(), set, &struct{}{}, d.push,
		exporterhelper.WithQueue(configoptional.Some(q)),
		exporterhelper.WithRetry(configretry.BackOffConfig{Enabled: false}))
	require.NoError(t, err)
	var h component.Host = &host{exts: map[component.ID]component.Component{storageID: disk{client: client}}}
	if wrap {
		h = Host(h, storageID, "logs", logger)
	}
	require.NoError(t, exp.Start(context.Background(), h))
	return exp
}

// fillWhileQueued enqueues n requests while the consumer holds the first,
// fills the disk, and lets the consumer read the rest from the full disk.
func fillWhileQueued(t *testing.T, exp exporter.Logs, client *memstorage.Client, d *delivery, n int) {
	t.Helper()
	for i := range n {
		require.NoError(t, exp.ConsumeLogs(context.Background(), record(strconv.Itoa(i))))
	}
	client.Fill("/var/lib/otelcol/exporter_prime__logs")
	close(d.open)
}

func TestTheQueueAloneDropsWhatItReadsFromAFullDisk(t *testing.T) {
	// Why this package exists: if exporterhelper stops dropping these
	// requests, this fails, and the wrapping can go.
	client := memstorage.New()
	d := newDelivery()
	exp := startQueue(t, client, d, false, zap.NewNop())
	fillWhileQueued(t, exp, client, d, 10)
	time.Sleep(200 * time.Millisecond) // the consumer reads everything in microseconds
	assert.Less(t, d.count(), 10, "the queue alone delivered every request read from a full disk")
	require.NoError(t, exp.Shutdown(context.Background()))
}

func TestAQueueReadingFromAFullDiskDeliversEveryRequestAndCatchesUpWhenSpaceReturns(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	client := memstorage.New()
	d := newDelivery()
	exp := startQueue(t, client, d, true, zap.New(core))
	fillWhileQueued(t, exp, client, d, 10)
	require.Eventually(t, func() bool { return d.count() == 10 }, 5*time.Second, 5*time.Millisecond,
		"every request read from the full disk is delivered")

	err := exp.ConsumeLogs(context.Background(), record("refused"))
	require.Error(t, err, "a request the full disk cannot hold is refused, for the sender to retry")
	assert.Equal(t, 1, logs.FilterMessageSnippet("Storage refuses the sending queue's writes").Len(), "one warning while the disk is full")

	client.Free()
	require.NoError(t, exp.ConsumeLogs(context.Background(), record("after")))
	require.Eventually(t, func() bool { return d.count() == 11 }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Equal(t, 1, logs.FilterMessageSnippet("Storage takes the sending queue's writes again").Len())
	assert.Equal(t, 1, client.Keys(""), "only the queue's metadata is left in storage: every delivered request deleted")

	again := newDelivery()
	close(again.open)
	exp = startQueue(t, client, again, true, zap.NewNop())
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Zero(t, again.count(), "a restart sends nothing again once storage has caught up")
	for body, n := range d.got {
		assert.Equal(t, 1, n, "request %s delivered once", body)
	}
}

func TestACrashWhileTheDiskIsFullSendsTheRequestsReadMeanwhileAgainAndLosesNone(t *testing.T) {
	client := memstorage.New()
	d := newDelivery()
	exp := startQueue(t, client, d, true, zap.NewNop())
	fillWhileQueued(t, exp, client, d, 10)
	require.Eventually(t, func() bool { return d.count() == 10 }, 5*time.Second, 5*time.Millisecond)
	// Shutdown on a full disk leaves storage as a crash would: the read
	// position it last took.
	require.NoError(t, exp.Shutdown(context.Background()))

	client.Free()
	again := newDelivery()
	close(again.open)
	exp = startQueue(t, client, again, true, zap.NewNop())
	require.Eventually(t, func() bool { return again.count() == 10 }, 5*time.Second, 5*time.Millisecond,
		"the next start sends again every request whose delivery storage did not record")
	require.NoError(t, exp.Shutdown(context.Background()))
	assert.Equal(t, 1, client.Keys(""), "then storage holds only the metadata")
}

func TestOnlyTheQueuesClientsDeferAndStatusReportsReachTheHost(t *testing.T) {
	client := memstorage.New()
	h := &host{exts: map[component.ID]component.Component{storageID: disk{client: client}}}
	wrapped := Host(h, storageID, "logs", zap.NewNop())
	ext := wrapped.GetExtensions()[storageID].(storage.Extension)

	tests := []struct {
		name    string
		kind    component.Kind
		storage string
		defers  bool
	}{
		{"the logs queue", component.KindExporter, "logs", true},
		{"the run registry", component.KindExporter, "runs", false},
		{"another signal's queue", component.KindExporter, "metrics", false},
		{"a receiver's", component.KindReceiver, "logs", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ext.GetClient(context.Background(), tt.kind, component.MustNewID("prime"), tt.storage)
			require.NoError(t, err)
			_, defers := c.(*Client)
			assert.Equal(t, tt.defers, defers)
		})
	}
	componentstatus.ReportStatus(wrapped, componentstatus.NewEvent(componentstatus.StatusOK))
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusOK}, h.reports)
	assert.Same(t, h, Host(h, component.MustNewID("other"), "logs", zap.NewNop()), "a host without the extension is left as it is")
}

func TestABatchThatAddsAnItemFailsOnAFullDiskAndTakesTheDeferredWritesWithItLater(t *testing.T) {
	mem := memstorage.New()
	c := NewClient(mem, zap.NewNop())
	ctx := context.Background()
	require.NoError(t, mem.Set(ctx, "3", []byte("item")))
	mem.Fill("f")

	get := storage.GetOperation("3")
	require.NoError(t, c.Batch(ctx, storage.SetOperation(metadataKey, []byte("m1")), get), "a read's progress is deferred")
	assert.Equal(t, []byte("item"), get.Value, "the read still reads")
	require.NoError(t, c.Batch(ctx, storage.SetOperation(metadataKey, []byte("m2")), storage.DeleteOperation("3")))
	require.Error(t, c.Batch(ctx, storage.SetOperation(metadataKey, []byte("m3")), storage.SetOperation("4", []byte("new"))),
		"an item the disk cannot take is refused")
	assert.True(t, c.Deferred())
	v, _ := mem.Get(ctx, metadataKey)
	assert.Nil(t, v, "nothing written while full")

	mem.Free()
	require.NoError(t, c.Batch(ctx, storage.SetOperation(metadataKey, []byte("m4")), storage.SetOperation("4", []byte("new"))))
	assert.False(t, c.Deferred())
	v, _ = mem.Get(ctx, metadataKey)
	assert.Equal(t, []byte("m4"), v, "the newest metadata wins")
	v, _ = mem.Get(ctx, "3")
	assert.Nil(t, v, "the deferred delete is done")
}

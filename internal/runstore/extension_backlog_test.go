package runstore_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"
)

func TestAFullDiskKeepsTheRunRegistryInMemoryAndWritesItWhenSpaceComesBack(t *testing.T) {
	disk := memstorage.New()
	api := &fleettest.CountingRuns{}
	now := time.Now()
	c := startExt(t, disk, api, func(o *runstore.ExtensionOptions) { o.Now = func() time.Time { return now } })
	ctx := context.Background()

	disk.Fill("/var/lib/otelcol/prime/exporter_prime__runs")
	l, err := c.reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
	require.NoError(t, err, "data is taken while the disk is full")
	pending := startUpload(t, l, c.store, pendingFP, 4)
	require.NoError(t, c.store.MarkDelivered(ctx, l.Key(), 7, []uint64{1, 2, 3}), "kept in memory while the disk is full")
	replay, err := c.store.Delivered(ctx, l.Key(), 7, []uint64{1, 2, 3, 9})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true, false}, replay, "a replay while the disk is full uploads nothing twice")
	l.Release()

	problems := c.problems()
	require.Len(t, problems, 1, "one line for the full disk: %q", problems)
	assert.Contains(t, problems[0], "Storage does not take the run registry's writes")
	line := c.logs.FilterMessageSnippet("Storage does not take").All()[0].ContextMap()
	assert.Equal(t, "/var/lib/otelcol/prime", line["directory"], "the line names the directory")
	require.Len(t, c.health, 1, "the status turns to a recoverable error, once")
	assert.ErrorIs(t, c.health[0], syscall.ENOSPC)

	// Space comes back: the next write takes what waited; the status
	// clears once writes have gone through for a while.
	disk.Free()
	l, err = c.reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
	require.NoError(t, err)
	require.NoError(t, c.store.MarkDelivered(ctx, l.Key(), 7, []uint64{4}))
	require.Len(t, c.health, 1, "a full disk takes some writes: one is not enough to clear the status")
	now = now.Add(5 * time.Second)
	require.NoError(t, c.store.MarkDelivered(ctx, l.Key(), 7, []uint64{5}))
	l.Release()
	require.Len(t, c.health, 2)
	assert.NoError(t, c.health[1], "the status is OK again")
	assert.Len(t, c.logs.FilterMessageSnippet("Storage takes the run registry's writes again").All(), 1)
	c.stop(t)

	// A restart finds what was written while the disk was full.
	restarted := startExt(t, disk, api)
	l, err = restarted.reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
	require.NoError(t, err)
	defer l.Release()
	assert.Equal(t, "run-1", l.ID(), "one run across the restart")
	assert.NotEqual(t, pending, rangeOf(l, restarted.store, pendingFP, 4),
		"an upload whose progress the full disk refused starts anew after the restart, in a range of its own")
	done, err := restarted.store.Delivered(ctx, l.Key(), 7, []uint64{1, 2, 3, 4})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true, true}, done)
	assert.Empty(t, restarted.problems())
}

func TestShuttingDownOnAFullDiskSaysWhatARestartForgets(t *testing.T) {
	disk := memstorage.New()
	c := startExt(t, disk, &fleettest.CountingRuns{})
	ctx := context.Background()
	disk.Fill("/var/lib/otelcol/prime/exporter_prime__runs")
	l, err := c.reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
	require.NoError(t, err)
	require.NoError(t, c.store.MarkDelivered(ctx, l.Key(), 7, []uint64{1, 2}), "kept in memory while the disk is full")
	l.Release()
	c.stop(t)
	errs := c.logs.FilterLevelExact(zapcore.ErrorLevel).FilterMessageSnippet("Shutting down with run state that storage did not take").All()
	require.Len(t, errs, 1)
	assert.Equal(t, map[string]any{"storage": "file_storage", "runs": int64(1), "episodes": int64(2)}, errs[0].ContextMap())
}

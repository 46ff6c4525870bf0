package runstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"
)

// writeOldLayout writes what the release before wrote for a run's
// markings: a key per fingerprint, a log chunk per marking and the log's
// header; preLog fingerprints are keys alone (written before the log
// existed).
func writeOldLayout(t *testing.T, client storage.Client, run string, markings [][]uint64, preLog []uint64) {
	t.Helper()
	ctx := context.Background()
	held := 0
	for n, fps := range markings {
		var chunk []byte
		for _, fp := range fps {
			require.NoError(t, client.Set(ctx, storeEpPrefix+run+"/"+strconv.FormatUint(fp, 16), []byte{1}))
			chunk = binary.LittleEndian.AppendUint64(chunk, fp)
		}
		require.NoError(t, client.Set(ctx, storeLogPrefix+strconv.Itoa(n)+"/"+run, chunk))
		held += len(fps)
	}
	head, _ := json.Marshal(deliveredLog{First: 0, Next: int64(len(markings)), Held: int64(held)})
	require.NoError(t, client.Set(ctx, storeLogHead+run, head))
	for _, fp := range preLog {
		require.NoError(t, client.Set(ctx, storeEpPrefix+run+"/"+strconv.FormatUint(fp, 16), []byte{1}))
	}
}

func TestWhatTheReleaseBeforeStoredIsMovedOnLoadAndStaysDeliveredAtEveryStep(t *testing.T) {
	ctx := context.Background()
	client := memstorage.New()
	writeOldLayout(t, client, "key\x00a/b", [][]uint64{{1, 2}, {0xffffffffffffffff}}, []uint64{7})
	writeOldLayout(t, client, "key\x00c", [][]uint64{{3}}, nil)
	core, logs := observer.New(zapcore.InfoLevel)
	s := NewExtensionStore(client, ExtensionOptions{Logger: zap.New(core)})
	_, err := s.Load(ctx)
	require.NoError(t, err)

	assert.Zero(t, client.Keys(storeEpPrefix)+client.Keys(storeLogPrefix)+client.Keys(storeLogHead), "no key of the layout before is left")
	require.Len(t, logs.All(), 2, "a line per run moved")
	assert.Equal(t, zapcore.InfoLevel, logs.All()[0].Level, "a move is no damage")
	for _, step := range []int64{0, 12, -1} {
		got, err := s.Delivered(ctx, "key\x00a/b", step, []uint64{1, 2, 7, 0xffffffffffffffff, 3})
		require.NoError(t, err)
		assert.Equal(t, []bool{true, true, true, true, false}, got, "step %d", step)
	}

	// The next start finds nothing to move.
	logs.TakeAll()
	s = NewExtensionStore(client, ExtensionOptions{Logger: zap.New(core)})
	_, err = s.Load(ctx)
	require.NoError(t, err)
	assert.Empty(t, logs.All())
	assert.True(t, delivered(t, s, "key\x00c", 4, 3), "moved fingerprints stay delivered after a restart")

	// New steps past the bound prune the moved set, the oldest, whole.
	markSteps(t, s, "key\x00c", 1, 1+maxStoredDelivered/8192, 8192)
	markSteps(t, s, "key\x00c", 1000, 1001, 1)
	assert.False(t, delivered(t, s, "key\x00c", 4, 3), "the moved set is pruned first")
	assert.Nil(t, s.steps.run("key\x00c").legacy, "and no longer held in memory")
	assert.Equal(t, 0, client.Keys(stepPartKey("key\x00c", legacyStep, 0)))
}

// noWalk is a storage extension's client that cannot list its keys.
type noWalk struct{ storage.Client }

func TestWithoutAListingTheLogOfTheReleaseBeforeIsMovedAtTheRunsFirstUse(t *testing.T) {
	ctx := context.Background()
	client := memstorage.New()
	writeOldLayout(t, client, "key\x00a", [][]uint64{{1, 2}, {3}}, []uint64{7})
	s := NewExtensionStore(noWalk{client}, ExtensionOptions{})
	_, err := s.Load(ctx)
	require.NoError(t, err)
	got, err := s.Delivered(ctx, "key\x00a", 5, []uint64{1, 2, 3, 7})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true, false}, got, "the logged ones are moved; one from before the log is not found")
	assert.Equal(t, 1, client.Keys(storeEpPrefix), "the logged ones' keys are gone, the one before the log stays")
	assert.Zero(t, client.Keys(storeLogPrefix)+client.Keys(storeLogHead))
}

func TestADamagedValueOfTheReleaseBeforesEpisodesIsSaidOnceAndWrittenBackWhole(t *testing.T) {
	ctx := context.Background()
	client := memstorage.New()
	writeOldLayout(t, client, "key\x00a", [][]uint64{{1, 2, 3}}, nil)
	_, err := NewExtensionStore(client, ExtensionOptions{}).Load(ctx)
	require.NoError(t, err)
	key := stepPartKey("key\x00a", legacyStep, 0)
	raw, err := client.Get(ctx, key)
	require.NoError(t, err)
	require.NoError(t, client.Set(ctx, key, raw[:len(raw)-3]))

	for start, want := range []int{1, 0} {
		core, logs := observer.New(zapcore.InfoLevel)
		s := NewExtensionStore(client, ExtensionOptions{Logger: zap.New(core)})
		_, err := s.Load(ctx)
		require.NoError(t, err)
		got, err := s.Delivered(ctx, "key\x00a", 9, []uint64{1, 2, 3})
		require.NoError(t, err)
		assert.Equal(t, []bool{true, true, false}, got, "start %d: the whole fingerprints stay delivered", start)
		assert.Len(t, logs.FilterLevelExact(zapcore.WarnLevel).All(), want, "start %d: one line, then none", start)
	}
	assert.Equal(t, 1, client.Keys(storeAsidePrefix), "the damaged value is kept aside")
}

package runs

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/memstorage"
)

// markSteps marks steps [from, to) of run, perStep fingerprints each:
// step s holds s*perStep … (s+1)*perStep-1.
func markSteps(t *testing.T, s *ExtensionStore, run string, from, to, perStep int) {
	t.Helper()
	for step := from; step < to; step++ {
		fps := make([]uint64, perStep)
		for i := range fps {
			fps[i] = uint64(step*perStep + i)
		}
		require.NoError(t, s.MarkDelivered(context.Background(), run, int64(step), fps))
	}
}

func delivered(t *testing.T, s *ExtensionStore, run string, step int64, fp uint64) bool {
	t.Helper()
	got, err := s.Delivered(context.Background(), run, step, []uint64{fp})
	require.NoError(t, err)
	return got[0]
}

func TestAStoredRunKeepsItsNewestStepsWithinTheBoundAcrossARestart(t *testing.T) {
	const perStep = 100
	client := memstorage.New()
	s := NewExtensionStore(client, ExtensionOptions{})
	other := "key\x00other/run" // a key with the separator in it
	markSteps(t, s, other, 0, 1, 10)

	steps := 2 * maxStoredDelivered / perStep
	markSteps(t, s, "key\x00long", 0, steps/4, perStep)
	// A restart: a new store on the same storage goes on with the index.
	s = NewExtensionStore(client, ExtensionOptions{})
	markSteps(t, s, "key\x00long", steps/4, steps, perStep)

	x, err := decodeIndexOf(t, client, "key\x00long")
	require.NoError(t, err)
	assert.LessOrEqual(t, x.held, int64(maxStoredDelivered), "fingerprints held")
	assert.Greater(t, x.held, int64(maxStoredDelivered-perStep), "fingerprints held")
	assert.Equal(t, int(x.held/perStep)+1, client.Keys(storeStepPrefix), "a value per step held (and the other run's)")
	newest := int64(steps - 1)
	for _, tc := range []struct {
		name string
		run  string
		step int64
		fp   uint64
		want bool
	}{
		{"the newest step is kept", "key\x00long", newest, uint64(newest*perStep + 99), true},
		{"the newest bound's worth is kept", "key\x00long", newest - maxStoredDelivered/perStep + 2, uint64((newest-maxStoredDelivered/perStep+2)*perStep + 1), true},
		{"the oldest step is deleted", "key\x00long", 0, 0, false},
		{"the last step before the restart is deleted in turn", "key\x00long", int64(steps/4 - 1), uint64((steps/4-1)*perStep + 5), false},
		{"a fingerprint is found under its own step only", "key\x00long", newest - 1, uint64(newest*perStep + 99), false},
		{"another run's are untouched", other, 0, 9, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, delivered(t, s, tc.run, tc.step, tc.fp))
		})
	}
}

// decodeIndexOf reads a run's whole index back from storage.
func decodeIndexOf(t *testing.T, client storage.Client, run string) (*deliveredIndex, error) {
	t.Helper()
	rs, damage, err := NewExtensionStore(client, ExtensionOptions{}).readSteps(context.Background(), run)
	require.NoError(t, err)
	if damage != "" || rs == nil {
		t.Fatalf("stored index damaged or missing: %q", damage)
	}
	return rs.all(), nil
}

// countingClient counts the values a store reads and writes.
type countingClient struct {
	*memstorage.Client
	mu                  sync.Mutex
	gets, sets, deletes int
}

func (c *countingClient) Get(ctx context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Client.Get(ctx, key)
}

func (c *countingClient) Batch(ctx context.Context, ops ...*storage.Operation) error {
	c.mu.Lock()
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			c.gets++
		case storage.Set:
			c.sets++
		case storage.Delete:
			c.deletes++
		}
	}
	c.mu.Unlock()
	return c.Client.Batch(ctx, ops...)
}

func (c *countingClient) reset() (gets, sets, deletes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	gets, sets, deletes = c.gets, c.sets, c.deletes
	c.gets, c.sets, c.deletes = 0, 0, 0
	return gets, sets, deletes
}

func TestCheckingAStepIsOneReadAndMarkingItWritesItsValueAndTheIndex(t *testing.T) {
	ctx := context.Background()
	client := &countingClient{Client: memstorage.New()}
	s := NewExtensionStore(client, ExtensionOptions{})
	fps := []uint64{30, 10, 20}
	require.NoError(t, s.MarkDelivered(ctx, "key\x00r", 5, fps))
	client.reset()

	got, err := s.Delivered(ctx, "key\x00r", 5, []uint64{10, 20, 30, 40})
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true, false}, got)
	gets, sets, deletes := client.reset()
	assert.Equal(t, [3]int{1, 0, 0}, [3]int{gets, sets, deletes}, "a check of a step: one read")

	require.NoError(t, s.MarkDelivered(ctx, "key\x00r", 5, []uint64{40, 50}))
	gets, sets, deletes = client.reset()
	assert.Equal(t, [3]int{1, 2, 0}, [3]int{gets, sets, deletes}, "a marking: the step's value read and written, and the index")

	require.NoError(t, s.MarkDelivered(ctx, "key\x00r", 6, []uint64{1}))
	gets, sets, deletes = client.reset()
	assert.Equal(t, [3]int{0, 2, 0}, [3]int{gets, sets, deletes}, "a new step's marking: its value and the index")

	got, err = s.Delivered(ctx, "key\x00r", 9, []uint64{1})
	require.NoError(t, err)
	assert.Equal(t, []bool{false}, got)
	gets, _, _ = client.reset()
	assert.Zero(t, gets, "a step never marked is not read")
}

func TestAStepOfManyEpisodesIsCutIntoPartsAndPrunedOldestFirst(t *testing.T) {
	ctx := context.Background()
	client := memstorage.New()
	s := NewExtensionStore(client, ExtensionOptions{})
	const step = math.MinInt64 + 1 // an evaluation's samples: no step
	total := 3 * maxStoredDelivered
	for from := 0; from < total; from += 4096 {
		fps := make([]uint64, 4096)
		for i := range fps {
			fps[i] = uint64(from + i)
		}
		require.NoError(t, s.MarkDelivered(ctx, "eval\x00id\x00e", step, fps))
	}
	x, _ := decodeIndexOf(t, client, "eval\x00id\x00e")
	assert.LessOrEqual(t, x.held, int64(maxStoredDelivered))
	for _, p := range x.parts {
		assert.LessOrEqual(t, p.n, int64(maxPartFingerprints), "part %d", p.part)
	}
	assert.True(t, delivered(t, s, "eval\x00id\x00e", step, uint64(total-1)), "the newest is kept")
	assert.True(t, delivered(t, s, "eval\x00id\x00e", step, uint64(total-maxStoredDelivered+maxPartFingerprints)), "the newest bound's worth is kept")
	assert.False(t, delivered(t, s, "eval\x00id\x00e", step, 0), "the oldest part is deleted")
}

func TestConcurrentMarkingsOfOneRunKeepItsIndexConsistent(t *testing.T) {
	client := memstorage.New()
	s := NewExtensionStore(client, ExtensionOptions{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() { markSteps(t, s, "key\x00r", w*10, (w+1)*10, 100) })
	}
	wg.Wait()
	x, _ := decodeIndexOf(t, client, "key\x00r")
	assert.Equal(t, int64(8000), x.held)
	assert.Len(t, x.parts, 80)
	assert.Equal(t, 80, client.Keys(storeStepPrefix))
}

func TestAStepIndexChunkAndHeaderReadBackAsWrittenAndAChunkRefusesAnyDamage(t *testing.T) {
	x := newDeliveredIndex([]stepPart{
		{step: legacyStep, part: 0, n: 8192}, {step: legacyStep, part: 1, n: 3},
		{step: math.MinInt64 + 1, part: 0, n: 1}, {step: -5, part: 0, n: 7}, {step: 0, part: 0, n: 1},
		{step: 1 << 40, part: 0, n: 100}, {step: math.MaxInt64, part: 2, n: 5},
	})
	raw := x.encode()
	back, damage := decodeStepIndex(raw)
	require.Empty(t, damage)
	assert.Equal(t, x, back)
	chunks := []int64{-1 << 55, -3, 0, 1, 1 << 40}
	back2, damage := decodeHeader(encodeHeader(chunks))
	require.Empty(t, damage)
	assert.Equal(t, chunks, back2, "a header")
	for i := range raw {
		for _, bit := range []byte{1, 0x80} {
			bad := append([]byte(nil), raw...)
			bad[i] ^= bit
			_, damage := decodeStepIndex(bad)
			assert.NotEmpty(t, damage, "byte %d flipped", i)
		}
		_, damage := decodeStepIndex(raw[:i])
		assert.NotEmpty(t, damage, "cut at %d", i)
	}
}

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

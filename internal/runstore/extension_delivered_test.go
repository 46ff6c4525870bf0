package runstore

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"
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

package primeexporter

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// countingStorage is the restartable storage with every write counted: a
// Set, a Delete or a Batch that writes is one write (one transaction in
// file_storage), its bytes the values it sets.
type countingStorage struct {
	storage.Client
	mu         sync.Mutex
	writes     int
	bytes      int
	recordSets int // writes of a run's whole record ("run/<key>")
}

func (c *countingStorage) note(ops ...*storage.Operation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wrote := false
	for _, op := range ops {
		if op.Type == storage.Get {
			continue
		}
		wrote = true
		c.bytes += len(op.Value)
		if op.Type == storage.Set && strings.HasPrefix(op.Key, "run/") {
			c.recordSets++
		}
	}
	if wrote {
		c.writes++
	}
}

func (c *countingStorage) Set(ctx context.Context, key string, value []byte) error {
	c.note(storage.SetOperation(key, value))
	return c.Client.Set(ctx, key, value)
}

func (c *countingStorage) Delete(ctx context.Context, key string) error {
	c.note(storage.DeleteOperation(key))
	return c.Client.Delete(ctx, key)
}

func (c *countingStorage) Batch(ctx context.Context, ops ...*storage.Operation) error {
	c.note(ops...)
	return c.Client.Batch(ctx, ops...)
}

type countingExtension struct {
	component.StartFunc
	component.ShutdownFunc
	client *countingStorage
}

func (m countingExtension) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return m.client, nil
}

func (c *countingStorage) counts() (writes, bytes, records int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes, c.bytes, c.recordSets
}

// TestASampleObjectWritesItsOwnKeysTwiceAndNeverItsRunsRecord
// runs 1,000 objects (one a step) through an exporter on a storage
// extension and counts what storage is asked to write for them, beside
// what creating the run writes.
func TestASampleObjectWritesItsOwnKeysTwiceAndNeverItsRunsRecord(t *testing.T) {
	const objectsN = 1000
	rs := newRestartable(t, nil)
	counting := &countingStorage{Client: rs.storage.client}
	rs.broken = countingExtension{client: counting}
	h := rs.start()
	ctx := context.Background()
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("writes"), metricsEvent(0, map[string]float64{"loss": 1}))))
	w0, b0, r0 := counting.counts()
	for step := int64(10); step <= 10*objectsN; step += 10 { // the default sample cadence
		require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("writes"), episode(step, "a"))))
	}
	w, b, r := counting.counts()
	writes, bytes, records := w-w0, b-b0, r-r0
	t.Logf("%d objects: %.2f writes and %.0f bytes an object; %d whole-record writes", objectsN,
		float64(writes)/objectsN, float64(bytes)/objectsN, records)
	assert.LessOrEqual(t, writes, 2*objectsN, "two writes an object: once PUT, and its confirm")
	assert.Zero(t, records, "no object writes its run's whole record")
	run, ok := rs.platform.Run(h.onlyRun().ID)
	require.True(t, ok)
	assert.Len(t, objects(t, run), objectsN)
}

package runstore_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"
	"github.com/primeintellect/primeexporter/internal/upload"
)

// The stored run of these tests: prime.run.key "a", created as run-1, an
// object of step 4 pending under range 0, episodes 1-3 delivered.
const (
	damagedRun = "key\x00a"
	// restartedBand is a restored run's first range: the band above the
	// one its record held (internal/runs' rangesBand).
	restartedBand = 1024
	pendingFP     = 0xabc
	// fallbackRangeLow is where the random ranges of a run whose counters
	// are lost start (objects.go).
	fallbackRangeLow = 1<<20 + 1<<19
)

// extCollector is one collector process's run registry on a storage
// extension's client.
type extCollector struct {
	reg     *runs.Registry
	store   *runstore.ExtensionStore
	logs    *observer.ObservedLogs
	health  []error
	stopped bool
}

// stop shuts the registry down (the collector's shutdown), once.
func (c *extCollector) stop(t *testing.T) {
	if !c.stopped {
		c.stopped = true
		require.NoError(t, c.reg.Shutdown(context.Background()))
	}
}

func startExt(t *testing.T, client storage.Client, api *fleettest.CountingRuns, edits ...func(*runstore.ExtensionOptions)) *extCollector {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	logger := zap.New(core)
	c := &extCollector{logs: logs}
	opts := runstore.ExtensionOptions{Logger: logger, Name: "file_storage", Health: func(err error) { c.health = append(c.health, err) }}
	for _, edit := range edits {
		edit(&opts)
	}
	c.store = runstore.NewExtensionStore(client, opts)
	c.reg = fleettest.Start(fleettest.Config(), api, c.store, logger, &fleettest.Tally{})
	t.Cleanup(func() { c.stop(t) })
	return c
}

func (c *extCollector) problems() []string { return problems(c.logs) }

// problems are the warnings and errors logged.
func problems(logs *observer.ObservedLogs) []string {
	var out []string
	for _, e := range logs.All() {
		if e.Level >= zapcore.WarnLevel {
			out = append(out, e.Message)
		}
	}
	return out
}

// deliveredAfterDamage says whether episodes 1-3 of the stored run are
// still known as delivered, and asserts that storage keeps a marking made
// after the damage.
func deliveredAfterDamage(t *testing.T, store upload.ObjectStore, l runs.Lease) bool {
	t.Helper()
	ctx := context.Background()
	done, err := store.Delivered(ctx, l.Key(), 7, []uint64{1, 2, 3})
	require.NoError(t, err)
	require.NoError(t, store.MarkDelivered(ctx, l.Key(), 7, []uint64{4}))
	again, err := store.Delivered(ctx, l.Key(), 7, []uint64{4})
	require.NoError(t, err)
	assert.True(t, again[0], "a marking after the damage is kept")
	return done[0] && done[1] && done[2]
}

// storeDamagedRun writes the run of these tests through a first registry.
func storeDamagedRun(t *testing.T, client storage.Client, api *fleettest.CountingRuns) {
	t.Helper()
	first := startExt(t, client, api)
	ctx := context.Background()
	l, err := first.reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
	require.NoError(t, err)
	require.Equal(t, int64(0), startUpload(t, l, first.store, pendingFP, 4))
	require.NoError(t, first.store.MarkDelivered(ctx, l.Key(), 7, []uint64{1, 2, 3}))
	l.Release()
	first.stop(t)
}

// edit rewrites one stored value.
func edit(t *testing.T, client storage.Client, key string, f func(raw []byte) []byte) {
	t.Helper()
	ctx := context.Background()
	raw, err := client.Get(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, raw, "no value under %q to damage", key)
	require.NoError(t, client.Set(ctx, key, f(raw)))
}

// cutAfter truncates a value n bytes after the end of its first mark.
func cutAfter(mark string, n int) func([]byte) []byte {
	return func(raw []byte) []byte {
		i := bytes.Index(raw, []byte(mark))
		if i < 0 {
			panic("no " + mark + " in " + string(raw))
		}
		return raw[:i+len(mark)+n]
	}
}

// garble overwrites n bytes from the first mark with bytes that are no
// JSON.
func garble(mark string, n int) func([]byte) []byte {
	return func(raw []byte) []byte {
		i := bytes.Index(raw, []byte(mark))
		if i < 0 {
			panic("no " + mark + " in " + string(raw))
		}
		out := bytes.Clone(raw)
		copy(out[i:i+n], bytes.Repeat([]byte{0xff}, n))
		return out
	}
}

func replace(old, repl string) func([]byte) []byte {
	return func(raw []byte) []byte {
		if !bytes.Contains(raw, []byte(old)) {
			panic("no " + old + " in " + string(raw))
		}
		return bytes.Replace(raw, []byte(old), []byte(repl), 1)
	}
}

// noWalk is a storage extension's client that cannot list its keys.
type noWalk struct{ storage.Client }

// goesOn is what the restarted collector finds of the damaged run.
type goesOn struct {
	runID string // the run its data goes to
	// pendingRange is the range of the pending object's upload: 0 when the
	// pending upload is kept (or a new run counts from 0), restartedBand
	// when it is uploaded again under the restarted run's first range, -1
	// for a random range above every counted one.
	pendingRange int64
	delivered    bool // episodes 1-3 are still known as delivered
}

func TestADamagedRunStoreStartsAndRecoversOrLeavesOutEachRunWithOneLine(t *testing.T) {
	recovered := goesOn{runID: "run-1", pendingRange: 0, delivered: true}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, client *memstorage.Client)
		// walk is false for a client that cannot list its keys.
		noWalk bool
		want   goesOn
		line   string // the one warning or error, in part
	}{
		{
			name: "a pending upload cut",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "object/abc/"+damagedRun, cutAfter(`"step":4`, 0))
			},
			want: goesOn{runID: "run-1", pendingRange: restartedBand, delivered: true},
			line: `Pending upload abc of prime.run.key="a" in storage is damaged (truncated JSON): dropped; its object is uploaded again under a new sample_id range`,
		},
		{
			name: "record cut within its sample_id ranges",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "run/"+damagedRun, cutAfter(`"ranges_from":`, 0))
			},
			want: goesOn{runID: "run-1", pendingRange: 0, delivered: true},
			line: `Run record of prime.run.key="a" is damaged (truncated JSON): the run goes on as run run-1; lost: its sample_id ranges (its next objects take random ranges above every counted one)`,
		},
		{
			name: "record cut within its core fields",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "run/"+damagedRun, cutAfter(`"id":"run-1"`, 0))
			},
			want: goesOn{runID: "run-2", pendingRange: 0, delivered: true},
			line: `Run record of prime.run.key="a" is damaged (truncated JSON): the run is left out, and its next data creates it again (a second run on the platform)`,
		},
		{
			name: "record garbled within its core fields",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "run/"+damagedRun, garble(`"team"`, 4))
			},
			want: goesOn{runID: "run-2", pendingRange: 0, delivered: true},
			line: `Run record of prime.run.key="a" is damaged (garbled JSON at byte`,
		},
		{
			name: "record holding an unknown state",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "run/"+damagedRun, replace(`"team":"team-1"`, `"team":"team-1","state":"clo\u0000ed"`))
			},
			want: goesOn{runID: "run-2", pendingRange: 0, delivered: true},
			line: `Run record of prime.run.key="a" is damaged (unknown state "clo\x00ed"): the run is left out`,
		},
		{
			name: "pending upload without its step",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "object/abc/"+damagedRun, replace(`"step":4`, `"stxp":4`))
			},
			want: goesOn{runID: "run-1", pendingRange: restartedBand, delivered: true},
			line: `Pending upload abc of prime.run.key="a" in storage is damaged (`,
		},
		{
			name: "record missing from under its index",
			damage: func(t *testing.T, c *memstorage.Client) {
				require.NoError(t, c.Delete(context.Background(), "run/"+damagedRun))
			},
			want: goesOn{runID: "run-2", pendingRange: 0, delivered: true},
			line: `Run record of prime.run.key="a" is missing, though the run index names it: the run is left out`,
		},
		{
			name: "run index truncated, storage listed",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "runs", func(raw []byte) []byte { return raw[:len(raw)-3] })
			},
			want: recovered,
			line: `The run index in storage is damaged (truncated JSON): rebuilt from the run records in storage; no run is lost`,
		},
		{
			name: "run index garbled, storage cannot be listed",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "runs", garble(`[`, 1))
			},
			noWalk: true,
			want:   goesOn{runID: "run-2", pendingRange: 0, delivered: true},
			line:   `The run index in storage is damaged (garbled JSON at byte 0): the runs after the damage are not restored`,
		},
		{
			name: "a step's delivered episodes cut, their whole fingerprints kept",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "deliveredstep/7/0/"+damagedRun, func(raw []byte) []byte { return raw[:len(raw)-4] })
			},
			want: goesOn{runID: "run-1", pendingRange: 0, delivered: false},
			line: `Delivered episodes of step 7 of prime.run.key="a" in storage are damaged (truncated: 20 bytes): its 2 whole fingerprints are kept, the damaged value is kept under damaged/deliveredstep/7/0/` + damagedRun,
		},
		{
			name: "a step's delivered episodes out of order, kept sorted",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "deliveredstep/7/0/"+damagedRun, func(raw []byte) []byte { return append(raw[16:24:24], raw[:16]...) })
			},
			want: recovered,
			line: `Delivered episodes of step 7 of prime.run.key="a" in storage are damaged (out of order at fingerprint 1): its 3 whole fingerprints are kept`,
		},
		{
			name: "the delivered index cut, rebuilt from its parts",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "deliveredsteps/"+damagedRun, func(raw []byte) []byte { return raw[:len(raw)-2] })
			},
			want: recovered,
			line: `Delivered index of prime.run.key="a" in storage is damaged (checksum mismatch: truncated or altered): rebuilt from its 1 parts in storage; nothing is lost`,
		},
		{
			name: "the delivered index garbled, storage cannot be listed",
			damage: func(t *testing.T, c *memstorage.Client) {
				edit(t, c, "deliveredsteps/"+damagedRun, func([]byte) []byte { return []byte("{}") })
			},
			noWalk: true,
			want:   goesOn{runID: "run-1", pendingRange: 0, delivered: false},
			line:   `Delivered index of prime.run.key="a" in storage is damaged (not a step index) and storage cannot be listed: it starts again empty; a replay of an episode delivered before may upload it again`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := memstorage.New()
			api := &fleettest.CountingRuns{}
			storeDamagedRun(t, client, api)
			tc.damage(t, client)

			var sc storage.Client = client
			if tc.noWalk {
				sc = noWalk{client}
			}
			restarted := startExt(t, sc, api)
			ctx := context.Background()
			l, err := restarted.reg.Acquire(ctx, fleettest.KeyedResource("a"), reject.SignalLogs, 1)
			require.NoError(t, err, "the damaged run's data is taken")
			got := goesOn{runID: l.ID(), pendingRange: rangeOf(l, restarted.store, pendingFP, 4)}
			if got.pendingRange >= fallbackRangeLow {
				got.pendingRange = -1
			}
			got.delivered = deliveredAfterDamage(t, restarted.store, l)
			l.Release()

			assert.Equal(t, tc.want, got)
			problems := restarted.problems()
			require.Len(t, problems, 1, "one line for the damage: %q", problems)
			assert.Contains(t, problems[0], tc.line)
			assert.Empty(t, restarted.health, "damage is no storage failure")

			// The damage is repaired or set aside: the next start says nothing.
			restarted.stop(t)
			third := startExt(t, sc, api)
			assert.Empty(t, third.problems(), "the next start finds nothing damaged")
		})
	}
}

// failingReads is a storage extension's client whose reads fail.
type failingReads struct{ storage.Client }

func (failingReads) Get(context.Context, string) ([]byte, error) {
	return nil, errors.New("read /var/lib/otelcol/exporter_prime__runs: input/output error")
}

func (f failingReads) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		if op.Type == storage.Get {
			_, err := f.Get(ctx, op.Key)
			return err
		}
	}
	return f.Client.Batch(ctx, ops...)
}

func TestAStoreThatCannotBeReadAtStartDoesNotStopTheCollector(t *testing.T) {
	client := memstorage.New()
	api := &fleettest.CountingRuns{}
	storeDamagedRun(t, client, api)

	restarted := startExt(t, failingReads{client}, api)
	problems := restarted.problems()
	require.Len(t, problems, 1)
	assert.True(t, strings.HasPrefix(problems[0], "Could not read the runs saved in storage: starting without them"), problems[0])
	require.Len(t, restarted.health, 1, "the status shows the failure")
	assert.ErrorContains(t, restarted.health[0], "input/output error")
}

// readsFailAtFirst is a storage extension's client whose reads fail until
// heal is called.
type readsFailAtFirst struct {
	failingReads
	healed bool
}

func (c *readsFailAtFirst) Get(ctx context.Context, key string) ([]byte, error) {
	if c.healed {
		return c.Client.Get(ctx, key)
	}
	return c.failingReads.Get(ctx, key)
}

func (c *readsFailAtFirst) Batch(ctx context.Context, ops ...*storage.Operation) error {
	if c.healed {
		return c.Client.Batch(ctx, ops...)
	}
	return c.failingReads.Batch(ctx, ops...)
}

func TestARunIndexThatCouldNotBeReadAtStartIsNotOverwritten(t *testing.T) {
	client := memstorage.New()
	api := &fleettest.CountingRuns{}
	storeDamagedRun(t, client, api)

	flaky := &readsFailAtFirst{failingReads: failingReads{client}}
	restarted := startExt(t, flaky, api)
	flaky.healed = true
	// A new run's record adds it to the index, which must keep run "a".
	l, err := restarted.reg.Acquire(context.Background(), fleettest.KeyedResource("b"), reject.SignalLogs, 1)
	require.NoError(t, err)
	l.Release()
	restarted.stop(t)

	third := startExt(t, client, api)
	l, err = third.reg.Acquire(context.Background(), fleettest.KeyedResource("a"), reject.SignalLogs, 1)
	require.NoError(t, err)
	defer l.Release()
	assert.Equal(t, "run-1", l.ID(), "the run saved before the unreadable start is still restored")
}

package upload

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/platform/platformtest"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// journal is what the uploader asked of the ledger and the sink, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, fmt.Sprintf(format, args...))
}

// take returns the lines so far and starts anew.
func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.lines
	j.lines = nil
	return out
}

// fakeLedger is a run's ledger and route in memory, as a lease keeps
// them: delivered fingerprints, pending uploads and the sink they store
// their objects in, a range counter per step, the run's counts and its
// document routing. It writes what it is asked into its
// journal.
type fakeLedger struct {
	journal *journal

	mu        sync.Mutex
	delivered map[stepFP]bool
	pending   map[uint64]platform.Object
	ranges    map[int64]int64
	counts    map[string]int64
	// objectReads counts the objects read alone, outside their step's
	// Resume.
	objectReads int
	onTable     bool
	committed   bool
	// sink stores the objects of its pending uploads.
	sink platform.Objects
}

var (
	_ ObjectRun        = (*fakeLedger)(nil)
	_ Route            = (*fakeLedger)(nil)
	_ ObjectStore      = (*fakeLedger)(nil)
	_ platform.Objects = (*fakeLedger)(nil)
)

func newFakeLedger() *fakeLedger {
	return &fakeLedger{journal: &journal{}, delivered: map[stepFP]bool{}, pending: map[uint64]platform.Object{},
		ranges: map[int64]int64{}, counts: map[string]int64{}}
}

func (*fakeLedger) ID() string   { return "run-1" }
func (*fakeLedger) Team() string { return "team-1" }

func (f *fakeLedger) Count(name string, n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[name] += n
}

// stepFP is a delivered fingerprint with its step: a store keeps them by
// step, so an item is found only under the step it was marked with.
type stepFP struct {
	step int64
	fp   uint64
}

func (f *fakeLedger) Delivered(_ context.Context, _ string, step int64, fps []uint64) ([]bool, error) {
	f.journal.add("delivered? %d", len(fps))
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]bool, len(fps))
	for i, fp := range fps {
		out[i] = f.delivered[stepFP{step, fp}]
	}
	return out, nil
}

func (f *fakeLedger) MarkDelivered(_ context.Context, _ string, step int64, fps []uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fp := range fps {
		f.delivered[stepFP{step, fp}] = true
	}
	return nil
}

func (f *fakeLedger) Key() string { return "run-key" }

func (f *fakeLedger) NextRange(_ context.Context, step int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.ranges[step]
	f.ranges[step]++
	f.journal.add("object of step %d: new, range %d", step, r)
	return r
}

// The ledger is the uploader's ObjectStore too, as runstore's stores are
// both, and its platform.Objects, through its sink.

func (f *fakeLedger) Object(_ context.Context, _ string, fp uint64) (runstore.SavedObject, bool, error) {
	f.mu.Lock()
	f.objectReads++
	f.mu.Unlock()
	return f.saved(fp)
}

// saved is an object's read, alone (Object) or in its step's (Resume).
func (f *fakeLedger) saved(fp uint64) (runstore.SavedObject, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	obj, ok := f.pending[fp]
	if ok {
		f.journal.add("object of step %d: resumed, range %d", obj.Step, obj.Range)
	}
	return savedObject(f.ID(), obj), ok, nil
}

func (f *fakeLedger) Resume(ctx context.Context, key string, step int64, episodes, objects []uint64) ([]bool, map[uint64]runstore.SavedObject, error) {
	delivered, _ := f.Delivered(ctx, key, step, episodes)
	var saved map[uint64]runstore.SavedObject
	for _, fp := range objects {
		if so, ok, _ := f.saved(fp); ok {
			if saved == nil {
				saved = map[uint64]runstore.SavedObject{}
			}
			saved[fp] = so
		}
	}
	return delivered, saved, nil
}

func (f *fakeLedger) SaveObject(_ context.Context, _ string, fp uint64, so runstore.SavedObject) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending[fp] = objectOf(so)
	f.journal.add("save: %s", progress(objectOf(so)))
	return nil
}

func (f *fakeLedger) ConfirmObject(ctx context.Context, _ string, fp uint64, step int64, episodes []uint64) error {
	_ = f.MarkDelivered(ctx, "", step, episodes)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pending, fp)
	f.journal.add("done: %d episodes delivered", len(episodes))
	return nil
}

func (f *fakeLedger) DropObject(_ context.Context, _ string, fp uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.pending, fp)
	f.journal.add("forgotten")
	return nil
}

func (f *fakeLedger) Advance(ctx context.Context, runID string, obj platform.Object, body []byte) (platform.Object, bool, error) {
	return f.sink.Advance(ctx, runID, obj, body)
}

func (f *fakeLedger) DocumentsOnTable() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.onTable
}

func (f *fakeLedger) TracesCommitted(context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed = true
}

func (f *fakeLedger) MoveDocumentsToTable(context.Context) (onTable, switched bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.committed || f.onTable {
		return f.onTable, false
	}
	f.onTable = true
	return true, true
}

// pendingObjects are the uploads the ledger still holds.
func (f *fakeLedger) pendingObjects() []platform.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []platform.Object
	for _, obj := range f.pending {
		out = append(out, obj)
	}
	return out
}

// progress says how far an upload got.
func progress(obj platform.Object) string {
	switch {
	case obj.Put:
		return "put"
	case obj.URL != "":
		return "presigned"
	}
	return "new"
}

// liveRun is the other Ledger and Route: a run's lease from a real run
// registry (fleettest's collector on the online backend), whose uploads go
// over real HTTP to the spec-only fake platform, as the exporter's do. The
// tests that check what the platform received (objects read back, ranges,
// requests) upload through it; the uploader's telemetry is counted and its
// warnings observed.
type liveRun struct {
	t        *testing.T
	platform *rfttest.Server
	reg      *runs.Registry
	res      pcommon.Resource
	up       *Uploader
	tel      *countingTel
	logs     *observer.ObservedLogs
}

// testConfig is the exporter's default samples configuration: every 10th
// step, episodes and objects up to 32 MiB.
func testConfig(edits ...func(*Config)) Config {
	cfg := Config{StepInterval: 10, MaxEpisodeBytes: 32 << 20, MaxObjectBytes: 32 << 20}
	for _, edit := range edits {
		edit(&cfg)
	}
	return cfg
}

// newLiveRun is the run of a trainer that creates it by key (team-1), on
// a registry of its own over srv, with an uploader of cfg.
func newLiveRun(t *testing.T, srv *rfttest.Server, cfg Config) *liveRun {
	t.Helper()
	return newLiveRunOf(t, srv, fleettest.KeyedResource("run-key"), cfg)
}

// newLiveRunOf is newLiveRun for the run res names.
func newLiveRunOf(t *testing.T, srv *rfttest.Server, res pcommon.Resource, cfg Config) *liveRun {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	tel := &countingTel{}
	c := fleettest.NewCollector(t, fleettest.Config(), fleettest.Online(t, srv), runstore.NewMemStore())
	warn := logonce.New(zap.New(core), 16)
	objects := NewObjects(c.Objects, c.Store.(ObjectStore), warn)
	return &liveRun{t: t, platform: srv, reg: c.Reg, res: res, up: New(cfg, objects, tel, warn), tel: tel, logs: logs}
}

// push is one push of records to the run, as the exporter's is: a lease
// for the push, the records accepted each at its own Loc, the batch
// uploaded. It returns the records to retry and the error.
func (r *liveRun) push(recs ...plog.LogRecord) (map[Loc]bool, error) {
	r.t.Helper()
	ctx := context.Background()
	l, err := r.reg.Acquire(ctx, r.res, reject.SignalLogs, len(recs))
	require.NoError(r.t, err)
	defer l.Release()
	b := r.up.NewBatch(l, l, len(recs))
	defer b.Release()
	for i, lr := range recs {
		r.up.Accept(b, lr, Loc{Record: i})
	}
	return r.up.Upload(ctx, b)
}

// end ends the run, as a prime.run.end does after a push's uploads.
func (r *liveRun) end(status string) {
	r.t.Helper()
	l, err := r.reg.Acquire(context.Background(), r.res, reject.SignalLogs, 1)
	require.NoError(r.t, err)
	l.End(runs.End{Status: status})
	l.Release()
}

// retried are the records of recs that retry names, in their order: what
// the collector's retry sends again.
func retried(recs []plog.LogRecord, retry map[Loc]bool) []plog.LogRecord {
	var out []plog.LogRecord
	for i, lr := range recs {
		if retry[Loc{Record: i}] {
			out = append(out, lr)
		}
	}
	return out
}

// run is the platform's only run; the test fails if there is not exactly
// one.
func (r *liveRun) run() rfttest.Run {
	r.t.Helper()
	all := r.platform.Runs()
	require.Len(r.t, all, 1, "runs on the platform")
	return all[0]
}

// objects are the run's confirmed objects, read back (platformtest.Objects).
func (r *liveRun) objects() []string {
	r.t.Helper()
	return platformtest.Objects(r.t, r.run())
}

// logText is every warning the uploader logged, with its fields: what a
// user reads.
func (r *liveRun) logText() string {
	var b strings.Builder
	for _, e := range r.logs.All() {
		b.WriteString(e.Message)
		for k, v := range e.ContextMap() {
			fmt.Fprintf(&b, " %s=%v", k, v)
		}
		b.WriteString("\n")
	}
	return b.String()
}

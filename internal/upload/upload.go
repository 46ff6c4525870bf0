package upload

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"maps"
	"runtime"
	"slices"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// Config shapes the sample tables and says where documents go.
type Config struct {
	StepInterval    int64
	MaxEpisodeBytes int64
	MaxObjectBytes  int64
	// Encoders bounds the objects encoded at once (0: GOMAXPROCS).
	// Encoding is CPU-bound, so more at once only holds more memory: each
	// holds its object's rows, a page and the Parquet bytes.
	Encoders int
	// Traces receives native episode documents when Prime Traces is on;
	// nil when it is off.
	Traces platform.Traces
	// Exclusive keeps documents' rows out of the sample table while their
	// run's documents go to Prime Traces.
	Exclusive bool
}

// Telemetry is the self-telemetry the uploader counts into.
type Telemetry interface {
	Reject(signal string, reason reject.Reason, n int)
	Skip(signal string, reason reject.Reason, n int)
	// Coerce counts values taken as a Python user means them.
	Coerce(signal string, reason reject.Reason, n int)
	SamplesUploaded(rows, objects, bytes int)
	TracesUploaded(batches, documents int)
}

// Uploader maps and uploads episodes. It is safe for concurrent use.
type Uploader struct {
	cfg     Config
	tel     Telemetry
	warn    *logonce.Logger
	objects *Objects

	encoders spares[*sampletable.Encoder] // not safe for concurrent use: one per slot
	slots    chan struct{}                // one per object being encoded
	bodies   spares[*bytes.Buffer]        // an object's bytes, kept until the sink has them
	text     *sampletable.ArenaPool       // the chunks of the batches' rows
}

// keptTextChunks is how many 1 MiB chunks of row text an Uploader keeps
// between pushes (more go to the garbage collector's care): a push of
// 8 MiB of 2 KB episodes holds about 16 MB of trajectories.
const keptTextChunks = 32

// maxKeptBody is the largest object buffer kept for the next object: a
// buffer of a rare huge object is left to the garbage collector rather
// than held for good.
const maxKeptBody = 16 << 20

// keptBodyBytes bounds the object buffers kept between objects together,
// and maxKeptBodies their count.
const (
	keptBodyBytes = 32 << 20
	maxKeptBodies = 64
)

// New returns an uploader whose objects go through objects.
func New(cfg Config, objects *Objects, tel Telemetry, warn *logonce.Logger) *Uploader {
	n := cmp.Or(cfg.Encoders, runtime.GOMAXPROCS(0))
	return &Uploader{cfg: cfg, tel: tel, warn: warn, objects: objects,
		encoders: newSpares(n, sampletable.NewEncoder, func(*sampletable.Encoder) bool { return true }),
		slots:    make(chan struct{}, n),
		// A body is held through its upload, outside the encoding slot, so
		// there are as many as objects in flight: with the default four
		// consumers and a push's runs uploading side by side, a few dozen.
		// Kept by bytes rather than by count, they are all reused at 2 KB
		// episodes; with only the slots' count kept, most objects grew a
		// body from nothing (100 MB allocated in 4 s of scripts/bench.sh).
		bodies: newBudgetSpares(maxKeptBodies, func() *bytes.Buffer { return new(bytes.Buffer) },
			func(b *bytes.Buffer) bool { return b.Cap() <= maxKeptBody }, (*bytes.Buffer).Cap, keptBodyBytes),
		text: sampletable.NewArenaPool(keptTextChunks)}
}

// Loc is where a record sits in its resource's scope logs, so a failed
// step can hand its records back.
type Loc struct{ Scope, Record int }

// Batch is one run's accepted episodes of one push: rows by step for the
// sample table, and native documents for Prime Traces.
type Batch struct {
	// l and route are the run's: boxed once a push rather than once an
	// episode.
	l     ObjectRun
	route Route
	steps map[int64][]episode
	docs  []document
	// hint is room for the episodes of the batch's first step: a push is
	// nearly always of one step, whose rows then take one allocation
	// rather than a doubling's ten.
	hint int
	// text holds the rows' JSON columns until Release.
	text *sampletable.Arena
	// now is the created_at of rows whose record has no timestamp: the
	// push's time, read once rather than once a record.
	now time.Time
	// coerced counts the batch's values taken as a Python user means them,
	// by reason, told once at Release: counted and said once a record, a
	// verifiers chat (whose prompt is a list) spent 14 % of the
	// collector's CPU at 2 KB on the counter and the warning alone.
	coerced []reasonCount
	u       *Uploader
}

type reasonCount struct {
	reason reject.Reason
	n      int
}

// NewBatch returns an empty batch of the run that l and route keep (the
// same lease, as two roles) for a push of about records records. Release
// ends it.
func (u *Uploader) NewBatch(l ObjectRun, route Route, records int) *Batch {
	return &Batch{l: l, route: route, steps: map[int64][]episode{}, hint: records, text: u.text.Arena(), now: time.Now(), u: u}
}

// Release counts the values the batch coerced and gives back the memory
// of its rows: nothing may read them after, the Upload that sent them
// included.
func (b *Batch) Release() {
	b.u.coerced(b.l, b.coerced)
	b.coerced = nil
	b.text.Release()
	b.steps, b.docs = nil, nil
}

// coerce adds a record's coercions to the batch's counts.
func (b *Batch) coerce(reasons []reject.Reason) {
next:
	for _, r := range reasons {
		for i := range b.coerced {
			if b.coerced[i].reason == r {
				b.coerced[i].n++
				continue next
			}
		}
		b.coerced = append(b.coerced, reasonCount{r, 1})
	}
}

type episode struct {
	// ep is the row where its record's mapping put it: pointers, so that
	// neither the batch's steps nor an object's rows copy it.
	ep  *sampletable.Episode
	loc Loc
	fp  uint64 // fingerprint (episodeFingerprint), taken as it is accepted
}

// Locs is where every record of the batch sits.
func (b *Batch) Locs() map[Loc]bool {
	out := map[Loc]bool{}
	for _, eps := range b.steps {
		for _, e := range eps {
			out[e.loc] = true
		}
	}
	for _, d := range b.docs {
		out[d.loc] = true
	}
	return out
}

// Accept maps one record into b, one episode per row; what has no row is
// counted and logged here, and so are values taken as a Python user means
// them. It returns the record as mapped, for the sinks that take more of
// it than its rows (its Document); a rejected record comes back empty.
func (u *Uploader) Accept(b *Batch, lr plog.LogRecord, loc Loc) sampletable.Record {
	l := b.l
	rec, err := sampletable.FromRecordIn(b.text, lr.Attributes(), lr.Body(), lr.Timestamp(), lr.ObservedTimestamp(), b.now)
	if err != nil {
		reason := reject.BadValue
		if rej, ok := errors.AsType[*reject.Rejection](err); ok {
			reason = rej.Reason
		}
		u.reject(l, reason, 1, "episode\x00"+l.ID()+"\x00"+string(reason), "Rejected a prime.episode record that cannot become a row",
			zap.String("reason", string(reason)), zap.Error(err))
		return sampletable.Record{}
	}
	b.coerce(rec.Coerced())
	if rec.Document != nil && u.Traced(b.route) {
		d := document{raw: rec.Document, loc: loc, step: rec.Step}
		if u.cfg.Exclusive {
			// Kept for the table only, should the run fall back to it. A
			// copy of its own: the address of rec would move every
			// record's Record to the heap.
			kept := rec
			d.rec = &kept
			b.docs = append(b.docs, d)
			return rec
		}
		b.docs = append(b.docs, d)
	}
	u.toTable(b, rec, loc)
	return rec
}

// toTable puts a record's rows into the batch's steps; what has no row in
// the table is counted here.
func (u *Uploader) toTable(b *Batch, rec sampletable.Record, loc Loc) {
	l := b.l
	switch {
	case rec.Eval:
		u.skip(l, reject.Eval, 1)
	case rec.Step%u.cfg.StepInterval != 0:
		u.skip(l, reject.OffCadence, max(1, len(rec.Rows)))
	case len(rec.Rows) == 0:
		u.skip(l, reject.EmptyTrajectory, 1)
	}
	if rec.Eval || rec.Step%u.cfg.StepInterval != 0 {
		return
	}
	for i := range rec.Rows {
		ep := &rec.Rows[i]
		if int64(ep.Size) > u.cfg.MaxEpisodeBytes {
			u.reject(l, reject.EpisodeTooLarge, 1, "episode\x00"+l.ID()+"\x00too_large", "Rejected a prime.episode larger than samples.max_episode_bytes",
				zap.Int64("step", ep.Step), zap.Int("bytes", ep.Size), zap.Int64("max_episode_bytes", u.cfg.MaxEpisodeBytes))
			continue
		}
		// The fingerprint is taken here, while the row's text is still in
		// the cache from its mapping; taken in Upload, once the batch's
		// other records were mapped, it read every byte back from memory.
		eps := b.steps[rec.Step]
		if eps == nil && b.hint > 0 {
			eps, b.hint = make([]episode, 0, b.hint), 0
		}
		b.steps[rec.Step] = append(eps, episode{ep: ep, loc: loc, fp: episodeFingerprint(ep)})
	}
}

// coerced counts a batch's coercions by reason and says, once per run and
// reason, what the trainer could send instead.
func (u *Uploader) coerced(l ObjectRun, counts []reasonCount) {
	slices.SortFunc(counts, func(a, b reasonCount) int { return cmp.Compare(a.reason, b.reason) })
	for _, c := range counts {
		r := c.reason
		u.tel.Coerce(reject.SignalLogs, r, c.n)
		l.Count("values_coerced", int64(c.n))
		u.warn.Warn("coerced\x00"+l.ID()+"\x00"+string(r), "Took a prime.episode value as a Python user means it; sending it as its type avoids the conversion",
			zap.String("run_id", l.ID()), zap.String("reason", string(r)), zap.String("means", coercionMeaning(r)))
	}
}

// coercionMeaning says what a coercion took, for its log line.
func coercionMeaning(r reject.Reason) string {
	switch r {
	case reject.NumberString:
		return "prime.work.step was a string holding a decimal integer (the OTel Python SDK's form of a numpy int) and was taken as that number"
	case reject.JSONText:
		return "tag, prompt or answer was not a string (a list of chat messages, a number) and was stored as its JSON text"
	}
	return string(r)
}

func (u *Uploader) skip(l ObjectRun, reason reject.Reason, n int) {
	u.tel.Skip(reject.SignalLogs, reason, n)
	l.Count("episodes_skipped", int64(n))
}

// reject counts n lost episodes and warns once per key.
func (u *Uploader) reject(l ObjectRun, reason reject.Reason, n int, key, msg string, fields ...zap.Field) {
	u.tel.Reject(reject.SignalLogs, reason, n)
	l.Count("episodes_rejected", int64(n))
	u.warn.Warn(key, msg, append([]zap.Field{zap.String("run_id", l.ID())}, fields...)...)
}

// Upload sends the batch's documents to Prime Traces, then its rows step
// by step, in step order, and returns the records to retry with the error
// to retry them with. What a sink refused for good is counted and logged,
// not returned.
func (u *Uploader) Upload(ctx context.Context, b *Batch) (map[Loc]bool, error) {
	l := b.l
	var retry map[Loc]bool
	var errs []error
	failAt := func(locs []Loc, err error) {
		if retry == nil {
			retry = map[Loc]bool{}
		}
		for _, loc := range locs {
			retry[loc] = true
		}
		errs = append(errs, err)
	}
	fail := func(eps []episode, err error) {
		locs := make([]Loc, len(eps))
		for i, e := range eps {
			locs[i] = e.loc
		}
		failAt(locs, err)
	}
	down := u.uploadDocuments(ctx, b, failAt)
	for _, step := range slices.Sorted(maps.Keys(b.steps)) {
		if down != nil {
			fail(b.steps[step], down)
			continue
		}
		parts, prior, err := u.resume(ctx, l, step, b.steps[step])
		if err != nil {
			fail(b.steps[step], err)
			continue
		}
		for _, part := range parts {
			if down != nil {
				fail(part.eps, down)
				continue
			}
			err := u.uploadObject(ctx, l, step, part, prior)
			switch {
			case err == nil:
			case platform.Permanent(err):
				u.reject(l, platform.RejectReason(err, reject.UploadRejected), len(part.eps), "upload\x00"+l.ID()+"\x00"+platform.Class(err),
					"The platform refused a step's sample object: its episodes are dropped", zap.Int64("step", step), zap.Int("episodes", len(part.eps)), zap.Error(err))
			default:
				fail(part.eps, err)
				if platform.Down(err) {
					down = err
				}
			}
		}
	}
	if len(errs) == 0 {
		return nil, nil
	}
	return retry, platform.Retryable(platform.FirstRetryError(errs))
}

// notYetDelivered leaves out, and counts, the items whose fingerprint a
// sink committed before: a batch replayed by the queue after a restart, or
// by the collector's retry. The ledger is asked once per step.
func notYetDelivered[T any](ctx context.Context, u *Uploader, l ObjectRun, items []T, step func(T) int64, fp func(T) uint64) ([]T, error) {
	done := make([]bool, len(items))
	for st, idx := range byStep(items, step) {
		fps := make([]uint64, len(idx))
		for j, i := range idx {
			fps[j] = fp(items[i])
		}
		got, err := u.objects.Delivered(ctx, l, st, fps)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			done[i] = got[j]
		}
	}
	return leaveOutDelivered(u, l, items, done), nil
}

// leaveOutDelivered returns items without those done says a sink
// committed before, which it counts (already_delivered).
func leaveOutDelivered[T any](u *Uploader, l ObjectRun, items []T, done []bool) []T {
	n := 0
	for _, d := range done {
		if d {
			n++
		}
	}
	if n == 0 {
		return items // nearly every push: no copy of its episodes
	}
	u.skip(l, reject.AlreadyDelivered, n)
	out := make([]T, 0, len(items)-n)
	for i, it := range items {
		if !done[i] {
			out = append(out, it)
		}
	}
	return out
}

// markDelivered records items a sink committed, a marking per step.
func markDelivered[T any](ctx context.Context, u *Uploader, l ObjectRun, items []T, step func(T) int64, fp func(T) uint64) {
	for st, idx := range byStep(items, step) {
		fps := make([]uint64, len(idx))
		for j, i := range idx {
			fps[j] = fp(items[i])
		}
		u.objects.markDelivered(ctx, l, st, fps)
	}
}

// byStep groups the items' indexes by step, in order.
func byStep[T any](items []T, step func(T) int64) map[int64][]int {
	groups := map[int64][]int{}
	for i, it := range items {
		st := step(it)
		groups[st] = append(groups[st], i)
	}
	return groups
}

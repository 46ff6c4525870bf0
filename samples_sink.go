package primeexporter

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// samplesSink turns prime.episode records into step-keyed Parquet objects
// and uploads them: presign → PUT → confirm, one object per run and step
// (more when a step's episodes exceed max_object_bytes).
//
// Every step is uploaded on its own: a step that fails is handed back to the
// collector's retry by itself, and the other steps of the batch still go.
// An object whose upload got as far as a successful PUT is remembered by the
// content of its episodes, so the retry of the same records reuses its key,
// range and URL and only confirms: the viewer unions every object of a step,
// so an object uploaded twice would show its rows twice.
type samplesSink struct {
	g   *registry
	cfg SamplesConfig

	encoders sync.Pool // *sampletable.Encoder; not safe for concurrent use
}

func newSamplesSink(g *registry, cfg SamplesConfig) *samplesSink {
	return &samplesSink{g: g, cfg: cfg, encoders: sync.Pool{New: func() any { return sampletable.NewEncoder() }}}
}

// episodeRef is one accepted episode and where its record sits in the
// resource's scope logs, so a failed step can hand its records back.
type episodeRef struct {
	ep  sampletable.Episode
	loc recordLoc
	fp  uint64 // episodeFingerprint, set by undelivered
}

type recordLoc struct{ scope, record int }

// episodeBatch is one run's accepted episodes of one push, by step.
type episodeBatch map[int64][]episodeRef

// accept maps one record; what has no row is counted and logged here.
func (s *samplesSink) accept(l lease, b episodeBatch, lr plog.LogRecord, loc recordLoc) {
	ep, err := sampletable.FromRecord(lr.Attributes(), lr.Body(), lr.Timestamp(), lr.ObservedTimestamp(), time.Now())
	switch {
	case err != nil:
		reason := "bad_episode"
		var rej *sampletable.Rejection
		if errors.As(err, &rej) {
			reason = rej.Reason
		}
		s.g.tel.reject(signalLogs, reason, 1)
		l.r.stats.add("episodes_rejected", 1)
		s.g.warn.Warn("episode\x00"+l.id+"\x00"+reason, "Rejected a prime.episode record that cannot become a row", zap.String("run_id", l.id), zap.String("reason", reason), zap.Error(err))
	case ep.Eval:
		s.skip(l, "eval")
	case ep.Step%s.cfg.StepInterval != 0:
		s.skip(l, "off_cadence")
	case ep.EmptyTrajectory:
		s.skip(l, "empty_trajectory")
	case int64(ep.Size) > s.cfg.MaxEpisodeBytes:
		s.g.tel.reject(signalLogs, "episode_too_large", 1)
		l.r.stats.add("episodes_rejected", 1)
		s.g.warn.Warn("episode\x00"+l.id+"\x00too_large", "Rejected a prime.episode larger than samples.max_episode_bytes", zap.String("run_id", l.id),
			zap.Int64("step", ep.Step), zap.Int("bytes", ep.Size), zap.Int64("max_episode_bytes", s.cfg.MaxEpisodeBytes))
	default:
		b[ep.Step] = append(b[ep.Step], episodeRef{ep: ep, loc: loc})
	}
}

func (s *samplesSink) skip(l lease, reason string) {
	s.g.tel.skip(signalLogs, reason, 1)
	l.r.stats.add("episodes_skipped", 1)
}

// upload sends the batch step by step, in step order, and returns the
// records to retry with the error to retry them with. A step the platform
// refused for good is counted and logged, not returned. Episodes already
// delivered (a batch replayed by the queue after a restart, or by the
// collector's retry) are left out, so none is in the table twice.
func (s *samplesSink) upload(ctx context.Context, l lease, b episodeBatch) (map[recordLoc]bool, error) {
	var retry map[recordLoc]bool
	var errs []error
	fail := func(refs []episodeRef, err error) {
		if retry == nil {
			retry = map[recordLoc]bool{}
		}
		for _, ref := range refs {
			retry[ref.loc] = true
		}
		errs = append(errs, err)
	}
	// Once the platform is down, the rest goes back unsent, as in sendSteps.
	var down error
	for _, step := range slices.Sorted(maps.Keys(b)) {
		if down != nil {
			fail(b[step], down)
			continue
		}
		refs, err := s.undelivered(ctx, l, b[step])
		if err != nil {
			fail(b[step], err)
			continue
		}
		for _, part := range splitBySize(refs, s.cfg.MaxObjectBytes) {
			if down != nil {
				fail(part, down)
				continue
			}
			err := s.uploadObject(ctx, l, step, part)
			if err == nil {
				continue
			}
			if isPermanent(err) {
				s.g.tel.reject(signalLogs, "upload_rejected", len(part))
				l.r.stats.add("episodes_rejected", int64(len(part)))
				s.g.warn.Warn("upload\x00"+l.id+"\x00"+errorClass(err), "The platform refused a step's sample object: its episodes are dropped",
					zap.String("run_id", l.id), zap.Int64("step", step), zap.Int("episodes", len(part)), zap.Error(err))
				continue
			}
			fail(part, err)
			if platformDown(err) {
				down = err
			}
		}
	}
	if len(errs) == 0 {
		return nil, nil
	}
	return retry, retryable(firstRetryError(errs))
}

// undelivered leaves out the episodes confirmed before.
func (s *samplesSink) undelivered(ctx context.Context, l lease, refs []episodeRef) ([]episodeRef, error) {
	fps := make([]uint64, len(refs))
	for i := range refs {
		refs[i].fp = episodeFingerprint(refs[i].ep)
		fps[i] = refs[i].fp
	}
	done, err := s.g.store.delivered(ctx, l.r.ident.registryKey(), fps)
	if err != nil {
		return nil, err
	}
	out := refs[:0:0]
	for i, ref := range refs {
		if done[i] {
			s.skip(l, "already_delivered")
			continue
		}
		out = append(out, ref)
	}
	return out, nil
}

// splitBySize cuts a step's episodes into parts of at most max bytes of
// encoded text; every part holds at least one episode.
func splitBySize(refs []episodeRef, max int64) [][]episodeRef {
	if len(refs) == 0 {
		return nil
	}
	var parts [][]episodeRef
	start, size := 0, int64(0)
	for i, ref := range refs {
		if i > start && size+int64(ref.ep.Size) > max {
			parts = append(parts, refs[start:i])
			start, size = i, 0
		}
		size += int64(ref.ep.Size)
	}
	return append(parts, refs[start:])
}

// uploadObject writes one object: offline straight to its file, online
// presign → PUT → confirm, resuming a pending upload of the same episodes.
func (s *samplesSink) uploadObject(ctx context.Context, l lease, step int64, part []episodeRef) error {
	fp := objectFingerprint(step, part)
	obj := l.r.pending.get(fp)
	if obj == nil {
		// Remembered (and saved) from the start, so a retry or a restart
		// keeps the range instead of leaving a gap or reusing it.
		obj = &pendingObject{step: step, rangeIdx: l.r.ranges.take(step)}
		l.r.pending.remember(fp, obj)
		s.g.persist(ctx, l.r)
	}
	body, err := s.encode(l.id, step, obj.rangeIdx, part)
	if err != nil {
		return err
	}
	if w, ok := s.g.p.(objectWriter); ok {
		if err := w.WriteObject(ctx, l.id, step, obj.rangeIdx, body); err != nil {
			return err
		}
	} else if err := s.send(ctx, l, obj, body, fp); err != nil {
		return err
	}
	// A crash between the confirm and this write is the one window in
	// which a replayed batch can put these rows in the table twice.
	fps := make([]uint64, len(part))
	for i, ref := range part {
		fps[i] = ref.fp
	}
	if err := s.g.store.markDelivered(ctx, l.r.ident.registryKey(), fps); err != nil {
		s.g.warn.Warn("delivered\x00"+l.id, "Could not record delivered episodes in storage; a replay after a restart may upload them again", zap.String("run_id", l.id), zap.Error(err))
	}
	l.r.pending.forget(fp)
	s.g.persist(ctx, l.r)
	s.uploaded(l, len(part), len(body))
	return nil
}

// send runs the three calls, remembering how far it got so that a retry
// resumes instead of repeating: a URL still valid is used again, and after
// a successful PUT only the confirm is left.
func (s *samplesSink) send(ctx context.Context, l lease, obj *pendingObject, body []byte, fp uint64) error {
	now := s.g.now()
	if obj.key == "" || (!obj.put && obj.expired(now)) {
		p, err := s.g.p.Presign(ctx, l.id, obj.step) // replayable: only mints a URL
		if err != nil {
			return err
		}
		obj.url, obj.key, obj.presignedAt, obj.expiresIn, obj.put = p.URL, p.Key, now, p.ExpiresIn, false
		l.r.pending.remember(fp, obj)
		s.g.persist(ctx, l.r)
	}
	if !obj.put {
		if err := s.g.p.Put(ctx, obj.url, body); err != nil {
			return err
		}
		obj.put = true
		l.r.pending.remember(fp, obj)
		s.g.persist(ctx, l.r)
	}
	return s.g.p.Confirm(ctx, l.id, obj.step, obj.key) // replayable: a second confirm changes nothing
}

func (s *samplesSink) encode(runID string, step, rangeIdx int64, part []episodeRef) ([]byte, error) {
	eps := make([]sampletable.Episode, len(part))
	size := 0
	for i, ref := range part {
		eps[i] = ref.ep
		size += ref.ep.Size
	}
	enc := s.encoders.Get().(*sampletable.Encoder)
	defer s.encoders.Put(enc)
	var buf bytes.Buffer
	buf.Grow(size/2 + 4096)
	if err := enc.Encode(&buf, runID, step, rangeIdx, eps); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *samplesSink) uploaded(l lease, rows, size int) {
	s.g.tel.samplesUploaded(rows, 1, size)
	l.r.stats.add("sample_rows", int64(rows))
	l.r.stats.add("sample_objects", 1)
	l.r.stats.add("sample_bytes", int64(size))
}

// episodeFingerprint identifies an episode by its content, which a replay
// of the same record reproduces (created_at comes from the record's own
// timestamps).
func episodeFingerprint(ep sampletable.Episode) uint64 {
	h := xxhash.New()
	var n [8]byte
	word := func(v int64) {
		binary.LittleEndian.PutUint64(n[:], uint64(v))
		_, _ = h.Write(n[:])
	}
	text := func(p *string) {
		if p == nil {
			word(-1)
			return
		}
		word(int64(len(*p)))
		_, _ = h.WriteString(*p)
	}
	word(ep.Step)
	word(ep.CreatedAt.UnixMicro())
	for _, s := range []*string{&ep.Tag, &ep.Prompt, &ep.Answer, &ep.Trajectory, ep.EnvName, ep.Completion, ep.Task, ep.Info, ep.Metrics, ep.Timing} {
		text(s)
	}
	return h.Sum64()
}

// objectFingerprint identifies an object by its step and episodes, so the
// retry of the same records finds the upload it left pending.
func objectFingerprint(step int64, part []episodeRef) uint64 {
	buf := make([]byte, 8*(len(part)+1))
	binary.LittleEndian.PutUint64(buf, uint64(step))
	for i, ref := range part {
		binary.LittleEndian.PutUint64(buf[8*(i+1):], ref.fp)
	}
	return xxhash.Sum64(buf)
}

// pendingObject is an upload that has a key but no confirm yet.
type pendingObject struct {
	step, rangeIdx int64
	url, key       string
	presignedAt    time.Time
	expiresIn      time.Duration
	put            bool
}

// expired leaves a minute's margin for the PUT itself.
func (o *pendingObject) expired(now time.Time) bool {
	return o.expiresIn > 0 && now.After(o.presignedAt.Add(o.expiresIn-time.Minute))
}

// maxPendingObjects bounds what a run remembers of unconfirmed uploads;
// past it the oldest is forgotten, which at worst re-uploads that object.
const maxPendingObjects = 256

type pendingObjects struct {
	mu    sync.Mutex
	objs  map[uint64]*pendingObject
	order []uint64
}

func (p *pendingObjects) get(fp uint64) *pendingObject {
	p.mu.Lock()
	defer p.mu.Unlock()
	if o, ok := p.objs[fp]; ok {
		c := *o
		return &c
	}
	return nil
}

func (p *pendingObjects) remember(fp uint64, o *pendingObject) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		p.objs = map[uint64]*pendingObject{}
	}
	if _, ok := p.objs[fp]; !ok {
		p.order = append(p.order, fp)
		if len(p.order) > maxPendingObjects {
			delete(p.objs, p.order[0])
			p.order = p.order[1:]
		}
	}
	c := *o
	p.objs[fp] = &c
}

func (p *pendingObjects) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.objs, p.order = nil, nil
}

func (p *pendingObjects) forget(fp uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.objs, fp)
}

// runStats are one run's counts for its close-out log line.
type runStats struct {
	mu sync.Mutex
	n  map[string]int64
}

func (s *runStats) add(name string, v int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int64{}
	}
	s.n[name] += v
}

func (s *runStats) fields() []zap.Field {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]zap.Field, 0, len(s.n))
	for _, k := range slices.Sorted(maps.Keys(s.n)) {
		out = append(out, zap.Int64(k, s.n[k]))
	}
	return out
}

package offlinesync

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/sampletable"
	"github.com/primeintellect/primeexporter/rft"
)

// runSync is the state of one run directory's sync. mu guards j and rep
// while objects upload in parallel.
type runSync struct {
	opts *Options
	dir  string
	rec  platform.RunRecord

	mu      sync.Mutex
	j       *Journal
	journal *journalWriter
	rep     *Report
}

// check refuses a sync that would put the run somewhere other than where
// its journal says it already went.
func (s *runSync) check() error {
	switch {
	case s.j.Endpoint != "" && s.j.Endpoint != s.opts.Endpoint:
		return configError("%s was synced to %s as run %s; this sync goes to %s, where that run does not exist (use the first endpoint, or remove %s to sync it anew)",
			s.dir, s.j.Endpoint, s.j.RunID, s.opts.Endpoint, JournalFile)
	case s.opts.RunID != "" && s.j.RunID != "" && s.opts.RunID != s.j.RunID:
		return configError("%s was already synced as run %s; --run-id %s disagrees", s.dir, s.j.RunID, s.opts.RunID)
	case s.j.RunID == "" && s.opts.RunID == "" && !s.rec.Attached && s.rec.Spec == nil:
		return configError("%s: %s holds no create body (spec) and the run is not attached: give --run-id", s.dir, platform.RunFile)
	case s.j.RunID == "" && s.opts.RunID == "" && !s.rec.Attached && s.team() == "":
		return configError("%s: the run has no team: set --team-id or PRIME_TEAM_ID (a team_id in %s wins)", s.dir, platform.RunFile)
	}
	return nil
}

// team is run.json's team, else the flag's.
func (s *runSync) team() string {
	team := s.rec.TeamID
	if s.rec.Spec != nil {
		team = cmp.Or(team, s.rec.Spec.TeamID)
	}
	return cmp.Or(team, s.opts.TeamID)
}

// ended says run.json records the run's end.
func (s *runSync) ended() bool { return s.rec.Status != platform.StatusRunning }

// plan fills the report's Plan with what a sync would send.
func (s *runSync) plan() {
	add := func(format string, args ...any) { s.rep.Plan = append(s.rep.Plan, fmt.Sprintf(format, args...)) }
	switch {
	case s.j.RunID != "":
		add("use platform run %s (from %s)", s.j.RunID, JournalFile)
	case s.opts.RunID != "":
		add("attach to platform run %s", s.opts.RunID)
	case s.rec.Attached:
		add("attach to platform run %s (the run the collector attached to)", s.rec.ID)
	case s.rec.Spec == nil:
		add("nothing to create from: %s holds no create body; give --run-id", platform.RunFile)
	default:
		team := s.team()
		if team == "" {
			team = "(none yet: set --team-id or PRIME_TEAM_ID)"
		}
		add("create a run: model %s, team %s, %d environment(s)", s.rec.Spec.BaseModel, team, len(s.rec.Spec.Environments))
	}
	lines, n, err := readMetrics(s.dir, s.j.MetricsOffset)
	if err != nil {
		add("cannot read %s: %v", platform.MetricsFile, err)
	}
	add("post %d metrics line(s) (%s)", len(lines), humanBytes(n))
	objs, _ := listObjects(s.dir)
	count, bytes := 0, int64(0)
	for _, o := range objs {
		if !s.j.Objects[o.Name].done() {
			count++
			bytes += o.Size
		}
	}
	add("upload %d object(s) (%s)", count, humanBytes(bytes))
	switch {
	case s.j.ClosedOut != "":
		add("nothing to close: closed out %s", s.j.ClosedOut)
	case !s.ended():
		add("leave the run open: %s says it is still running", platform.RunFile)
	case s.rec.Status == string(rft.StatusCompleted):
		add("finalize the run (completed)")
	case s.attached():
		add("leave the %s run to its launcher (an attached run's failure is not marked)", s.rec.Status)
	default:
		add("mark the run failed: %q", s.rec.ErrorMessage)
	}
}

func (s *runSync) attached() bool {
	return s.j.Attached || (s.j.RunID == "" && (s.opts.RunID != "" || s.rec.Attached))
}

// run sends what is left, in the exporter's order: run, metrics, objects,
// close-out.
func (s *runSync) run(ctx context.Context) error {
	if err := s.ensureRun(ctx); err != nil {
		return err
	}
	if err := s.postMetrics(ctx); err != nil {
		return err
	}
	if err := s.uploadObjects(ctx); err != nil {
		return err
	}
	return s.closeOut(ctx)
}

// ensureRun creates or attaches the platform run once: the id is flushed
// to the journal before anything is sent to it.
func (s *runSync) ensureRun(ctx context.Context) error {
	if s.j.RunID != "" {
		return nil
	}
	origin := platform.Origin{Identity: s.rec.Identity, TeamID: s.team()}
	if id := cmp.Or(s.opts.RunID, attachedID(s.rec)); id != "" {
		if err := s.opts.Platform.AttachRun(ctx, id, origin); err != nil {
			return err
		}
		s.j.RunID, s.j.Attached, s.rep.Attached = id, true, true
	} else {
		req := *s.rec.Spec
		req.TeamID = origin.TeamID
		// Not replayable, and still tried again as the exporter tries
		// it: a run the platform may have made before an answer got
		// lost is an empty orphan, while giving up would leave the run's
		// data off the platform (see the package doc).
		var run rft.Run
		err := s.retry(ctx, func() (err error) {
			run, err = s.opts.Platform.CreateRun(ctx, req, origin)
			return err
		})
		if err != nil {
			if platform.Permanent(err) && !platform.KeyRefused(err) {
				return configError("%s: the platform refused to create the run (team %s): %w", s.dir, origin.TeamID, err)
			}
			return fmt.Errorf("%s: creating the run: %w", s.dir, err)
		}
		s.j.RunID, s.rep.Created = run.ID, true
	}
	s.j.Endpoint = s.opts.Endpoint
	return s.journal.commit(true)
}

func attachedID(rec platform.RunRecord) string {
	if rec.Attached {
		return rec.ID
	}
	return ""
}

// postMetrics posts each complete line after the journal's offset, in
// file order, with the platform run id in place of the local one.
func (s *runSync) postMetrics(ctx context.Context) error {
	lines, _, err := readMetrics(s.dir, s.j.MetricsOffset)
	if err != nil {
		return configError("%s: %w", s.dir, err)
	}
	for _, line := range lines {
		var post rft.MetricsRequest
		err := json.Unmarshal(line.Body, &post)
		if err == nil {
			err = s.retry(ctx, func() error { return s.opts.Platform.PostMetrics(ctx, s.j.RunID, post.Metrics) })
		} else {
			err = misconfigured{fmt.Errorf("not a metrics post: %w", err)}
		}
		switch {
		case err == nil:
			s.j.MetricsPosted++
			s.rep.MetricsPosted++
			s.rep.Bytes += int64(len(line.Body))
		case refusedForGood(err):
			s.j.MetricsRefused = append(s.j.MetricsRefused, Refusal{Offset: line.End - int64(len(line.Body)) - 1, Error: err.Error()})
		default:
			return fmt.Errorf("%s: posting metrics: %w", s.dir, err)
		}
		s.j.MetricsOffset = line.End
		// Not flushed: a replayed post is harmless (package doc).
		if err := s.journal.commit(false); err != nil {
			return err
		}
		s.opts.Progress.Sent(s.dir, "", int64(len(line.Body)))
	}
	return nil
}

// refusedForGood is a refusal of one item (not of the key): recorded and
// skipped, as the exporter drops a rejected record.
func refusedForGood(err error) bool {
	return !platform.KeyRefused(err) && (platform.Permanent(err) || errors.As(err, new(misconfigured)))
}

// uploadObjects uploads every object not yet confirmed, Parallel at a time.
func (s *runSync) uploadObjects(ctx context.Context) error {
	objs, err := listObjects(s.dir)
	if err != nil {
		return err
	}
	todo := make(chan objectFile)
	var (
		wg    sync.WaitGroup
		errMu sync.Mutex
		first error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range s.opts.Parallel {
		wg.Go(func() {
			for o := range todo {
				if err := s.uploadObject(ctx, o); err != nil {
					errMu.Lock()
					first = cmp.Or(first, err)
					errMu.Unlock()
					cancel() // the platform is down or the key refused: stop sending
				}
			}
		})
	}
	for _, o := range objs {
		s.mu.Lock()
		done := s.j.Objects[o.Name].done()
		s.mu.Unlock()
		if done {
			continue
		}
		select {
		case todo <- o:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(todo)
	wg.Wait()
	return first
}

// uploadObject rewrites one object's run_id and stores it in the
// platform's two stages, the upload (presign when needed, PUT) and the
// confirm, journaling the upload once it is made.
func (s *runSync) uploadObject(ctx context.Context, o objectFile) error {
	s.mu.Lock()
	entry := s.j.Objects[o.Name]
	if entry == nil {
		entry = &ObjectEntry{Step: o.Step, Range: o.Range}
		s.j.Objects[o.Name] = entry
	}
	obj := entry.object()
	s.mu.Unlock()

	raw, err := os.ReadFile(filepath.Join(s.dir, platform.SamplesDir, o.Name))
	if err == nil {
		raw, err = sampletable.RewriteRunID(raw, s.j.RunID)
	}
	if err != nil {
		return s.objectDone(o, entry, 0, fmt.Errorf("%s: %w", o.Name, err))
	}
	err = s.retry(ctx, func() error {
		for {
			next, done, err := s.opts.Platform.Advance(ctx, s.j.RunID, obj, raw)
			if err == nil || next.URL != "" {
				// Kept on an error too: a PUT that failed after its
				// presign carries the new URL, and the retry PUTs to it
				// instead of minting another. Journaled with the next
				// commit: losing it only orphans a URL.
				obj = next
				s.mu.Lock()
				entry.progress(next)
				s.mu.Unlock()
			}
			if err != nil || done {
				return err
			}
			// Flushed once the upload is done, before the confirm: from
			// then on the key must never be forgotten, or a new key could
			// land the rows twice. Losing a presign only orphans a URL.
			if err := s.journal.commit(next.Put); err != nil {
				return err
			}
		}
	})
	switch {
	case err == nil:
		return s.objectDone(o, entry, int64(len(raw)), nil)
	case refusedForGood(err):
		return s.objectDone(o, entry, 0, err)
	}
	return fmt.Errorf("%s: uploading %s: %w", s.dir, o.Name, err)
}

// objectDone journals an object as confirmed, or as refused with refusal.
func (s *runSync) objectDone(o objectFile, entry *ObjectEntry, sent int64, refusal error) error {
	s.mu.Lock()
	entry.Bytes = o.Size
	if refusal != nil {
		entry.Refused = refusal.Error()
	} else {
		entry.Confirmed = true
		s.rep.ObjectsUploaded++
		s.rep.Bytes += sent
	}
	s.mu.Unlock()
	// Not flushed: with the PUT's key on disk, a forgotten confirm is only
	// confirmed again, which changes nothing.
	if err := s.journal.commit(false); err != nil {
		return err
	}
	if refusal == nil {
		s.opts.Progress.Sent(s.dir, o.Name, o.Size)
	}
	return nil
}

// closeOut ends the run on the platform as run.json ended it, once, and
// only when everything before it went: the exporter's order.
func (s *runSync) closeOut(ctx context.Context) error {
	switch {
	case s.j.ClosedOut != "":
		s.rep.State = s.j.ClosedOut
		return nil
	case !s.ended():
		s.rep.State = "open"
		return nil
	}
	var err error
	switch {
	case s.rec.Status == string(rft.StatusCompleted):
		exit := 0
		if s.rec.ExitCode != nil {
			exit = *s.rec.ExitCode
		}
		err = s.retry(ctx, func() error {
			return platform.Complete(ctx, s.opts.Platform, s.j.RunID, exit, func(error) {})
		})
	case s.j.Attached:
		// The exporter's rule: an attached run's launcher marks its
		// failures.
	default:
		err = s.retry(ctx, func() error {
			return s.opts.Platform.SetStatus(ctx, s.j.RunID, rft.StatusFailed, s.rec.ErrorMessage)
		})
	}
	if err != nil {
		return fmt.Errorf("%s: closing the run out: %w", s.dir, err)
	}
	s.j.ClosedOut = s.rec.Status
	s.rep.State = s.rec.Status
	return s.journal.commit(true)
}

// retry calls a replayable call again while it fails retryably, for up to
// RetryFor, waiting as the platform asks (Retry-After) or backing off
// exponentially. The rft client has already retried in place; this is
// the part exporterhelper's retry_on_failure plays for the exporter.
func (s *runSync) retry(ctx context.Context, call func() error) error {
	deadline := time.Now().Add(s.opts.RetryFor)
	wait := time.Second
	for {
		err := call()
		if err == nil || platform.Permanent(err) || platform.KeyRefused(err) || ctx.Err() != nil {
			return err
		}
		d := cmp.Or(platform.RetryAfter(err), wait)
		if time.Now().Add(d).After(deadline) {
			return err
		}
		if s.opts.Sleep(ctx, d) != nil {
			return err
		}
		wait = min(2*wait, 30*time.Second)
	}
}

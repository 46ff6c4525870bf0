package platform

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/primeintellect/primeexporter/rft"
)

// Offline runs the platform lifecycle against a local directory:
// <dir>/<run id>/run.json, metrics.jsonl and samples/, with locally issued
// ids. It is what a new user sees work with no account, and what a trainer
// uses on a machine with no network, so it writes exactly the bodies the
// online path would send.
type Offline struct {
	dir string

	mu   sync.Mutex
	runs map[string]*RunRecord
}

var (
	_ Runs    = (*Offline)(nil)
	_ Objects = (*Offline)(nil)
)

// RunRecord is run.json: everything prime-sync needs to put the run on
// the platform later. Spec is the create body the platform would have
// received (team_id "" when the run had none: the sync supplies it);
// Identity and TeamID say which run it is.
type RunRecord struct {
	ID           string                `json:"id"`
	Attached     bool                  `json:"attached,omitempty"`
	Identity     string                `json:"identity,omitempty"`
	TeamID       string                `json:"team_id,omitempty"`
	Spec         *rft.CreateRunRequest `json:"spec,omitempty"`
	Status       string                `json:"status"`
	ErrorMessage string                `json:"error_message,omitempty"`
	ExitCode     *int                  `json:"exit_code,omitempty"`
	CreatedAt    time.Time             `json:"created_at"`
	UpdatedAt    time.Time             `json:"updated_at"`
	FinishedAt   *time.Time            `json:"finished_at,omitempty"`
}

// Offline layout and modes: owner-only, since run specs and episodes can
// be private.
const (
	StatusRunning   = "running"
	RunFile         = "run.json"
	MetricsFile     = "metrics.jsonl"
	SamplesDir      = "samples"
	offlineDirMode  = 0o700
	offlineFileMode = 0o600
)

// NewOffline makes dir if needed.
func NewOffline(dir string) (*Offline, error) {
	if err := os.MkdirAll(dir, offlineDirMode); err != nil {
		return nil, fmt.Errorf("offline directory: %w", err)
	}
	return &Offline{dir: dir, runs: map[string]*RunRecord{}}, nil
}

// RunDirectory is where offline mode keeps a run.
func RunDirectory(dir, runID string) string { return filepath.Join(dir, runID) }

// CreateRun issues an id of the form offline-<16 hex>.
func (s *Offline) CreateRun(_ context.Context, req rft.CreateRunRequest, origin Origin) (rft.Run, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return rft.Run{}, err
	}
	id := "offline-" + hex.EncodeToString(b[:])
	now := time.Now().UTC()
	r := &RunRecord{ID: id, Identity: origin.Identity, TeamID: origin.TeamID, Spec: &req, Status: StatusRunning, CreatedAt: now, UpdatedAt: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(s.dir, id), offlineDirMode); err != nil {
		return rft.Run{}, err
	}
	if err := s.writeRunLocked(r); err != nil {
		return rft.Run{}, err
	}
	s.runs[id] = r
	return rft.Run{ID: id, Name: req.Name, Status: "RUNNING"}, nil
}

// AttachRun makes the directory of a run created elsewhere, recording
// where it came from.
func (s *Offline) AttachRun(_ context.Context, runID string, origin Origin) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.runLocked(runID)
	if err != nil || (r.Identity == origin.Identity && r.TeamID == origin.TeamID) {
		return err
	}
	r.Identity, r.TeamID = origin.Identity, origin.TeamID
	return s.writeRunLocked(r)
}

// PostMetrics appends the body the online path would post.
func (s *Offline) PostMetrics(_ context.Context, runID string, metrics map[string]float64) error {
	if bad := rft.NonFinite(metrics); len(bad) > 0 {
		return fmt.Errorf("non-finite metric values are never sent: %s", strings.Join(bad, ", "))
	}
	line, err := json.Marshal(rft.MetricsRequest{RunID: runID, Metrics: metrics})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.runLocked(runID); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, runID, MetricsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, offlineFileMode)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(line, '\n'))
	return errors.Join(werr, f.Close())
}

// Finalize closes a running run as completed; like the platform, a second
// finalize changes nothing.
func (s *Offline) Finalize(_ context.Context, runID string, exitCode int) error {
	return s.close(runID, string(rft.StatusCompleted), "", &exitCode)
}

// SetStatus closes a running run; a closed run stays as it is (the
// platform's 409, which the client treats as success).
func (s *Offline) SetStatus(_ context.Context, runID string, status rft.Status, message string) error {
	return s.close(runID, string(status), message, nil)
}

func (s *Offline) close(runID, status, message string, exitCode *int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.runLocked(runID)
	if err != nil {
		return err
	}
	if r.Status != StatusRunning {
		return nil
	}
	now := time.Now().UTC()
	r.Status, r.ErrorMessage, r.ExitCode = status, message, exitCode
	r.UpdatedAt, r.FinishedAt = now, &now
	return s.writeRunLocked(r)
}

// Advance writes the exact bytes an online upload would PUT to
// <run>/samples/step_<step>_<range>.parquet: one stage, so the first is
// the last (done), and there is no progress to save.
func (s *Offline) Advance(_ context.Context, runID string, obj Object, body []byte) (Object, bool, error) {
	err := s.writeRunFile(runID, SamplesDir, fmt.Sprintf("step_%d_%d.parquet", obj.Step, obj.Range), body)
	return obj, err == nil, err
}

// writeRunFile replaces <run>/<sub>/<name> atomically, making the run's
// record first if it is an attached run's first data.
func (s *Offline) writeRunFile(runID, sub, name string, body []byte) error {
	s.mu.Lock()
	_, err := s.runLocked(runID)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	dir := filepath.Join(s.dir, runID, sub)
	if err := os.MkdirAll(dir, offlineDirMode); err != nil {
		return err
	}
	return WriteFileAtomic(dir, name, body, false)
}

// runLocked finds a run: in memory, else its run.json (a run this
// directory holds from before a restart keeps its spec and dates), else it
// makes the record of an attached one on first use. The id becomes a path
// segment, so anything that could leave the directory is refused.
func (s *Offline) runLocked(runID string) (*RunRecord, error) {
	if r, ok := s.runs[runID]; ok {
		return r, nil
	}
	if err := safePathSegment(runID); err != nil {
		return nil, err
	}
	if raw, err := os.ReadFile(filepath.Join(s.dir, runID, RunFile)); err == nil {
		var r RunRecord
		if err := json.Unmarshal(raw, &r); err == nil && r.ID == runID {
			s.runs[runID] = &r
			return &r, nil
		}
	}
	if err := os.MkdirAll(filepath.Join(s.dir, runID), offlineDirMode); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	r := &RunRecord{ID: runID, Attached: true, Status: StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := s.writeRunLocked(r); err != nil {
		return nil, err
	}
	s.runs[runID] = r
	return r, nil
}

func (s *Offline) writeRunLocked(r *RunRecord) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(s.dir, r.ID), RunFile, buf.Bytes(), false)
}

// WriteFileAtomic replaces dir/name through a temporary file, so a reader
// (or a process killed mid-write) never sees half a file; the file is
// owner-only. durable also flushes the file and the directory to disk, for
// records whose loss in a machine crash would send something twice.
func WriteFileAtomic(dir, name string, body []byte, durable bool) error {
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(body)
	var serr error
	if durable && werr == nil {
		serr = tmp.Sync()
	}
	if err := errors.Join(werr, serr, tmp.Chmod(offlineFileMode), tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil || !durable {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// safePathSegment refuses run ids that would escape the offline directory.
func safePathSegment(id string) error {
	switch {
	case id == "", id == ".", id == "..":
		return fmt.Errorf("run id %q cannot name an offline directory", id)
	case strings.ContainsAny(id, "/\\\x00"):
		return fmt.Errorf("run id %q cannot name an offline directory: it holds a path separator or NUL", id)
	case len(id) > 200:
		return fmt.Errorf("run id of %d bytes is too long for an offline directory", len(id))
	}
	return nil
}

package platform

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/primeintellect/primeexporter/rft"
)

// Evals is where evaluation runs live: the platform's evaluations API
// online, a folder offline.
type Evals interface {
	// ResolveEnvironments turns the run's environments into ids through
	// the hub; an environment that cannot be resolved fails the whole call.
	ResolveEnvironments(ctx context.Context, refs []rft.EnvironmentRef, teamID string) ([]rft.Environment, error)
	CreateEvaluation(ctx context.Context, req rft.CreateEvaluationRequest, origin Origin) (rft.Evaluation, error)
	// AppendSamples appends one batch of samples, at most the contract's
	// 25 MiB. It is not replayable: after an ambiguous failure the caller
	// must not send the batch again.
	AppendSamples(ctx context.Context, evalID string, samples []json.RawMessage) error
	UpdateEvaluation(ctx context.Context, evalID string, metadata, summary map[string]any) error
	FinalizeEvaluation(ctx context.Context, evalID string, summary map[string]any) error
	SetEvaluationStatus(ctx context.Context, evalID string, status rft.EvaluationStatus, message string) error
}

var (
	_ Evals = (*Online)(nil)
	_ Evals = (*Offline)(nil)
)

func (o *Online) ResolveEnvironments(ctx context.Context, refs []rft.EnvironmentRef, teamID string) (envs []rft.Environment, err error) {
	err = o.guard(ctx, func() (err error) {
		envs, err = o.client().ResolveEnvironments(ctx, refs, teamID)
		return err
	})
	return envs, err
}

func (o *Online) CreateEvaluation(ctx context.Context, req rft.CreateEvaluationRequest, _ Origin) (ev rft.Evaluation, err error) {
	err = o.guard(ctx, func() (err error) {
		ev, err = o.client().CreateEvaluation(ctx, req)
		return err
	})
	return ev, err
}

func (o *Online) AppendSamples(ctx context.Context, evalID string, samples []json.RawMessage) error {
	return o.guard(ctx, func() error { return o.client().AppendSamples(ctx, evalID, samples) })
}

func (o *Online) UpdateEvaluation(ctx context.Context, evalID string, metadata, summary map[string]any) error {
	return o.guard(ctx, func() error { return o.client().UpdateEvaluation(ctx, evalID, metadata, summary) })
}

func (o *Online) FinalizeEvaluation(ctx context.Context, evalID string, summary map[string]any) error {
	return o.guard(ctx, func() error { return o.client().FinalizeEvaluation(ctx, evalID, summary) })
}

func (o *Online) SetEvaluationStatus(ctx context.Context, evalID string, status rft.EvaluationStatus, message string) error {
	return o.guard(ctx, func() error { return o.client().SetEvaluationStatus(ctx, evalID, status, message) })
}

// Offline evaluations: <dir>/<eval id>/evaluation.json (the create body,
// the summary, the status) and samples.jsonl (one sample per line, in the
// order they would have been appended).
const (
	EvaluationFile  = "evaluation.json"
	EvalSamplesFile = "samples.jsonl"
)

// EvaluationRecord is evaluation.json.
type EvaluationRecord struct {
	ID           string                       `json:"id"`
	Kind         string                       `json:"kind"` // "eval"
	Attached     bool                         `json:"attached,omitempty"`
	Identity     string                       `json:"identity,omitempty"`
	TeamID       string                       `json:"team_id,omitempty"`
	Spec         *rft.CreateEvaluationRequest `json:"spec,omitempty"`
	Metadata     map[string]any               `json:"metadata,omitempty"`
	Summary      map[string]any               `json:"summary,omitempty"`
	Status       string                       `json:"status"`
	ErrorMessage string                       `json:"error_message,omitempty"`
	CreatedAt    time.Time                    `json:"created_at"`
	UpdatedAt    time.Time                    `json:"updated_at"`
}

// ResolveEnvironments passes the environments through as given: offline
// there is no hub, and a later upload resolves them.
func (s *Offline) ResolveEnvironments(_ context.Context, refs []rft.EnvironmentRef, _ string) ([]rft.Environment, error) {
	if len(refs) == 0 {
		return nil, errors.New("an evaluation needs at least one environment")
	}
	out := make([]rft.Environment, len(refs))
	for i, r := range refs {
		out[i] = rft.Environment{ID: r.String(), VersionID: r.VersionID}
		if r.ID != "" {
			out[i].ID = r.ID
		}
	}
	return out, nil
}

// CreateEvaluation issues an id of the form offline-eval-<16 hex>.
func (s *Offline) CreateEvaluation(_ context.Context, req rft.CreateEvaluationRequest, origin Origin) (rft.Evaluation, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return rft.Evaluation{}, err
	}
	id := "offline-eval-" + hex.EncodeToString(b[:])
	now := time.Now().UTC()
	rec := &EvaluationRecord{ID: id, Kind: "eval", Identity: origin.Identity, TeamID: origin.TeamID, Spec: &req,
		Status: StatusRunning, CreatedAt: now, UpdatedAt: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(filepath.Join(s.dir, id), offlineDirMode); err != nil {
		return rft.Evaluation{}, err
	}
	if err := s.writeEvalLocked(rec); err != nil {
		return rft.Evaluation{}, err
	}
	return rft.Evaluation{ID: id, Name: req.Name, Status: "RUNNING"}, nil
}

func (s *Offline) AppendSamples(_ context.Context, evalID string, samples []json.RawMessage) error {
	if err := safePathSegment(evalID); err != nil {
		return err
	}
	var buf []byte
	for _, smp := range samples {
		buf = append(append(buf, smp...), '\n')
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := filepath.Join(s.dir, evalID)
	if err := os.MkdirAll(dir, offlineDirMode); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, EvalSamplesFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, offlineFileMode)
	if err != nil {
		return err
	}
	_, werr := f.Write(buf)
	return errors.Join(werr, f.Close())
}

func (s *Offline) UpdateEvaluation(_ context.Context, evalID string, metadata, summary map[string]any) error {
	return s.updateEval(evalID, func(r *EvaluationRecord) {
		if metadata != nil {
			r.Metadata = metadata
		}
		if summary != nil {
			r.Summary = summary
		}
	})
}

func (s *Offline) FinalizeEvaluation(_ context.Context, evalID string, summary map[string]any) error {
	return s.updateEval(evalID, func(r *EvaluationRecord) {
		if r.Status == StatusRunning {
			r.Status, r.Summary = "completed", summary
		}
	})
}

func (s *Offline) SetEvaluationStatus(_ context.Context, evalID string, status rft.EvaluationStatus, message string) error {
	return s.updateEval(evalID, func(r *EvaluationRecord) {
		if r.Status == StatusRunning {
			r.Status, r.ErrorMessage = string(status), message
		}
	})
}

// updateEval changes evaluation.json, making the record of an attached
// evaluation on first use.
func (s *Offline) updateEval(evalID string, change func(*EvaluationRecord)) error {
	if err := safePathSegment(evalID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(s.dir, evalID, EvaluationFile)
	rec := &EvaluationRecord{ID: evalID, Kind: "eval", Attached: true, Status: StatusRunning, CreatedAt: time.Now().UTC()}
	if raw, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(raw, rec); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), offlineDirMode); err != nil {
		return err
	}
	change(rec)
	rec.UpdatedAt = time.Now().UTC()
	return s.writeEvalLocked(rec)
}

func (s *Offline) writeEvalLocked(r *EvaluationRecord) error {
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(s.dir, r.ID), EvaluationFile, append(raw, '\n'), false)
}

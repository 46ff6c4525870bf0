package rft

import (
	"encoding/json"
	"net/url"
	"strings"
)

// This file holds the one Go struct of every body of the evaluations API
// (evals-api.md), spelled exactly as the spec spells it. The samples body is
// the one exception: it is written byte by byte (evalbatch.go), because its
// size is the contract's 25 MiB limit and must be exactly what was counted.

// resolveEnvironmentRequest is the body of POST /environmentshub/resolve.
type resolveEnvironmentRequest struct {
	Name   string `json:"name"`
	TeamID string `json:"team_id,omitempty"`
}

// hubAnswer is the body of a hub answer: route 1 answers {"data": {"id"}},
// route 2 the same or, from older hubs, the environment itself at the top.
// data is kept raw so that a data that is not an object falls back to the
// top-level id instead of failing the whole decode.
type hubAnswer struct {
	Data json.RawMessage `json:"data"`
	ID   string          `json:"id"`
}

// CreateEvaluationRequest is the body of POST /evaluations/. Name,
// Environments, Tags and Dataset are always sent (Tags as [] when nil); the
// rest are left out when empty, never sent as null.
type CreateEvaluationRequest struct {
	Name         string         `json:"name"`         // the default is "<first environment's name>-<8 hex>": DefaultEvaluationName
	Environments []Environment  `json:"environments"` // resolved: {"id", "version_id"?}; at least one
	Tags         []string       `json:"tags"`         // always sent, possibly empty
	ModelName    string         `json:"model_name,omitempty"`
	Dataset      string         `json:"dataset"` // the first environment's name, the part after "/" of a slug: EnvironmentRef.ShortName
	Framework    string         `json:"framework,omitempty"`
	Description  string         `json:"description,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"` // the run config, omitted when empty
	TeamID       string         `json:"team_id,omitempty"`
}

// MarshalJSON sends a nil Tags as [], because tags is always sent and null
// is not a list.
func (r CreateEvaluationRequest) MarshalJSON() ([]byte, error) {
	type plain CreateEvaluationRequest // drops the method, so Marshal does not recurse
	p := plain(r)
	if p.Tags == nil {
		p.Tags = []string{}
	}
	return json.Marshal(p)
}

// createEvaluationResponse is the body of a 201 from POST /evaluations/;
// only evaluation_id is required.
type createEvaluationResponse struct {
	EvaluationID string `json:"evaluation_id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	ViewerURL    string `json:"viewer_url"`
}

// Evaluation is an evaluation the platform registered.
type Evaluation struct {
	ID        string
	Name      string
	Status    string // the platform's vocabulary, e.g. "RUNNING"
	ViewerURL string // "" when the platform gave none
}

// DashboardURL is where a person finds the evaluation: the platform's
// viewer_url, else <frontend>/dashboard/evaluations/<id>.
func (e Evaluation) DashboardURL(frontend string) string {
	if e.ViewerURL != "" {
		return e.ViewerURL
	}
	return strings.TrimRight(frontend, "/") + "/dashboard/evaluations/" + url.PathEscape(e.ID)
}

// TrainingDashboardURL is where a person finds a training run:
// <frontend>/dashboard/training/<run id>.
func TrainingDashboardURL(frontend, runID string) string {
	return strings.TrimRight(frontend, "/") + "/dashboard/training/" + url.PathEscape(runID)
}

// updateEvaluationRequest is route 5's body, PUT /evaluations/{id}: the
// config (which replaces the whole metadata document) and the summary.
// Each is left out when empty; the call is skipped when both are.
type updateEvaluationRequest struct {
	Metadata map[string]any `json:"metadata,omitempty"`
	Metrics  map[string]any `json:"metrics,omitempty"`
}

// finalizeEvaluationRequest is route 6a's body, POST
// /evaluations/{id}/finalize: the summary, {} when empty, never null.
type finalizeEvaluationRequest struct {
	Metrics map[string]any `json:"metrics"`
}

// EvaluationStatus is a terminal status route 6b sends. A crashed run is
// sent as failed; completed is not a status here but route 6a.
type EvaluationStatus string

const (
	EvaluationFailed    EvaluationStatus = "FAILED"
	EvaluationCancelled EvaluationStatus = "CANCELLED"
)

// evaluationStatusRequest is route 6b's body, PUT /evaluations/{id}.
type evaluationStatusRequest struct {
	Status       EvaluationStatus `json:"status"`
	ErrorMessage string           `json:"error_message,omitempty"` // at most 4,096 characters
}

package rft

import (
	"encoding/json"
	"time"
)

// This file holds the one Go struct of every body the platform exchanges,
// spelled exactly as rft-api.md spells it.

// Environment is one environment of a run, passed through as the user gave
// it (hub slug owner/name, plain name, or id): the platform resolves it, the
// client never does.
type Environment struct {
	ID        string `json:"id"`
	VersionID string `json:"version_id,omitempty"`
}

// CreateRunRequest is the body of POST /rft/external-runs. The first four
// keys are required and always sent; the rest are left out when unknown,
// never sent as null.
type CreateRunRequest struct {
	BaseModel          string         `json:"base_model"`
	MaxSteps           int64          `json:"max_steps"`    // 0 when unknown
	Environments       []Environment  `json:"environments"` // nil is sent as []
	TeamID             string         `json:"team_id"`
	Name               string         `json:"name,omitempty"`
	BatchSize          int64          `json:"batch_size,omitempty"`
	RolloutsPerExample int64          `json:"rollouts_per_example,omitempty"`
	SeqLen             int64          `json:"seq_len,omitempty"`
	RunConfig          map[string]any `json:"run_config,omitempty"`
	WandbProject       string         `json:"wandb_project,omitempty"`
	WandbEntity        string         `json:"wandb_entity,omitempty"`
	WandbRunName       string         `json:"wandb_run_name,omitempty"`
}

// MarshalJSON sends a nil Environments as [], because environments is a
// required list and null is not a list.
func (r CreateRunRequest) MarshalJSON() ([]byte, error) {
	type plain CreateRunRequest // drops the method, so Marshal does not recurse
	p := plain(r)
	if p.Environments == nil {
		p.Environments = []Environment{}
	}
	return json.Marshal(p)
}

// createRunResponse is the body of a 201 from POST /rft/external-runs.
type createRunResponse struct {
	Run *struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"run"`
}

// Run is a run the platform registered.
type Run struct {
	ID     string
	Name   string
	Status string // the platform's vocabulary, e.g. "RUNNING"
}

// MetricsRequest is the body of POST /rft/metrics: one row's scalars in one
// flat object, the row's "step" (none for a row of a time alone) and
// "_timestamp" (unix seconds) among them.
type MetricsRequest struct {
	RunID   string             `json:"run_id"`
	Metrics map[string]float64 `json:"metrics"`
}

// presignRequest is the body of POST /rft/samples/presign.
type presignRequest struct {
	RunID string `json:"run_id"`
	Step  int64  `json:"step"`
}

// presignResponse is the body of a presign answer, or its "data" envelope.
// The platform has answered in both spellings; one struct reads both.
type presignResponse struct {
	PresignedURL      string          `json:"presignedUrl"`
	PresignedURLSnake string          `json:"presigned_url"`
	S3Key             string          `json:"s3Key"`
	S3KeySnake        string          `json:"s3_key"`
	ExpiresIn         json.RawMessage `json:"expiresIn"` // seconds; read leniently, it is advisory
	ExpiresInSnake    json.RawMessage `json:"expires_in"`
}

// Presigned is a minted upload slot: PUT the object to URL, then confirm Key.
type Presigned struct {
	URL       string
	Key       string
	ExpiresIn time.Duration // 0 when the platform did not say
}

// String leaves out the URL's query string: it is the signature.
func (p Presigned) String() string {
	return "presigned " + p.Key + " at " + redactURL(p.URL)
}

// confirmRequest is the body of POST /rft/samples/confirm.
type confirmRequest struct {
	RunID string `json:"run_id"`
	Step  int64  `json:"step"`
	S3Key string `json:"s3_key"`
}

// finalizeRequest is the body of POST /rft/finalize. exit_code is sent even
// when 0: a completed run's exit code is 0.
type finalizeRequest struct {
	RunID    string `json:"run_id"`
	ExitCode int    `json:"exit_code"`
}

// Status is a terminal status as the status route spells it. The API knows
// only these two: cancelled and crashed runs are sent as failed, with the
// reason leading the message.
type Status string

const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
)

// statusRequest is the body of PUT /rft/external-runs/{run_id}/status.
type statusRequest struct {
	Status       Status `json:"status"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// tracesMetadata is the metadata part of POST {traces_url}/api/v1/traces.
// The context is provenance only and is left out when empty; the run id
// travels inside the documents, never here.
type tracesMetadata struct {
	SchemaVersion int            `json:"schema_version"`
	Context       map[string]any `json:"context,omitempty"`
}

// tracesReceipt is the body of a 200 or 201 from Prime Traces.
type tracesReceipt struct {
	UploadID string `json:"upload_id"`
	Status   string `json:"status"`
}

// TraceReceipt is a batch Prime Traces committed.
type TraceReceipt struct {
	UploadID string
	Status   string // "committed"
}

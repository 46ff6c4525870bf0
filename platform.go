package primeexporter

import (
	"context"

	"github.com/primeintellect/primeexporter/rft"
)

// platform is everything the exporter asks of the place runs go: the RFT API
// (*rft.Client) or the offline directory. Keeping it this narrow is what
// lets offline mode run the same lifecycle as online.
type platform interface {
	CreateRun(ctx context.Context, req rft.CreateRunRequest) (rft.Run, error)
	PostMetrics(ctx context.Context, runID string, metrics map[string]float64) error
	Finalize(ctx context.Context, runID string, exitCode int) error
	SetStatus(ctx context.Context, runID string, status rft.Status, message string) error
	// The sample table upload: presign → PUT → confirm.
	Presign(ctx context.Context, runID string, step int64) (rft.Presigned, error)
	Put(ctx context.Context, url string, body []byte) error
	Confirm(ctx context.Context, runID string, step int64, key string) error
}

// attacher is implemented by backends that keep local state for attached
// runs; the online platform needs no request to attach.
type attacher interface {
	AttachRun(ctx context.Context, runID string) error
}

// objectWriter is implemented by backends that store a sample object
// directly, named by its step and range, instead of presign → PUT → confirm.
type objectWriter interface {
	WriteObject(ctx context.Context, runID string, step, rangeIdx int64, body []byte) error
}

var _ platform = (*rft.Client)(nil)

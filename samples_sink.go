package primeexporter

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/upload"
)

// samplesSink takes one resource's prime.episode records to the run's
// sample table (telemetry.md §3): each is mapped to its row as the push
// reads it, then a step's rows go up as Parquet objects through presign →
// PUT → confirm. The mapping, the objects and the ledger of what was
// delivered live in internal/upload; this is the push's side of it: which
// records went where, and which go back to the collector.
type samplesSink struct {
	up    *upload.Uploader
	batch *upload.Batch
}

// newSamplesSink is the sink of a push of about records records to the
// run that l leases.
func newSamplesSink(up *upload.Uploader, l runs.Lease, records int) samplesSink {
	return samplesSink{up: up, batch: up.NewBatch(l, l, records)}
}

// accept maps one record into its step's rows; what cannot be a row is
// counted and logged there.
func (s samplesSink) accept(lr plog.LogRecord, loc upload.Loc) {
	s.up.Accept(s.batch, lr, loc)
}

// send uploads the rows and returns the records to hand back. With the
// platform down (the push's earlier posts said so) nothing is attempted:
// every record goes back unsent, as the rest of the push does.
func (s samplesSink) send(ctx context.Context, platformDown bool) (map[upload.Loc]bool, error) {
	defer s.batch.Release()
	if platformDown {
		return s.batch.Locs(), nil
	}
	return s.up.Upload(ctx, s.batch)
}

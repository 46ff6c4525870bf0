package primeexporter

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/upload"
)

// samplesSink takes one resource's prime.episode records to the run's
// sample table (telemetry.md §3): a step's rows go up as Parquet objects
// through presign → PUT → confirm. The mapping, the objects and the ledger
// of what was delivered live in internal/upload, which the push enters
// once (Uploader.Push); this is the push's side of it: which records go
// there, and which go back to the collector.
type samplesSink struct {
	up    *upload.Uploader
	lease runs.Lease
	items []upload.Item
	// records is the push's record count: room for its episodes, taken
	// at the first one.
	records int
}

// newSamplesSink is the sink of a push of about records records to the
// run that l leases.
func newSamplesSink(up *upload.Uploader, l runs.Lease, records int) samplesSink {
	return samplesSink{up: up, lease: l, records: records}
}

// accept keeps one episode record for the push's one call into the
// uploader.
func (s *samplesSink) accept(lr plog.LogRecord, loc upload.Loc) {
	if s.items == nil {
		s.items = make([]upload.Item, 0, s.records)
	}
	s.items = append(s.items, upload.Item{Record: lr, Loc: loc})
}

// send maps and uploads the episodes and returns the records to hand
// back. With the platform down (the push's earlier posts said so) nothing
// is attempted: every record goes back unsent, as the rest of the push
// does.
func (s *samplesSink) send(ctx context.Context, platformDown bool) (map[upload.Loc]bool, error) {
	if len(s.items) == 0 {
		return nil, nil
	}
	return s.up.Push(ctx, s.lease, s.lease, s.items, platformDown)
}

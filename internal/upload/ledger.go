package upload

import (
	"context"
	"math"
)

// Ledger is what the uploader reads and records about a push's run; the
// run lifecycle's lease (runs.Lease) is one, and the tests use a fake.
type Ledger interface {
	// ObjectRun: the platform run the objects and documents go to, its
	// key in the store, its ranges and its counts for its close-out line.
	ObjectRun

	// Delivered reports which fingerprints of step a sink committed
	// before; MarkDelivered records those it committed now. A store keeps
	// them by step (one value per step), so both name the step: an
	// episode's, or NoStep for what has none.
	Delivered(ctx context.Context, step int64, fps []uint64) ([]bool, error)
	MarkDelivered(ctx context.Context, step int64, fps []uint64)
}

// Route is where a run's native episode documents go: Prime Traces under
// the run's Team, or the sample table. DocumentsOnTable says the run's
// documents go to the table; TracesCommitted records a batch Prime Traces
// committed; MoveDocumentsToTable switches the run to the table unless
// Prime Traces already committed some of it. The lease is one.
type Route interface {
	Team() string
	DocumentsOnTable() bool
	TracesCommitted(ctx context.Context)
	MoveDocumentsToTable(ctx context.Context) (onTable, switched bool)
}

// NoStep is the step of delivered items that have none: an evaluation's
// samples and documents. It sorts below every step an SDK sends.
const NoStep = math.MinInt64 + 1

package upload

import (
	"context"
	"math"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// Ledger is what the uploader reads and records about a push's run; the
// run lifecycle's lease (runs.Lease) is one, and the tests use a fake.
type Ledger interface {
	// ID is the platform run the objects and documents go to; Team is the
	// team Prime Traces is sent for. Count adds to the run's counts for its
	// close-out line.
	ID() string
	Team() string
	Count(name string, n int64)

	// Delivered reports which fingerprints of step a sink committed
	// before; MarkDelivered records those it committed now. A store keeps
	// them by step (one value per step), so both name the step: an
	// episode's, or NoStep for what has none.
	Delivered(ctx context.Context, step int64, fps []uint64) ([]bool, error)
	MarkDelivered(ctx context.Context, step int64, fps []uint64)

	// Object returns the object's pending upload, or starts one with a new
	// sample_id range, saved at once; SaveObject records its progress and
	// ObjectDone its confirm (its episodes delivered, nothing pending).
	Object(ctx context.Context, fp uint64, step int64) platform.Object
	SaveObject(ctx context.Context, fp uint64, obj platform.Object)
	ObjectDone(ctx context.Context, fp uint64, step int64, episodes []uint64, bytes int)

	// DocumentsOnTable says the run's documents go to the sample table,
	// not Prime Traces; TracesCommitted records a batch Prime Traces
	// committed; MoveDocumentsToTable switches the run to the table unless
	// Prime Traces already committed some of it.
	DocumentsOnTable() bool
	TracesCommitted(ctx context.Context)
	MoveDocumentsToTable(ctx context.Context) (onTable, switched bool)
}

// NoStep is the step of delivered items that have none: an evaluation's
// samples and documents. It sorts below every step an SDK sends.
const NoStep = math.MinInt64 + 1

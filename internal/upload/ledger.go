package upload

import (
	"context"
	"math"
)

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

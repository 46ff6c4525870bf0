package platform

import (
	"context"

	"github.com/primeintellect/primeexporter/rft"
)

// Complete closes a completed run: finalize, and when the platform refuses
// finalize for good, the status route with completed (rft-api.md
// "Finalize"). refused is told of that refusal before the fallback is
// sent. A refused key is not a refusal of finalize: nothing else is tried.
func Complete(ctx context.Context, api Runs, runID string, exitCode int, refused func(error)) error {
	err := api.Finalize(ctx, runID, exitCode)
	if !Permanent(err) || KeyRefused(err) {
		return err
	}
	refused(err)
	return api.SetStatus(ctx, runID, rft.StatusCompleted, "")
}

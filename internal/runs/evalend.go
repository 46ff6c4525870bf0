package runs

import (
	"context"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/rft"
)

// sendEvalEnd finishes an evaluation as the platform's SDK does: the
// config and the summary (route 5), then finalize with the summary (6a)
// for a completed run, or the failed/cancelled status (6b) otherwise. An
// attached evaluation belongs to its launcher: its config is not sent and
// a failure is not reported, but a clean finish is still finalized.
//
// Finalize is not replayable: after an ambiguous failure it is not sent
// again (the close-out would otherwise retry it), and the warning says the
// evaluation may still show as running.
func (c *closer) sendEvalEnd(ctx context.Context, r *run, id string, end End) error {
	ev := r.evalState()
	summary := ev.summary()
	var metadata map[string]any
	if !r.ident.attach {
		metadata = ev.metadataCopy()
	}
	if err := c.evals.UpdateEvaluation(ctx, id, metadata, summary); err != nil {
		return err
	}
	if end.Status == StatusCompleted {
		err := c.evals.FinalizeEvaluation(ctx, id, summary)
		if rerr, ok := rft.AsError(err); ok && rerr.Ambiguous() {
			c.log.Warn("Finalizing the evaluation failed after the request may have reached the platform; it is not sent again, since finalize is not replayable: check that the evaluation shows as completed",
				zap.Stringer("run", r.ident), zap.String("evaluation_id", id), zap.Error(err))
			return nil
		}
		return err
	}
	if r.ident.attach {
		c.log.Info("Attached evaluation ended without completing; its launcher reports the failure, so the exporter does not",
			zap.String("evaluation_id", id), zap.String("status", end.Status), zap.String("reason", end.Reason))
		return nil
	}
	status := rft.EvaluationFailed
	if end.Status == StatusCancelled {
		status = rft.EvaluationCancelled
	}
	return c.evals.SetEvaluationStatus(ctx, id, status, end.statusMessage())
}

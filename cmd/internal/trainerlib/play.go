package trainerlib

import (
	"context"
	"time"
)

// Play is what a command plays its run through: the events it emits, the
// flush after each step or batch, and the pause between them.
type Play struct {
	Events Events
	// Flush exports everything recorded so far and reports any failure.
	Flush func(context.Context) error
	// Sleep waits between steps or batches and returns early with ctx's
	// error: the package's Sleep, or a test's interrupt.
	Sleep func(context.Context, time.Duration) error
}

// FlushAfter flushes; a failure is an ExportError naming during.
func (p Play) FlushAfter(ctx context.Context, during string) error {
	if err := p.Flush(ctx); err != nil {
		return &ExportError{During: during, Err: err}
	}
	return nil
}

// End closes the run out: prime.run.end with status and reason, unless the
// status is none, then a flush. An interrupted run ends as cancelled with the
// interrupt as its reason, rather than being left for the exporter to time
// out. ctx must outlive the interrupt (context.WithoutCancel). It returns the
// status sent.
func (p Play) End(ctx context.Context, status, reason string, interrupted error, during string) (string, error) {
	if interrupted != nil && status != StatusNone {
		status, reason = StatusCancelled, interrupted.Error()
	}
	if status != StatusNone {
		p.Events.RunEnd(ctx, status, reason)
	}
	return status, p.FlushAfter(ctx, during)
}

// Sleep waits for d or until ctx is done, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Finish shuts the telemetry down, even after an interrupt, so that what was
// recorded still goes out, and returns the failure to report (FirstFailure)
// of the run, the shutdown and what sink collected.
func Finish(ctx context.Context, exportTimeout time.Duration, shutdown func(context.Context) error, runErr error, sink *ErrorSink) error {
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*exportTimeout)
	defer cancel()
	shutdownErr := shutdown(shutdownCtx)
	return FirstFailure(runErr, shutdownErr, sink.Err())
}

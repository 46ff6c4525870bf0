package runs

import (
	"context"
	"errors"
	"maps"
	"slices"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

// StepBatch is one run's metric values by step: all points of one run and
// step become one post.
type StepBatch map[int64]map[string]float64

// Add puts entries into their steps; a later value of a key wins.
func (b StepBatch) Add(entries []stepmetrics.Entry) {
	for _, e := range entries {
		m, ok := b[e.Step]
		if !ok {
			m = map[string]float64{}
			b[e.Step] = m
		}
		m[e.Key] = e.Value
	}
}

// PostSteps posts the batch step by step, in step order, leaving out
// values already sent. It returns the steps that failed in a way worth
// retrying and the error to retry with; a step the platform refused for
// good is counted and logged, not returned. Once the platform is down
// (platform.Down), the later steps are handed back unsent: posting them
// would put the run's steps out of order, and each would only fail after
// its own round of in-place attempts.
func (l Lease) PostSteps(ctx context.Context, signal string, b StepBatch) (map[int64]bool, error) {
	g, r := l.g, l.r
	var failed map[int64]bool
	var errs []error
	down := false
	for _, step := range slices.Sorted(maps.Keys(b)) {
		if down {
			failed[step] = true
			continue
		}
		values := r.sent.unsent(step, b[step])
		delete(values, "step")
		if len(values) == 0 {
			g.Tel.Skip(signal, reject.AlreadySent, len(b[step]))
			continue
		}
		values["step"] = float64(step)
		err := g.API.PostMetrics(ctx, l.id, values)
		if err == nil {
			r.sent.markSent(step, values)
			g.Tel.Post("sent")
			continue
		}
		if platform.Permanent(err) {
			g.Tel.Post("rejected")
			g.Tel.Reject(signal, reject.PlatformRejected, len(values)-1) // "step" is not a value of its own
			g.Warn.Warn("post\x00"+l.id+"\x00"+platform.Class(err), "The platform refused a step's metrics: they are dropped",
				zap.String("run_id", l.id), zap.Int64("step", step), zap.Error(err))
			continue
		}
		g.Tel.Post("failed")
		if failed == nil {
			failed = map[int64]bool{}
		}
		failed[step] = true
		errs = append(errs, err)
		down = platform.Down(err)
	}
	if len(errs) == 0 {
		return nil, nil
	}
	// One error stands for the lot; the throttle hint of any of them is kept.
	for _, err := range errs {
		if platform.RetryAfter(err) > 0 {
			return failed, platform.Retryable(err)
		}
	}
	return failed, platform.Retryable(errors.Join(errs...))
}

package primeexporter

import (
	"context"
	"errors"
	"maps"
	"slices"

	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/stepmetrics"
	"github.com/primeintellect/primeexporter/rft"
)

// stepBatch is one run's metric values by step: all points of one run and
// step become one post.
type stepBatch map[int64]map[string]float64

func (b stepBatch) add(entries []stepmetrics.Entry) {
	for _, e := range entries {
		m, ok := b[e.Step]
		if !ok {
			m = map[string]float64{}
			b[e.Step] = m
		}
		m[e.Key] = e.Value
	}
}

// sendSteps posts the batch step by step, in step order, leaving out values
// already sent. It returns the steps that failed in a way worth retrying and
// the error to retry with; a step the platform refused for good is counted
// and logged, not returned. Once the platform is down (platformDown), the
// later steps are handed back unsent: posting them would put the run's
// steps out of order, and each would only fail after its own round of
// in-place attempts.
func (g *registry) sendSteps(ctx context.Context, l lease, signal string, b stepBatch) (map[int64]bool, error) {
	var failed map[int64]bool
	var errs []error
	down := false
	for _, step := range slices.Sorted(maps.Keys(b)) {
		if down {
			failed[step] = true
			continue
		}
		values := l.r.sent.unsent(step, b[step])
		delete(values, "step")
		if len(values) == 0 {
			g.tel.skip(signal, "already_sent", len(b[step]))
			continue
		}
		values["step"] = float64(step)
		err := g.p.PostMetrics(ctx, l.id, values)
		if err == nil {
			l.r.sent.markSent(step, values)
			g.tel.post("sent")
			continue
		}
		if isPermanent(err) {
			g.tel.post("rejected")
			g.tel.reject(signal, "platform_rejected", len(values)-1) // "step" is not a value of its own
			g.warn.Warn("post\x00"+l.id+"\x00"+errorClass(err), "The platform refused a step's metrics: they are dropped",
				zap.String("run_id", l.id), zap.Int64("step", step), zap.Error(err))
			continue
		}
		g.tel.post("failed")
		if failed == nil {
			failed = map[int64]bool{}
		}
		failed[step] = true
		errs = append(errs, err)
		down = platformDown(err)
	}
	if len(errs) == 0 {
		return nil, nil
	}
	// One error stands for the lot; the throttle hint of any of them is kept.
	for _, err := range errs {
		if rerr, ok := rft.AsError(err); ok && rerr.RetryAfter > 0 {
			return failed, retryable(err)
		}
	}
	return failed, retryable(errors.Join(errs...))
}

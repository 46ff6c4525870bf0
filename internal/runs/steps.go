package runs

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

// The keys a metrics post carries besides its values, as the platform's
// own SDK (prime_runs, Run.log_metrics) posts them: the step of a step's
// row, and on every row its time in unix seconds. A time row has no step
// key: its _timestamp is what keys it. A value of either name is replaced
// (telemetry.md §2).
const (
	stepKey      = "step"
	timestampKey = "_timestamp"
)

// StepBatch is one run's metric rows: all entries of one run and row (a
// step, or, for entries that had no step, a time) become one post.
type StepBatch map[stepmetrics.Row]batchRow

// batchRow is one row's values by key, and the time of the point or event
// that gave each (the later entry of a key wins, its time with it).
type batchRow struct {
	values map[string]float64
	times  map[string]pcommon.Timestamp
}

// Add puts entries into their rows; a later value of a key wins.
func (b StepBatch) Add(entries []stepmetrics.Entry) {
	for _, e := range entries {
		row := e.Row()
		br, ok := b[row]
		if !ok {
			br = batchRow{values: map[string]float64{}, times: map[string]pcommon.Timestamp{}}
			b[row] = br
		}
		br.values[e.Key] = e.Value
		br.times[e.Key] = e.Time
	}
}

// rows are the batch's rows in posting order: the steps in step order,
// then the time rows in time order.
func (b StepBatch) rows() []stepmetrics.Row {
	return slices.SortedFunc(maps.Keys(b), func(x, y stepmetrics.Row) int {
		if x.TimeKeyed() != y.TimeKeyed() {
			if x.TimeKeyed() {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(x.Step, y.Step), cmp.Compare(x.Time, y.Time))
	})
}

// newest is the latest nonzero time among the entries that gave keys of
// values, 0 if none has one.
func (br batchRow) newest(values map[string]float64) pcommon.Timestamp {
	var t pcommon.Timestamp
	for k := range values {
		t = max(t, br.times[k])
	}
	return t
}

// PostSteps posts the batch row by row: the steps in step order, leaving
// out values already sent, then the time rows in time order. It returns
// the rows that failed in a way worth retrying and the error to retry
// with; a row the platform refused for good is counted and logged, not
// returned. Once the platform is down (platform.Down), the later rows are
// handed back unsent: posting them would put the run's steps out of order,
// and each would only fail after its own round of in-place attempts.
//
// A time row is not remembered as sent: each time is its own row, and a
// post sent again carries the same _timestamp, which the platform keeps
// as one row (the post is replayable).
func (l Lease) PostSteps(ctx context.Context, signal string, b StepBatch) (map[stepmetrics.Row]bool, error) {
	var failed map[stepmetrics.Row]bool
	var errs []error
	down := false
	for _, row := range b.rows() {
		if down {
			failed[row] = true
			continue
		}
		err := l.postRow(ctx, signal, row, b[row])
		if err == nil {
			continue
		}
		if failed == nil {
			failed = map[stepmetrics.Row]bool{}
		}
		failed[row] = true
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

// postRow posts one row, stamped with its time. It returns only a failure
// worth retrying: a step with nothing new is skipped, and a post the
// platform refused for good is counted and logged.
func (l Lease) postRow(ctx context.Context, signal string, row stepmetrics.Row, br batchRow) error {
	g, r := l.g, l.r
	var values map[string]float64
	if row.TimeKeyed() {
		values = maps.Clone(br.values)
	} else {
		values = r.sent.unsent(row.Step, br.values)
	}
	delete(values, stepKey)
	delete(values, timestampKey)
	n := len(values)
	if n == 0 {
		g.Tel.Skip(signal, reject.AlreadySent, len(br.values))
		return nil
	}
	at := row.Time
	if !row.TimeKeyed() {
		at = br.newest(values)
		values[stepKey] = float64(row.Step)
	}
	body := values
	if at != 0 {
		body = maps.Clone(values)
		body[timestampKey] = unixSeconds(at)
	}
	err := g.API.PostMetrics(ctx, l.id, body)
	switch {
	case err == nil && row.TimeKeyed():
		r.sent.count(n)
		g.Tel.Post("sent")
		return nil
	case err == nil:
		r.sent.markSent(row.Step, values)
		g.Tel.Post("sent")
		return nil
	case platform.Permanent(err):
		g.Tel.Post("rejected")
		g.Tel.Reject(signal, platform.RejectReason(err, reject.PlatformRejected), n)
		msg, key := "The platform refused a step's metrics: they are dropped", zap.Int64("step", row.Step)
		if row.TimeKeyed() {
			msg, key = "The platform refused a time row's metrics: they are dropped", zap.Time("time", row.Time.AsTime())
		}
		g.Warn.Warn("post\x00"+l.id+"\x00"+platform.Class(err), msg, zap.String("run_id", l.id), key, zap.Error(err))
		return nil
	}
	g.Tel.Post("failed")
	return err
}

// unixSeconds is t as the platform's SDK writes a time: unix seconds as a
// float (Python's time.time()).
func unixSeconds(t pcommon.Timestamp) float64 {
	return float64(t) / 1e9
}

package primeexporter

import (
	"context"
	"errors"
	"iter"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/runs"
)

// resourceData is a pdata ResourceMetrics or ResourceLogs.
type resourceData[R any] interface {
	Resource() pcommon.Resource
	CopyTo(dest R)
}

// resourceSlice is a pdata ResourceMetricsSlice or ResourceLogsSlice.
type resourceSlice[R any] interface {
	Len() int
	At(i int) R
	All() iter.Seq2[int, R]
	AppendEmpty() R
}

// pushEach pushes a batch's resources in order and returns their errors;
// what failed is in retry, as push left it. Once a failure says the
// platform is down, the remaining resources go into retry unsent: they
// would only fail too, and sending them would put a run's steps out of
// order. Whatever a resource left in retry is marked as its run's data in
// the collector's retry, so that the run's close-out waits for it; the
// resource itself is settled only once the push is done with it.
func pushEach[R resourceData[R], S resourceSlice[R]](reg *runs.Registry, in, retry S, push func(R) error) []error {
	var errs []error
	var down error
	for _, rd := range in.All() {
		before := retry.Len()
		err := down
		if down != nil {
			rd.CopyTo(retry.AppendEmpty())
		} else {
			err = push(rd)
		}
		if err != nil {
			errs = append(errs, err)
			if platform.Down(err) {
				down = err
			}
		}
		var appended []pcommon.Resource
		for i := before; i < retry.Len(); i++ {
			appended = append(appended, retry.At(i).Resource())
		}
		reg.MarkHandedBack(rd.Resource(), appended)
		reg.Settle(rd.Resource())
	}
	return errs
}

// acquire holds rd's run for a push. ok is false when there is nothing to
// send: the data was skipped (counted and logged), or it went into retry
// whole, with err.
func acquire[R resourceData[R], S resourceSlice[R]](ctx context.Context, reg *runs.Registry, rd R, retry S, signal string, records int) (l runs.Lease, ok bool, err error) {
	l, err = reg.Acquire(ctx, rd.Resource(), signal, records)
	switch {
	case errors.Is(err, runs.ErrSkipped):
		return l, false, nil
	case err != nil:
		rd.CopyTo(retry.AppendEmpty())
		return l, false, err
	}
	return l, true, nil
}

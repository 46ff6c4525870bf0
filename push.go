package primeexporter

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"

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
type resourceSlice[R any, S any] interface {
	Len() int
	At(i int) R
	All() iter.Seq2[int, R]
	AppendEmpty() R
	MoveAndAppendTo(dest S)
}

// maxRunsAtOnce bounds how many runs of one batch are sent at once. A
// push spends most of its time waiting on the platform (a step post, an
// object's presign, PUT and confirm), so one consumer sending a batch's
// runs one after another left the CPU idle while the collector's queue
// filled, holding the whole burst as pdata; sending runs side by side
// keeps the queue drained. CPU and memory stay bounded by the uploader's
// encode slots and by the batch itself.
const maxRunsAtOnce = 8

// maxIdleConnsPerHost keeps a connection per request in flight to one host
// (the API, the object store) for the default four queue consumers, each
// sending maxRunsAtOnce runs: the default of two made the rest dial anew.
const maxIdleConnsPerHost = 4 * maxRunsAtOnce

// pushEach pushes a batch's resources and returns their errors; what
// failed is in retry, in the batch's order, as push left it. One run's
// resources are pushed in order, different runs at once (maxRunsAtOnce).
// Once a failure says the platform is down, the resources not yet started
// go into retry unsent: they would only fail too, and sending them would
// put a run's steps out of order. Whatever a resource left in retry is
// marked as its run's data in the collector's retry, so that the run's
// close-out waits for it; the resource itself is settled only once the
// push is done with it.
//
// push gets a retry of its own for each resource (newRetry; slice reads
// its resources), so pushes at once never share pdata.
func pushEach[R resourceData[R], S resourceSlice[R, S], P any](reg *runs.Registry, in, retry S, newRetry func() P, slice func(P) S, push func(R, P) error) []error {
	n := in.Len()
	errs := make([]error, n)
	retries := make([]P, n)
	var down atomic.Pointer[error]
	one := func(i int) {
		rd := in.At(i)
		p := newRetry()
		retries[i] = p
		var err error
		if d := down.Load(); d != nil {
			err = *d
			rd.CopyTo(slice(p).AppendEmpty())
		} else if err = push(rd, p); err != nil && platform.Down(err) {
			down.CompareAndSwap(nil, &err)
		}
		errs[i] = err
		out := slice(p)
		appended := make([]pcommon.Resource, 0, out.Len())
		for j := range out.Len() {
			appended = append(appended, out.At(j).Resource())
		}
		reg.MarkHandedBack(rd.Resource(), appended)
		reg.Settle(rd.Resource())
	}

	groups := map[string][]int{}
	var order []string
	for i, rd := range in.All() {
		key := reg.RunKey(rd.Resource())
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], i)
	}
	if len(order) == 1 {
		for _, i := range groups[order[0]] {
			one(i)
		}
	} else {
		var wg sync.WaitGroup
		slots := make(chan struct{}, maxRunsAtOnce)
		for _, key := range order {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				for _, i := range groups[key] {
					one(i)
				}
			})
		}
		wg.Wait()
	}

	var out []error
	for i := range n {
		slice(retries[i]).MoveAndAppendTo(retry)
		if errs[i] != nil {
			out = append(out, errs[i])
		}
	}
	return out
}

// acquire holds rd's run for a push. ok is false when there is nothing to
// send: the data was skipped (counted and logged), or it went into retry
// whole, with err.
func acquire[R resourceData[R], S resourceSlice[R, S]](ctx context.Context, reg *runs.Registry, rd R, retry S, signal string, records int) (l runs.Lease, ok bool, err error) {
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

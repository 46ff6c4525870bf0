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
// With same (nil: never), neighbouring resources that same tells alike go
// to one push call together, in order: exporterhelper's batcher appends the trainer's
// requests side by side without merging their resources, and one call
// sends a step's episodes as one object where one call per request sent
// one object, with its presign → PUT → confirm, per request. Once a
// failure says the platform is down, the resources not yet started go
// into retry unsent: they would only fail too, and sending them would put
// a run's steps out of order. Whatever a push left in retry is marked as
// its run's data in the collector's retry, so that the run's close-out
// waits for it; the resources themselves are settled only once the push
// is done with them.
//
// push gets a retry of its own for each call (newRetry; slice reads its
// resources), so pushes at once never share pdata.
func pushEach[R resourceData[R], S resourceSlice[R, S], P any](reg *runs.Registry, in, retry S, newRetry func() P, slice func(P) S, same func(a, b R) bool, push func([]R, P) error) []error {
	n := in.Len()
	errs := make([]error, n)
	retries := make([]*P, n) // at each call's first resource
	var down atomic.Pointer[error]
	one := func(unit []int) {
		rds := make([]R, len(unit))
		for k, i := range unit {
			rds[k] = in.At(i)
		}
		p := newRetry()
		retries[unit[0]] = &p
		var err error
		if d := down.Load(); d != nil {
			err = *d
			for _, rd := range rds {
				rd.CopyTo(slice(p).AppendEmpty())
			}
		} else if err = push(rds, p); err != nil && platform.Down(err) {
			down.CompareAndSwap(nil, &err)
		}
		errs[unit[0]] = err
		out := slice(p)
		appended := make([]pcommon.Resource, 0, out.Len())
		for j := range out.Len() {
			appended = append(appended, out.At(j).Resource())
		}
		reg.MarkHandedBack(rds[0].Resource(), appended)
		for _, rd := range rds {
			reg.Settle(rd.Resource())
		}
	}

	groups := map[string][][]int{} // per run, its calls
	var order []string
	for i, rd := range in.All() {
		key := reg.RunKey(rd.Resource())
		units, ok := groups[key]
		if !ok {
			order = append(order, key)
		}
		// Only neighbours: a call's retry goes where its first resource
		// was, so the retry keeps the batch's order.
		if last := len(units) - 1; last >= 0 && same != nil && units[last][len(units[last])-1] == i-1 && same(in.At(units[last][0]), rd) {
			units[last] = append(units[last], i)
		} else {
			units = append(units, []int{i})
		}
		groups[key] = units
	}
	if len(order) == 1 {
		for _, unit := range groups[order[0]] {
			one(unit)
		}
	} else {
		var wg sync.WaitGroup
		slots := make(chan struct{}, maxRunsAtOnce)
		for _, key := range order {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				for _, unit := range groups[key] {
					one(unit)
				}
			})
		}
		wg.Wait()
	}

	var out []error
	for i := range n {
		if retries[i] != nil {
			slice(*retries[i]).MoveAndAppendTo(retry)
		}
		if errs[i] != nil {
			out = append(out, errs[i])
		}
	}
	return out
}

// sameResource tells resources alike in everything their data is
// attributed by: one trainer's requests carry the same resource. The
// hand-back token does not count, so that what a push hands back is
// pushed together again, as it was the first time: a step's failed
// episodes make the same object, whose pending upload the retry resumes.
func sameResource(a, b pcommon.Resource) bool {
	if a.DroppedAttributesCount() != b.DroppedAttributesCount() {
		return false
	}
	am, bm := a.Attributes(), b.Attributes()
	n, same := 0, true
	am.Range(func(k string, v pcommon.Value) bool {
		if k == runs.AttrHandBack {
			return true
		}
		n++
		w, ok := bm.Get(k)
		same = ok && v.Equal(w)
		return same
	})
	if _, ok := bm.Get(runs.AttrHandBack); ok {
		n++
	}
	return same && n == bm.Len()
}

// acquire holds the run of rds (resources of one run) for a push. ok is
// false when there is nothing to send: the data was skipped (counted and
// logged), or it went into retry whole, with err.
func acquire[R resourceData[R], S resourceSlice[R, S]](ctx context.Context, reg *runs.Registry, rds []R, retry S, signal string, records int) (l runs.Lease, ok bool, err error) {
	l, err = reg.Acquire(ctx, rds[0].Resource(), signal, records)
	switch {
	case errors.Is(err, runs.ErrSkipped):
		return l, false, nil
	case err != nil:
		for _, rd := range rds {
			rd.CopyTo(retry.AppendEmpty())
		}
		return l, false, err
	}
	return l, true, nil
}

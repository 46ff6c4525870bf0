package upload

import (
	"context"

	"go.opentelemetry.io/collector/pdata/plog"
)

// Item is one prime.episode record of a push, and where it sits.
type Item struct {
	Record plog.LogRecord
	Loc    Loc
}

// Push takes a push's episode records of one run to its sinks in one
// call: each is mapped (Accept), then the batch is uploaded (Upload) and
// released. With the platform down (down: the push's earlier posts said
// so) nothing is sent, and every record that has somewhere to go comes
// back, as the rest of the push does; what has nowhere to go (a rejected
// record, an off-cadence step) was counted as it was mapped, either way.
// l and route are the run's lease, in its two roles.
func (u *Uploader) Push(ctx context.Context, l ObjectRun, route Route, items []Item, down bool) (map[Loc]bool, error) {
	b := u.NewBatch(l, route, len(items))
	defer b.Release()
	for _, it := range items {
		u.Accept(b, it.Record, it.Loc)
	}
	if down {
		return b.Locs(), nil
	}
	return u.Upload(ctx, b)
}

package runs

import (
	"context"
	"time"

	"github.com/primeintellect/primeexporter/internal/runstore"
)

// solo is the fleet of one collector: nobody else holds, creates or closes
// out its runs, so there is nothing to claim or wait for, and a created
// run's ranges come from its own counter (sampleRanges). Its whole record,
// pending uploads with it, is saved on every change.
type solo struct{ records }

func (*solo) start()                           {}
func (s *solo) stop(ctx context.Context) error { return s.store.Close(ctx) }

func (*solo) record(context.Context, string) (runstore.SavedRun, bool) {
	return runstore.SavedRun{}, false
}

func (*solo) hold(context.Context, *run) (string, error) { return "", nil }
func (*solo) unhold(*run, string)                        {}
func (*solo) holdRetry(string, int64)                    {}
func (*solo) releaseRetry(string, int64)                 {}

func (s *solo) create(ctx context.Context, r *run, send func(context.Context) (string, error)) (string, bool, error) {
	id, err := send(ctx)
	if err != nil {
		return "", false, err
	}
	// Saved at once: the window in which a crash costs a second run is
	// the time between the platform's answer and this write.
	s.save(ctx, r)
	return id, true, nil
}

func (*solo) claimCloseOut(*run) claim          { return closeNow }
func (*solo) shareEnd(context.Context, *run)    {} // the close-out saves the run closed
func (*solo) quiet(*run) bool                   { return true }
func (*solo) poll() time.Duration               { return retriesPoll }
func (*solo) awaitLeases(context.Context, *run) {}
func (*solo) seenElsewhere(*run) bool           { return false }

func (*solo) nextRange(_ context.Context, r *run, step int64) int64 { return r.ranges.take(step) }

package platform

import (
	"context"
	"time"

	"github.com/primeintellect/primeexporter/rft"
)

// Runs is what the run lifecycle asks of the place runs live.
type Runs interface {
	CreateRun(ctx context.Context, req rft.CreateRunRequest, origin Origin) (rft.Run, error)
	// AttachRun readies a run created elsewhere (prime.run.id): online it
	// checks that the key reaches the run; the offline directory makes the
	// run's folder.
	AttachRun(ctx context.Context, runID string, origin Origin) error
	PostMetrics(ctx context.Context, runID string, metrics map[string]float64) error
	Finalize(ctx context.Context, runID string, exitCode int) error
	SetStatus(ctx context.Context, runID string, status rft.Status, message string) error
}

// Origin is where a run came from: the identity the exporter resolved it
// by (e.g. prime.run.key="exp-1") and its team. The platform needs neither
// beyond the create body; an offline run records both, so that prime-sync
// can create the run later and say which run it was.
type Origin struct {
	Identity string
	TeamID   string
}

// Objects is where a step's sample object goes: online in two stages, the
// upload (a presign when needed, then the PUT) and the confirm; offline,
// one file. Advance takes obj one stage on and returns how far it got,
// done once the object is in the table, and on an error too, so that a
// failed PUT is tried again at the URL its presign minted. It keeps no
// state and calls nothing back: the caller owns the object's life. The
// caller saves the object after the upload, before the confirm: from then
// on its key must never be forgotten (a new key could land the rows
// twice), while losing a presign only orphans a URL.
type Objects interface {
	Advance(ctx context.Context, runID string, obj Object, body []byte) (next Object, done bool, err error)
}

// Object is one sample object on its way into a step's table: its step
// and sample_id range, and how far an earlier attempt got.
type Object struct {
	Step  int64
	Range int64
	// URL and Key come from the presign; ExpiresIn is the URL's lifetime
	// from PresignedAt (0: unknown).
	URL         string
	Key         string
	PresignedAt time.Time
	ExpiresIn   time.Duration
	// Put says the PUT succeeded: only the confirm is left.
	Put bool
}

// expired leaves a minute's margin for the PUT itself.
func (o Object) expired(now time.Time) bool {
	return o.ExpiresIn > 0 && now.After(o.PresignedAt.Add(o.ExpiresIn-time.Minute))
}

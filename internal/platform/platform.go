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

// Objects is where a step's sample object goes: presign → PUT → confirm
// online, one file offline.
type Objects interface {
	// Store puts body into the run's sample table as obj. save is called
	// with obj's progress (a minted URL, a finished PUT) as soon as it is
	// made, so that a retry, or a restart with storage, resumes the upload
	// instead of repeating it.
	Store(ctx context.Context, runID string, obj Object, body []byte, save func(Object)) error
}

// Pending is one sample object's upload as the run that owns it holds
// it: its sample_id range, taken (and saved) before the object is encoded,
// and Send, which stores the encoded body through Objects, records each
// step of progress so that a retry or a restart resumes it, and on the
// confirm marks episodes delivered and forgets the upload. The uploader
// makes the object and hands it over; the run keeps the state.
type Pending interface {
	Range() int64
	Send(ctx context.Context, body []byte, episodes []uint64) error
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

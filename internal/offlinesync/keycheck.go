package offlinesync

import (
	"context"
	"sync"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
)

// keyCheck is the platform, noting the first call it answers with
// success: from then on the key is known good, and Sync lets its runs go
// at once. Before that they go one at a time, so that a refused key costs
// one refused call, as it does with one run. AttachRun's check (a presign)
// proves the key as any other call does.
type keyCheck struct {
	Platform
	once     sync.Once
	accepted chan struct{} // closed once a call succeeded
}

// newKeyCheck wraps p; with no platform (a dry run) there is no key to
// check, and accepted is closed from the start.
func newKeyCheck(p Platform) *keyCheck {
	k := &keyCheck{Platform: p, accepted: make(chan struct{})}
	if p == nil {
		k.note(nil)
	}
	return k
}

func (k *keyCheck) note(err error) error {
	if err == nil {
		k.once.Do(func() { close(k.accepted) })
	}
	return err
}

func (k *keyCheck) CreateRun(ctx context.Context, req rft.CreateRunRequest, origin platform.Origin) (rft.Run, error) {
	run, err := k.Platform.CreateRun(ctx, req, origin)
	return run, k.note(err)
}

func (k *keyCheck) AttachRun(ctx context.Context, runID string, origin platform.Origin) error {
	return k.note(k.Platform.AttachRun(ctx, runID, origin))
}

func (k *keyCheck) PostMetrics(ctx context.Context, runID string, metrics map[string]float64) error {
	return k.note(k.Platform.PostMetrics(ctx, runID, metrics))
}

func (k *keyCheck) Finalize(ctx context.Context, runID string, exitCode int) error {
	return k.note(k.Platform.Finalize(ctx, runID, exitCode))
}

func (k *keyCheck) SetStatus(ctx context.Context, runID string, status rft.Status, message string) error {
	return k.note(k.Platform.SetStatus(ctx, runID, status, message))
}

// Advance returns next even with an error: a PUT that failed after its
// presign carries the new URL, which the retry PUTs to. That presign
// proved the key.
func (k *keyCheck) Advance(ctx context.Context, runID string, obj platform.Object, body []byte) (platform.Object, bool, error) {
	next, done, err := k.Platform.Advance(ctx, runID, obj, body)
	if next.Key != "" && next.Key != obj.Key {
		k.note(nil)
	}
	return next, done, k.note(err)
}

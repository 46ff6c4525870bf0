package runs

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Ambient data (the host's, the GPUs', an inference server's metrics)
// joins a run its trainer opened and never opens, attaches, refuses or
// keeps alive one: it does not count as the run's activity for
// idle_timeout, and its pushes do not hold a close-out's quiet wait.

var (
	// ErrNotOpen: the ambient data's run is not open in this collector
	// (yet): no trainer data opened it, or its create is still going on or
	// was refused.
	ErrNotOpen = errors.New("run not open")
	// ErrEnded: the ambient data's run is closing or closed.
	ErrEnded = errors.New("run ended")
)

// AmbientKey is the run key an ambient resource names by its identity, ""
// when it names none. service.instance.id is never one: the prometheus
// receiver sets it to the scrape target's address.
func (g *Registry) AmbientKey(res pcommon.Resource) string {
	ident, err := identityOf(res, g.cfg.Defaults)
	if err != nil || ident.source == AttrServiceInstance {
		return ""
	}
	return ident.key()
}

// Join holds the open run of runKey for an ambient push, until Release.
func (g *Registry) Join(ctx context.Context, runKey string) (Lease, error) {
	if g.Refused != nil && g.Refused() != nil {
		return Lease{}, ErrNotOpen
	}
	g.mu.Lock()
	r, ok := g.runs[runKey]
	g.mu.Unlock()
	if !ok {
		return Lease{}, ErrNotOpen
	}
	r.mu.Lock()
	switch {
	case r.state >= stateClosing:
		r.mu.Unlock()
		return Lease{}, ErrEnded
	case r.id == "" || r.ident.eval:
		r.mu.Unlock()
		return Lease{}, ErrNotOpen
	}
	id := r.id
	r.inflight++
	r.mu.Unlock()
	hold, err := g.fleet.holds.hold(ctx, r)
	if err != nil {
		r.releaseAmbient()
		if errors.Is(err, errRunClosed) {
			return Lease{}, ErrEnded
		}
		return Lease{}, err
	}
	return Lease{g: g, r: r, id: id, hold: hold, ambient: true}, nil
}

// releaseAmbient ends an ambient push's hold; unlike release, it leaves the
// run's activity times alone.
func (r *run) releaseAmbient() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight--
	if r.inflight == 0 && r.drained != nil {
		close(r.drained)
		r.drained = nil
	}
}

// AdmitAmbient tells whether the run takes an ambient key: the first
// Config.AmbientMaxKeys distinct keys, and no others.
func (l Lease) AdmitAmbient(key string) bool {
	return l.r.ambientKeys.admit(key, l.g.cfg.AmbientMaxKeys)
}

// keyCap is the set of a run's ambient keys, bounded.
type keyCap struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func (c *keyCap) admit(key string, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.keys[key]; ok {
		return true
	}
	if max > 0 && len(c.keys) >= max {
		return false
	}
	if c.keys == nil {
		c.keys = map[string]struct{}{}
	}
	c.keys[key] = struct{}{}
	return true
}

func (c *keyCap) reset() {
	c.mu.Lock()
	c.keys = nil
	c.mu.Unlock()
}

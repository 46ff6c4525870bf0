package runs

// Lease is a push's hold on a run: while any lease is out, a close-out
// waits, so that everything received before the end is sent before it.
type Lease struct {
	g    *Registry
	r    *run
	id   string
	hold string // the push's hold in the fleet, if any
	// ambient: an ambient push's (Join), which leaves the run's activity
	// times alone.
	ambient bool
}

// ID is the run's platform id.
func (l Lease) ID() string { return l.id }

// Release ends the push's hold.
func (l Lease) Release() {
	l.g.fleet.holds.unhold(l.r, l.hold)
	if l.ambient {
		l.r.releaseAmbient()
		return
	}
	l.r.release(l.g.now())
}

// End starts the run's close-out after the grace period, in which data
// still travelling in the other signal's pipeline is accepted. The first
// end wins.
func (l Lease) End(end End) { l.g.closer.requestEnd(l.r, end) }

// Count adds n to one of the run's counts, which its close-out line shows.
func (l Lease) Count(name string, n int64) { l.r.stats.add(name, n) }

package runs

import (
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// AttrHandBack marks a resource of the data a push handed back to the
// collector's retry (consumererror.NewMetrics / NewLogs): the token lets
// the push that brings the data again recognise it. It is only ever set on
// the exporter's own retry copy, and no mapping reads it.
const AttrHandBack = "prime.exporter.hand_back"

// pruneAt is the ledger size from which marking also forgets expired
// hand-backs, so that retries exporterhelper dropped do not pile up in a
// collector whose runs never end.
const pruneAt = 1024

// handBacks remembers, per run, the data handed back to the collector's
// retry and not seen since. During a platform outage every pipeline's data
// sits in exporterhelper's back-off, out of the exporter's sight: the
// in-flight drain of a close-out cannot see it, while the run's end (a
// record that needs no request) can go through at once.
type handBacks struct {
	mu     sync.Mutex
	seq    int64
	tokens map[int64]handBack
}

type handBack struct {
	run string // the run's registry key
	at  time.Time
}

// MarkHandedBack tags the resources a push appended to its retry copy with
// the run of res. Without retry_on_failure nothing comes back, so nothing
// is remembered.
func (g *Registry) MarkHandedBack(res pcommon.Resource, appended []pcommon.Resource) {
	if len(appended) == 0 || !g.cfg.RetryEnabled {
		return
	}
	ident, err := resolveIdentity(res, g.cfg.Defaults, g.cfg.EvalID)
	if err != nil {
		return
	}
	now := g.now()
	for _, r := range appended {
		token := g.handBacks.mark(r, ident.key(), now, g.cfg.RetryMaxElapsed)
		g.fleet.holds.holdRetry(ident.key(), token)
	}
}

// RunKey names the run a resource's data belongs to, "" when it names
// none: a push keeps one run's resources in order and may send different
// runs at once.
func (g *Registry) RunKey(res pcommon.Resource) string {
	ident, err := resolveIdentity(res, g.cfg.Defaults, g.cfg.EvalID)
	if err != nil {
		return ""
	}
	return ident.key()
}

// Settle forgets the hand-back a resource carries, if any: its data is
// being pushed again (and is handed back anew if it fails again). A push
// settles a resource only when it is done with it: until then its data is
// still owed to a close-out waiting for the run's retries.
func (g *Registry) Settle(res pcommon.Resource) {
	if run, token, ok := g.handBacks.settle(res); ok {
		g.fleet.holds.releaseRetry(run, token)
	}
}

// settle forgets res's hand-back and says whose it was.
func (h *handBacks) settle(res pcommon.Resource) (run string, token int64, ok bool) {
	v, ok := res.Attributes().Get(AttrHandBack)
	if !ok || v.Type() != pcommon.ValueTypeInt {
		return "", 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hb, ok := h.tokens[v.Int()]
	delete(h.tokens, v.Int())
	return hb.run, v.Int(), ok
}

// mark remembers res as the run's data in the collector's retry and
// returns its token.
func (h *handBacks) mark(res pcommon.Resource, run string, now time.Time, maxAge time.Duration) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tokens == nil {
		h.tokens = map[int64]handBack{}
	}
	if len(h.tokens) >= pruneAt {
		h.pruneLocked(now, maxAge)
	}
	h.seq++
	h.tokens[h.seq] = handBack{run: run, at: now}
	res.Attributes().PutInt(AttrHandBack, h.seq)
	return h.seq
}

// waiting counts the run's data still in the collector's retry. A
// hand-back older than maxAge (retry_on_failure's max_elapsed_time; 0 is
// no limit) was dropped by exporterhelper and is forgotten.
func (h *handBacks) waiting(run string, now time.Time, maxAge time.Duration) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pruneLocked(now, maxAge)
	n := 0
	for _, hb := range h.tokens {
		if hb.run == run {
			n++
		}
	}
	return n
}

func (h *handBacks) pruneLocked(now time.Time, maxAge time.Duration) {
	if maxAge <= 0 {
		return
	}
	for token, hb := range h.tokens {
		if now.Sub(hb.at) > maxAge {
			delete(h.tokens, token)
		}
	}
}

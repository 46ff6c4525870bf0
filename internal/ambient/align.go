package ambient

import (
	"sort"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// alignWindow is how far apart the points of one scrape may be: the
// scrapers of one tick, or the targets of one run, stamp within a few
// milliseconds of each other, and a busy host's process scraper within a
// few hundred. It stays below a second, the shortest interval anyone
// samples at (the demo's), so two scrapes never share a row.
const alignWindow = pcommon.Timestamp(500e6)

// Rows remembers, for each run (or pod) its ambient data goes to, the
// time of the row its latest scrape opened, so that the resources of one
// tick (hostmetrics sends a resource per scraper and per process, the
// prometheus receiver one per target) make one metrics post, not one each.
// It holds at most max keys, forgetting the one set longest ago first.
type Rows struct {
	mu    sync.Mutex
	max   int
	last  map[string]pcommon.Timestamp
	order []string
}

// NewRows remembers at most max keys.
func NewRows(max int) *Rows {
	return &Rows{max: max, last: map[string]pcommon.Timestamp{}}
}

// align maps ts, the first time of a scrape, onto key's row: the latest
// row's time when ts is within alignWindow of it, else ts, which opens a
// row when it is the newer.
func (r *Rows) align(key string, ts pcommon.Timestamp) pcommon.Timestamp {
	r.mu.Lock()
	defer r.mu.Unlock()
	last, ok := r.last[key]
	switch {
	case ok && ts <= last+alignWindow && last <= ts+alignWindow:
		return last
	case ok && ts < last:
		return ts // an older scrape's, a retry's
	case !ok:
		r.order = append(r.order, key)
		for len(r.order) > r.max {
			delete(r.last, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.last[key] = ts
	return ts
}

// alignTimes maps each point time of rm onto its scrape's row: times
// within alignWindow of the first of their group are one scrape, whose
// first time rows aligns to the run's row.
func alignTimes(rm pmetric.ResourceMetrics, rows *Rows, key string) func(pcommon.Timestamp) pcommon.Timestamp {
	var times []pcommon.Timestamp
	for _, sm := range rm.ScopeMetrics().All() {
		for _, m := range sm.Metrics().All() {
			eachTime(m, func(ts pcommon.Timestamp) { times = append(times, ts) })
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	to := make(map[pcommon.Timestamp]pcommon.Timestamp, len(times))
	var start, row pcommon.Timestamp
	for i, ts := range times {
		if i == 0 || ts-start > alignWindow {
			start, row = ts, ts
			if rows != nil && ts != 0 {
				row = rows.align(key, ts)
			}
		}
		to[ts] = row
	}
	return func(ts pcommon.Timestamp) pcommon.Timestamp {
		if a, ok := to[ts]; ok {
			return a
		}
		return ts
	}
}

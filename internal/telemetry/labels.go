package telemetry

import "sync"

// Labels names the tenants in the exporter's rejection counter, bounded
// whatever the number of tenants: the max tenants that lost the most
// records so far go by their platform user id, every other by Other. A
// tenant that comes to lose more than the least of the named takes its
// place, so the named are the top losers as they stand; the series of the
// one it displaced stops growing, and the total over all labels stays
// exact. A counter keeps every series it ever had, so at most 2×max names
// are ever given: past that the named stay as they are. Counts are kept
// for at most maxTracked tenants; a tenant first seen past that goes by
// Other.
type Labels struct {
	max int

	mu     sync.Mutex
	counts map[string]int64
	named  map[string]bool
	// given counts the names ever given.
	given int
}

// Label values that name no tenant.
const (
	// Other is every tenant outside the top MaxNamed.
	Other = "other"
	// Unknown is data no tenant could be told for: no key, or a key the
	// platform refuses.
	Unknown = "unknown"
)

// maxTracked bounds the tenants whose counts Labels keeps.
const maxTracked = 10_000

// NewLabels names at most max tenants (max ≥ 1).
func NewLabels(max int) *Labels {
	return &Labels{max: max, counts: map[string]int64{}, named: map[string]bool{}}
}

// Of counts records more lost by user and returns the label they are
// counted under.
func (l *Labels) Of(user string, records int) string {
	if user == "" {
		return Unknown
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, tracked := l.counts[user]; !tracked && len(l.counts) >= maxTracked {
		return Other
	}
	l.counts[user] += int64(records)
	if l.named[user] {
		return user
	}
	if len(l.named) < l.max {
		l.named[user] = true
		l.given++
		return user
	}
	if l.given >= 2*l.max {
		return Other
	}
	least, leastN := "", int64(-1)
	for u := range l.named {
		if n := l.counts[u]; leastN < 0 || n < leastN {
			least, leastN = u, n
		}
	}
	if l.counts[user] <= leastN {
		return Other
	}
	delete(l.named, least)
	l.named[user] = true
	l.given++
	return user
}

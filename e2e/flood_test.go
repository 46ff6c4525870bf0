//go:build flood

package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The flood measurement of scripts/flood.sh (not in CI): the Done-when of
// the ingest limits, "one tenant sends at 10× its limit; the other
// tenants' throughput and p99 latency stay within 10 % of a run without
// the flood". The shipped multi-tenant gateway (built collector, fake
// platform) serves PRIME_FLOOD_TENANTS tenants (3), each sending a run at a
// steady PRIME_FLOOD_RATE requests a second (5) of PRIME_FLOOD_EPISODES
// episodes (20) of about PRIME_FLOOD_TEXT_BYTES of text (2000), for
// PRIME_FLOOD_SECONDS (30) a phase, the phases in turn PRIME_FLOOD_REPS
// times (3) so that what else the machine does falls on each alike, beside
// a flooding tenant whose override is PRIME_FLOOD_LIMIT records a second
// (100, one other tenant's load), sending from a process of its own
// (flood_process_test.go says why, and at what niceness), in these phases:
//
//   - without the flood: the others alone;
//   - the flooder at its limit, steadily, as one more tenant: what the
//     limit lets it add, the baseline of what the excess costs;
//   - with the flood, blind: the flooder attempts ten times its limit at a
//     steady pace whatever it hears (requests of the others' shape, a
//     second's worth built before the clock starts and sent round and
//     round; a refused one is not sent again, its data the flooder's own
//     loss), the worst case;
//   - with the flood, as SDKs: PRIME_FLOOD_SDKS (8) senders of the flooder,
//     each sending back to back and, answered 429, the same request again
//     after its Retry-After, as the OTel SDK's exporters of a trainer's
//     ranks do;
//   - unless PRIME_FLOOD_UNLIMITED=0, the blind flood with the flooder's
//     limits lifted through the overrides file (no restart), to show what
//     the limit holds off.
//
// Throughput is the other tenants' records accepted a second, latency a
// request's from its first POST to its 200, over every repetition of a
// phase; "within 10 %" is throughput at
// least 0.9× and p99 at most 1.1× the phase without the flood (and, apart,
// the phase with the flooder at its limit). The figures go to the test log
// and PRIME_FLOOD_REPORT.

// floodKind is how the flooder sends in a phase.
type floodKind int

const (
	noFlood floodKind = iota
	atLimit
	blindFlood
	sdkFlood
)

// floodPhase is one phase: how the flooder sends, and what it measured
// over every repetition.
type floodPhase struct {
	name      string
	kind      floodKind
	unlimited bool

	seconds float64
	others  int             // the others' records accepted
	latency []time.Duration // each of the others' accepted requests'
	// repP99 is each repetition's p99 alone: their median is not moved
	// by one repetition that met a busy machine.
	repP99 []time.Duration
	// The flooder's records attempted and accepted, and its requests
	// answered 429.
	tried, taken, flood429 int64
}

func (p *floodPhase) othersRate() float64 { return float64(p.others) / p.seconds }

// percentile is the q-th of the others' latencies.
func (p *floodPhase) percentile(q float64) time.Duration { return percentile(p.latency, q) }

// medianP99 is the median of the repetitions' p99s.
func (p *floodPhase) medianP99() time.Duration { return percentile(p.repP99, 0.5) }

func percentile(ds []time.Duration, q float64) time.Duration {
	l := slices.Sorted(slices.Values(ds))
	return l[min(len(l)-1, int(float64(len(l))*q))]
}

func TestFloodOfOneTenantAgainstTheOthersThroughputAndLatency(t *testing.T) {
	otelcol, _ := binaries(t)
	tenants := envInt(t, "PRIME_FLOOD_TENANTS", 3)
	rate := envInt(t, "PRIME_FLOOD_RATE", 5)
	episodes := envInt(t, "PRIME_FLOOD_EPISODES", 20)
	span := time.Duration(envInt(t, "PRIME_FLOOD_SECONDS", 30)) * time.Second
	reps := envInt(t, "PRIME_FLOOD_REPS", 3)
	load := floodLoad{rate, episodes, envInt(t, "PRIME_FLOOD_LIMIT", 100), envInt(t, "PRIME_FLOOD_SDKS", 8)}
	filler := strings.Repeat("x", envInt(t, "PRIME_FLOOD_TEXT_BYTES", 2000))

	users := []rfttest.User{{Key: "sk-flooder-SECRET-0", ID: "flooder", Teams: []string{"team-flooder"}}}
	for i := range tenants {
		users = append(users, rfttest.User{Key: fmt.Sprintf("sk-tenant%d-SECRET", i), ID: fmt.Sprintf("tenant%d", i), Teams: []string{fmt.Sprintf("team-%d", i)}})
	}
	platform := rfttest.NewServer(rfttest.Options{Users: users, DiscardObjects: true})
	defer platform.Close()
	limited := fmt.Sprintf("flooder:\n  records_per_second: %d\n", load.Limit)
	g, overrides := startLimitedGateway(t, otelcol, platform, limited)
	changes := 1 // "A tenant's ingest limit changed" lines so far
	override := func(content string) {
		if err := os.WriteFile(overrides, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		changes++
		waitFor(t, g.c, "the flooder's limit changed", 30*time.Second, func() bool {
			return strings.Count(g.c.out.String(), "A tenant's ingest limit changed") == changes
		})
	}
	waitFor(t, g.c, "the flooder's override read", 30*time.Second, func() bool {
		return strings.Count(g.c.out.String(), "A tenant's ingest limit changed") == changes
	})

	phases := []*floodPhase{
		{name: "without the flood"},
		{name: "the flooder at its limit", kind: atLimit},
		{name: "with the flood, blind", kind: blindFlood},
		{name: "with the flood, as SDKs", kind: sdkFlood},
	}
	if os.Getenv("PRIME_FLOOD_UNLIMITED") != "0" {
		phases = append(phases, &floodPhase{name: "blind flood, no limit", kind: blindFlood, unlimited: true})
	}
	// The phases in turn, reps times over, so that what else the machine
	// does falls on every phase alike.
	for rep := range reps {
		for i, p := range phases {
			if p.unlimited {
				override("flooder:\n  records_per_second: 0\n  bytes_per_second: 0\n")
			}
			var others []*tenantSender
			for j := range tenants {
				s := newTenantSender(g, users[j+1].Key, fmt.Sprintf("tenant%d-r%dp%d", j, rep, i), users[j+1].Teams[0])
				s.filler = filler
				others = append(others, s)
			}
			runFloodPhase(t, g, p, others, floodOrder{
				Addr: g.httpAddr, CAFile: g.caFile, Key: users[0].Key, RunKey: fmt.Sprintf("flood-r%dp%d", rep, i), Team: "team-flooder",
				FillerBytes: len(filler), Load: load, Span: span,
			})
			if p.unlimited {
				override(limited)
			}
			waitFor(t, g.c, "the sending queues drained", 10*time.Minute, func() bool {
				return scrapeCounters(t, g.c, g.metricsPort).sum("otelcol_exporter_queue_size") == 0
			})
		}
	}
	report := floodReport(phases, tenants, load, span, reps, floodNiceness(t))
	t.Log("\n" + report)
	if path := os.Getenv("PRIME_FLOOD_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range phases[2:4] {
		if p.flood429 == 0 {
			t.Errorf("%s: the flooder was never told to retry later: its limit did not hold", p.name)
		}
	}
}

// floodLoad is the phases' load: the others' requests a second and
// episodes a request, the flooder's limit and its SDK senders.
type floodLoad struct {
	Rate, Episodes, Limit, SDKs int
}

// runFloodPhase sends the others' runs at their steady pace for span,
// beside the phase's flood from the flooder's own process, and measures p.
func runFloodPhase(t *testing.T, g *mtGateway, p *floodPhase, others []*tenantSender, order floodOrder) {
	t.Helper()
	var flooded func() floodResult
	begin := func() {}
	if p.kind != noFlood {
		order.Kind = p.kind
		begin, flooded = startFlooder(t, order)
	}
	ctx, cancel := context.WithTimeout(context.Background(), order.Span)
	defer cancel()
	var wg sync.WaitGroup
	var failed atomic.Value
	var pacers sync.WaitGroup
	begin()
	for _, s := range others {
		pacers.Go(func() {
			pace(ctx, &wg, float64(order.Load.Rate), func() {
				// The others' requests are not cut short by the span's end.
				if ok, err := s.deliver(context.Background(), s.nextRequest(order.Load.Episodes)); err != nil || !ok {
					failed.Store(fmt.Sprintf("%s: %v", s.runKey, err))
				}
			})
		})
	}
	pacers.Wait()
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		fatalf(t, g.c, "another tenant's request failed: %s", msg)
	}
	if flooded != nil {
		r := flooded()
		if r.Failed != "" {
			fatalf(t, g.c, "%s", r.Failed)
		}
		p.tried += r.Tried
		p.taken += r.Taken
		p.flood429 += r.Throttled
	}
	p.seconds += order.Span.Seconds()
	var rep []time.Duration
	for _, s := range others {
		s.mu.Lock()
		rep = append(rep, s.latency...)
		p.others += len(s.accepted)
		s.mu.Unlock()
	}
	p.latency = append(p.latency, rep...)
	p.repP99 = append(p.repP99, percentile(rep, 0.99))
}

func floodReport(phases []*floodPhase, tenants int, load floodLoad, span time.Duration, reps, nice int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d other tenants, each %d requests/s of %d episodes; the flooder's limit %d records/s, %d SDK senders, in its own process at nice %d; %d × %s a phase, in turn\n",
		tenants, load.Rate, load.Episodes, load.Limit, load.SDKs, nice, reps, span)
	fmt.Fprintf(&b, "%-26s %22s %18s %18s %18s %26s %8s\n", "phase", "others' records/s", "p50", "p99", "median rep p99", "flooder tried/taken /s", "429s")
	base := phases[0]
	ratio := func(d, of time.Duration) float64 { return float64(d) / float64(of) }
	for _, p := range phases {
		fmt.Fprintf(&b, "%-26s %13.1f (%.3f×) %8s (%.2f×) %8s (%.2f×) %8s (%.2f×) %12.0f / %-11.0f %8d   rep p99s %v\n", p.name,
			p.othersRate(), p.othersRate()/base.othersRate(),
			p.percentile(0.5).Round(100*time.Microsecond), ratio(p.percentile(0.5), base.percentile(0.5)),
			p.percentile(0.99).Round(100*time.Microsecond), ratio(p.percentile(0.99), base.percentile(0.99)),
			p.medianP99().Round(100*time.Microsecond), ratio(p.medianP99(), base.medianP99()),
			float64(p.tried)/p.seconds, float64(p.taken)/p.seconds, p.flood429, roundAll(p.repP99))
	}
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	for _, against := range phases[:2] {
		for _, with := range phases[2:4] {
			throughput, p99, median := with.othersRate()/against.othersRate(), ratio(with.percentile(0.99), against.percentile(0.99)), ratio(with.medianP99(), against.medianP99())
			fmt.Fprintf(&b, "%s (tried %.1f× its limit) against %s: throughput %.3f× (within 10 %%: %s), p99 %.2f× (within 10 %%: %s), median rep p99 %.2f× (within 10 %%: %s)\n",
				with.name, float64(with.tried)/with.seconds/float64(load.Limit), against.name, throughput, yes(throughput >= 0.9), p99, yes(p99 <= 1.1), median, yes(median <= 1.1))
		}
	}
	return b.String()
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Microsecond)
	}
	return out
}

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestFiguresAreMediansOfTheReps(t *testing.T) {
	l := &load{spec: loadSpec{name: "2KB", episodes: 1000}, bytes: 2_000_000}
	f := summarize(l, []result{
		{wall: 4 * time.Second, cpu: 8 * time.Second, harness: 3 * time.Second, peakRSS: 300},
		{wall: 1 * time.Second, cpu: 2 * time.Second, harness: 1 * time.Second, peakRSS: 100},
		{wall: 2 * time.Second, cpu: 4 * time.Second, harness: 5 * time.Second, peakRSS: 200},
	})
	if f.episodesPerSec != 500 || f.mbPerSec != 1 || f.cpuPer1k != 4*time.Second || f.harnessPer1k != 3*time.Second || f.peakRSS != 200 {
		t.Errorf("figures = %+v", f)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of an even count = %g, want 2.5", m)
	}
}

func TestTheReportGivesEachShapeItsOwnRatiosAndTargets(t *testing.T) {
	small, large := column{"verifiers", "2KB", false, block}, column{"verifiers", "200KB", true, block}
	plainSmall := column{"plain", "2KB", false, block}
	r := &report{
		cores:    2,
		queueMiB: 32,
		cols:     []column{plainSmall, small, {"verifiers", "2KB", false, refuse}, large},
		figs: map[column]map[string]figures{
			plainSmall: {
				"prime": {episodesPerSec: 900, cpuPer1k: 14 * time.Millisecond},
				"debug": {episodesPerSec: 1000, cpuPer1k: 10 * time.Millisecond},
			},
			small: {
				"prime":    {episodesPerSec: 100, cpuPer1k: 30 * time.Millisecond, peakQueue: 30},
				"debug":    {episodesPerSec: 400, cpuPer1k: 10 * time.Millisecond},
				"otlphttp": {episodesPerSec: 50, cpuPer1k: 60 * time.Millisecond, peakQueue: 10},
			},
			{"verifiers", "2KB", false, refuse}: {"prime": {peakQueue: 10}, "otlphttp": {peakQueue: 10}},
			// debug 1,000/s at 200 µs a CPU episode, a floor of 600 µs:
			// 1/(1/1000 + 0.0006/2) = 769/s allowed, 800 µs of CPU.
			large: {
				"prime": {episodesPerSec: 700, cpuPer1k: 1000 * time.Millisecond},
				"debug": {episodesPerSec: 1000, cpuPer1k: 200 * time.Millisecond},
			},
		},
		floors: map[string]time.Duration{"verifiers-200KB": 600 * time.Microsecond, "verifiers-2KB": 6 * time.Microsecond},
	}
	var out bytes.Buffer
	for _, sh := range r.shapes() {
		r.printRatios(&out, sh)
	}
	r.printTargets(&out)
	// Columns are matched with their spacing collapsed.
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"ratios, shape plain 2KB block throughput prime/debug 0.90",
		"ratios, shape verifiers 2KB block 2KB refuse 200KB block",
		"throughput   prime/debug                  0.25              -           0.70",
		"throughput   prime/otlphttp               2.00              -              -",
		"throughput   prime/floor-bound            0.25              -           0.91",
		"CPU/episode  prime/debug                  3.00              -           5.00",
		"CPU/episode  prime/(debug+floor)          1.88              -           1.25",
		"peak queue   prime/otlphttp               3.00           1.00              -",
		"targets (issue 45), queue blocking when full, 32 MiB: CPU per episode against debug's plus the Snappy floor",
		"shape 2KB CPU/(debug+floor) 200KB CPU/(debug+floor) small load's episodes/s: prime / debug",
		"plain - - 900 / 1000 = 0.90",
		"verifiers 1.88 (≤ 2.00) met 1.25 (≤ 1.30) met 100 / 400 = 0.25",
	} {
		if want = strings.Join(strings.Fields(want), " "); !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	// The refusing mode has no target; plain's floor and large load are
	// missing.
	if n := strings.Count(got, "(≤"); n != 2 {
		t.Errorf("%d targets, want verifiers' 2:\n%s", n, out.String())
	}
	plain := got[:strings.Index(got, "ratios, shape verifiers")]
	if strings.Contains(plain, "200KB") {
		t.Errorf("plain's ratios hold another shape's column:\n%s", out.String())
	}
}

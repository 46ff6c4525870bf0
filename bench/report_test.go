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

func TestTheReportEndsWithPrimesRatiosPerLoadAndMode(t *testing.T) {
	small, large := column{"2KB", block}, column{"200KB", block}
	r := &report{
		cores: 2,
		loads: []*load{{spec: loadSpec{name: "2KB"}}, {spec: loadSpec{name: "200KB"}}},
		cols:  []column{small, {"2KB", refuse}, large},
		figs: map[column]map[string]figures{
			small: {
				"prime":    {episodesPerSec: 100, cpuPer1k: 30 * time.Millisecond, peakQueue: 30},
				"debug":    {episodesPerSec: 400, cpuPer1k: 10 * time.Millisecond},
				"otlphttp": {episodesPerSec: 50, cpuPer1k: 60 * time.Millisecond, peakQueue: 10},
			},
			{"2KB", refuse}: {"prime": {peakQueue: 10}, "otlphttp": {peakQueue: 10}},
			// debug 1,000/s at 200 µs a CPU episode, a floor of 600 µs:
			// 1/(1/1000 + 0.0006/2) = 769/s allowed, 800 µs of CPU.
			large: {
				"prime": {episodesPerSec: 700, cpuPer1k: 1000 * time.Millisecond},
				"debug": {episodesPerSec: 1000, cpuPer1k: 200 * time.Millisecond},
			},
		},
		floors: map[string]time.Duration{"200KB": 600 * time.Microsecond},
	}
	var out bytes.Buffer
	r.printRatios(&out)
	r.printTargets(&out)
	// Columns are matched with their spacing collapsed.
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"throughput   prime/debug                  0.25              -           0.70",
		"throughput   prime/otlphttp               2.00              -              -",
		"throughput   prime/floor-bound               -              -           0.91",
		"CPU/episode  prime/debug                  3.00              -           5.00",
		"CPU/episode  prime/(debug+floor)             -              -           1.25",
		"peak queue   prime/otlphttp               3.00           1.00              -",
		"200KB block    CPU/episode  prime/(debug+floor)     1.25  (target ≤ 1.15)  NOT met",
		"200KB block    throughput   prime/floor-bound       0.91  (target ≥ 0.90)  met",
		"2KB block      throughput   prime/debug             0.25  (target ≥ 0.60)  NOT met",
		"2KB refuse     peak queue   prime/otlphttp          1.00  (target ≤ 2.00)  met",
	} {
		if want = strings.Join(strings.Fields(want), " "); !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

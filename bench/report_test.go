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
		{wall: 4 * time.Second, cpu: 8 * time.Second, peakRSS: 300},
		{wall: 1 * time.Second, cpu: 2 * time.Second, peakRSS: 100},
		{wall: 2 * time.Second, cpu: 4 * time.Second, peakRSS: 200},
	})
	if f.episodesPerSec != 500 || f.mbPerSec != 1 || f.cpuPer1k != 4*time.Second || f.peakRSS != 200 {
		t.Errorf("figures = %+v", f)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of an even count = %g, want 2.5", m)
	}
}

func TestTheReportEndsWithPrimesRatios(t *testing.T) {
	loads := []*load{{spec: loadSpec{name: "2KB"}}, {spec: loadSpec{name: "200KB"}}}
	figs := map[string]map[string]figures{
		"2KB": {
			"prime":    {episodesPerSec: 100, cpuPer1k: 30 * time.Millisecond},
			"debug":    {episodesPerSec: 400, cpuPer1k: 10 * time.Millisecond},
			"otlphttp": {episodesPerSec: 50, cpuPer1k: 60 * time.Millisecond},
		},
		"200KB": {"prime": {episodesPerSec: 1}},
	}
	var out bytes.Buffer
	printRatios(&out, loads, figs)
	for _, want := range []string{
		"throughput   prime/debug          0.25          -",
		"throughput   prime/otlphttp       2.00          -",
		"CPU/episode  prime/debug          3.00          -",
		"CPU/episode  prime/otlphttp       0.50          -",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

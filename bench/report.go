package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// figures are one configuration's numbers on one load: each the median of
// its reps, taken on its own.
type figures struct {
	episodesPerSec float64
	mbPerSec       float64 // OTLP protobuf bytes sent, 10^6 per MB
	cpuPer1k       time.Duration
	peakRSS        int64
	peakQueue      int64
	wall           time.Duration
	retries        int64 // the most any rep needed
}

// summarize takes the medians of one configuration's runs on l.
func summarize(l *load, runs []result) figures {
	var f figures
	per := func(get func(result) float64) float64 {
		vs := make([]float64, len(runs))
		for i, r := range runs {
			vs[i] = get(r)
		}
		return median(vs)
	}
	eps := float64(l.spec.episodes)
	f.episodesPerSec = per(func(r result) float64 { return eps / r.wall.Seconds() })
	f.mbPerSec = per(func(r result) float64 { return float64(l.bytes) / 1e6 / r.wall.Seconds() })
	f.cpuPer1k = time.Duration(per(func(r result) float64 { return float64(r.cpu) * 1000 / eps }))
	f.peakRSS = int64(per(func(r result) float64 { return float64(r.peakRSS) }))
	f.peakQueue = int64(per(func(r result) float64 { return float64(r.peakQ) }))
	f.wall = time.Duration(per(func(r result) float64 { return float64(r.wall) }))
	for _, r := range runs {
		f.retries = max(f.retries, r.retries)
	}
	return f
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// printLoad prints one load's table.
func printLoad(w io.Writer, l *load, reps int, figs map[string]figures) {
	fmt.Fprintf(w, "\nload %s: %d episodes of ~%.1f KB (%.1f MB of OTLP in %d requests), %d runs; median of %d reps\n",
		l.spec.name, l.spec.episodes, float64(l.bytes)/float64(l.spec.episodes)/1024, float64(l.bytes)/1e6,
		len(l.requests), l.spec.runs, reps)
	fmt.Fprintf(w, "%-10s %12s %9s %16s %14s %12s %8s %8s\n", "config", "episodes/s", "MB/s", "CPU ms/1k ep", "peak RSS MiB", "peak queue", "wall s", "retries")
	for _, c := range configurations {
		f, ok := figs[c]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%-10s %12.0f %9.1f %16.1f %14.0f %12.0f %8.2f %8d\n", c, f.episodesPerSec, f.mbPerSec,
			float64(f.cpuPer1k)/float64(time.Millisecond), float64(f.peakRSS)/(1<<20), float64(f.peakQueue)/(1<<20), f.wall.Seconds(), f.retries)
	}
}

// printRatios ends the report: prime against each other configuration, for
// throughput (higher is better for prime) and CPU per episode (lower is).
func printRatios(w io.Writer, loads []*load, figs map[string]map[string]figures) {
	fmt.Fprintf(w, "\n%-28s", "ratios")
	for _, l := range loads {
		fmt.Fprintf(w, " %10s", l.spec.name)
	}
	fmt.Fprintln(w)
	for _, row := range []struct {
		label, other string
		get          func(figures) float64
	}{
		{"throughput   prime/debug   ", "debug", func(f figures) float64 { return f.episodesPerSec }},
		{"throughput   prime/otlphttp", "otlphttp", func(f figures) float64 { return f.episodesPerSec }},
		{"CPU/episode  prime/debug   ", "debug", func(f figures) float64 { return float64(f.cpuPer1k) }},
		{"CPU/episode  prime/otlphttp", "otlphttp", func(f figures) float64 { return float64(f.cpuPer1k) }},
	} {
		fmt.Fprint(w, row.label)
		for _, l := range loads {
			p, okP := figs[l.spec.name]["prime"]
			o, okO := figs[l.spec.name][row.other]
			if !okP || !okO || row.get(o) == 0 {
				fmt.Fprintf(w, " %10s", "-")
				continue
			}
			fmt.Fprintf(w, " %10.2f", row.get(p)/row.get(o))
		}
		fmt.Fprintln(w)
	}
}

package main

import (
	"cmp"
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
	// harnessPer1k is the benchmark's own CPU over the run (the senders,
	// the target, the scrapes): it shares the cores with the collector, so
	// the collector's throughput is the cores over both.
	harnessPer1k time.Duration
	peakRSS      int64
	peakQueue    int64
	wall         time.Duration
	retries      int64 // the most any rep needed
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
	f.harnessPer1k = time.Duration(per(func(r result) float64 { return float64(r.harness) * 1000 / eps }))
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

// column is one load in one overflow mode: a column of its shape's
// ratios.
type column struct {
	shape string
	size  string
	large bool
	mode  overflowMode
}

// column is spec's load in mode.
func (spec loadSpec) column(mode overflowMode) column {
	return column{shape: spec.shape.name, size: spec.size, large: spec.large, mode: mode}
}

// load is the name of the column's load, as the floors are keyed.
func (c column) load() string   { return c.shape + "-" + c.size }
func (c column) String() string { return c.size + " " + string(c.mode) }

// report is every figure of a run.
type report struct {
	cores    int // the machine's, which the collector and the harness share
	reps     int
	queueMiB int // every measured exporter's sending queue
	loads    []*load
	cols     []column
	figs     map[column]map[string]figures
	floors   map[string]time.Duration // per load: the Snappy floor per episode
}

// printLoad prints one load's table in one overflow mode.
func (r *report) printLoad(w io.Writer, l *load, mode overflowMode) {
	figs := r.figs[l.spec.column(mode)]
	fmt.Fprintf(w, "\nshape %s, load %s, queue %s when full: %d episodes of ~%.1f KB (%.1f MB of OTLP in %d requests), %d runs; median of %d reps\n",
		l.spec.shape.name, l.spec.size, mode, l.spec.episodes, float64(l.bytes)/float64(l.spec.episodes)/1024, float64(l.bytes)/1e6,
		len(l.requests), l.spec.runs, r.reps)
	fmt.Fprintf(w, "%-13s %12s %9s %16s %14s %14s %12s %8s %8s\n", "config", "episodes/s", "MB/s", "CPU ms/1k ep", "harness ms/1k", "peak RSS MiB", "peak queue", "wall s", "retries")
	for _, c := range allConfigurations() {
		f, ok := figs[c]
		if !ok {
			continue
		}
		fmt.Fprintf(w, "%-13s %12.0f %9.1f %16.1f %14.1f %14.0f %12.0f %8.2f %8d\n", c, f.episodesPerSec, f.mbPerSec,
			float64(f.cpuPer1k)/float64(time.Millisecond), float64(f.harnessPer1k)/float64(time.Millisecond), float64(f.peakRSS)/(1<<20), float64(f.peakQueue)/(1<<20), f.wall.Seconds(), f.retries)
	}
	if fl, ok := r.floors[l.spec.name]; ok {
		fmt.Fprintf(w, "%-13s %12.0f %9s %16.1f   (Snappy over the rows' cell text on every core at once; median of %d)\n", "floor", float64(time.Second)/float64(fl), "",
			float64(fl)*1000/float64(time.Millisecond), r.reps)
	}
}

// ratio is one row of the ratios: prime against a reference, in a column.
type ratio struct {
	label string
	get   func(r *report, col column) (float64, bool)
}

// of is prime's figure over other's in the column.
func of(other string, get func(figures) float64) func(*report, column) (float64, bool) {
	return over("prime", other, get)
}

// over is config's figure over other's in the column.
func over(config, other string, get func(figures) float64) func(*report, column) (float64, bool) {
	return func(r *report, col column) (float64, bool) {
		p, okP := r.figs[col][config]
		o, okO := r.figs[col][other]
		if !okP || !okO || get(o) == 0 {
			return 0, false
		}
		return get(p) / get(o), true
	}
}

// withFloor gives prime's and debug's figures for col and the Snappy
// floor of its load, false if any is missing.
func withFloor(r *report, col column) (p, d figures, fl time.Duration, ok bool) {
	p, okP := r.figs[col]["prime"]
	d, okD := r.figs[col]["debug"]
	fl, okF := r.floors[col.load()]
	return p, d, fl, okP && okD && okF
}

// floorCPU is prime's CPU per episode against debug's plus the Snappy
// floor: how far prime is above the work no writer of the table avoids.
func floorCPU(r *report, col column) (float64, bool) {
	p, d, fl, ok := withFloor(r, col)
	if !ok {
		return 0, false
	}
	return float64(p.cpuPer1k) / (float64(d.cpuPer1k) + 1000*float64(fl)), true
}

// floorAllows is the throughput the floor allows: debug's pace with the
// Snappy floor's CPU added, spread over the cores (1 / (1/debug +
// floor/cores)).
func floorAllows(r *report, d figures, fl time.Duration) float64 {
	return 1 / (1/d.episodesPerSec + fl.Seconds()/float64(r.cores))
}

// floorThroughput is prime's throughput against what the floor allows.
func floorThroughput(r *report, col column) (float64, bool) {
	p, d, fl, ok := withFloor(r, col)
	if !ok || d.episodesPerSec == 0 {
		return 0, false
	}
	return p.episodesPerSec / floorAllows(r, d, fl), true
}

func (r *report) ratios() []ratio {
	eps := func(f figures) float64 { return f.episodesPerSec }
	cpu := func(f figures) float64 { return float64(f.cpuPer1k) }
	return []ratio{
		{"throughput   prime/debug", of("debug", eps)},
		{"throughput   prime/otlphttp", of("otlphttp", eps)},
		{"throughput   prime/floor-bound", floorThroughput},
		{"CPU/episode  prime/debug", of("debug", cpu)},
		{"CPU/episode  prime/otlphttp", of("otlphttp", cpu)},
		{"CPU/episode  prime/(debug+floor)", floorCPU},
		{"peak queue   prime/otlphttp", of("otlphttp", func(f figures) float64 { return float64(f.peakQueue) })},
		{"peak RSS     prime/otlphttp", of("otlphttp", func(f figures) float64 { return float64(f.peakRSS) })},
		// The multi-tenant gateway against the single-key one: what
		// prime_auth's cached key check and the per-tenant backends cost.
		{"throughput   prime-tenants/prime", over(primeTenants, "prime", eps)},
		{"CPU/episode  prime-tenants/prime", over(primeTenants, "prime", cpu)},
		// The agent tier in front of the gateway against the gateway
		// alone: both processes' CPU and memory.
		{"throughput   prime-agent/prime", over(primeAgent, "prime", eps)},
		{"CPU/episode  prime-agent/prime", over(primeAgent, "prime", cpu)},
		{"peak RSS     prime-agent/prime", over(primeAgent, "prime", func(f figures) float64 { return float64(f.peakRSS) })},
	}
}

// shapes are the report's shapes, in the order they ran.
func (r *report) shapes() []string {
	var out []string
	for _, c := range r.cols {
		if !slices.Contains(out, c.shape) {
			out = append(out, c.shape)
		}
	}
	return out
}

// printRatios prints one shape's ratios: prime against each other
// configuration and against the floor, for throughput (higher is better
// for prime), CPU per episode, peak queue and peak RSS (lower is), per load
// and mode.
func (r *report) printRatios(w io.Writer, shape string) {
	var cols []column
	for _, c := range r.cols {
		if c.shape == shape {
			cols = append(cols, c)
		}
	}
	fmt.Fprintf(w, "\n%-34s", "ratios, shape "+shape)
	for _, c := range cols {
		fmt.Fprintf(w, " %14s", c)
	}
	fmt.Fprintln(w)
	for _, row := range r.ratios() {
		fmt.Fprintf(w, "%-34s", row.label)
		for _, c := range cols {
			if v, ok := row.get(r, c); ok {
				fmt.Fprintf(w, " %14.2f", v)
			} else {
				fmt.Fprintf(w, " %14s", "-")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "(floor-bound: 1/(1/debug's episodes/s + floor/%d cores); the floor per episode is in each load's table)\n", r.cores)
}

// goal is one of issue 45's targets: prime's CPU per episode against
// debug's plus the Snappy floor (floorCPU) at most limit, on every
// shape's small (2 KB) or large (200 KB) load, with the queue blocking
// when full.
type goal struct {
	large bool
	limit float64
}

func goals() []goal { return []goal{{false, 2.0}, {true, 1.3}} }

// printTargets says in one table, a shape a row, which of issue 45's
// targets this run meets: each load's CPU against debug's plus the floor
// beside its target, and the small load's throughput beside debug's (the
// target there is no regression, which a run alone cannot tell).
func (r *report) printTargets(w io.Writer) {
	type cell struct {
		text string
		ok   bool
	}
	var rows [][]cell
	headers := make([]string, len(goals()))
	for _, sh := range r.shapes() {
		row := make([]cell, 0, len(goals())+1)
		for i, t := range goals() {
			c := cell{text: "-"}
			if col, ok := r.blocking(sh, t.large); ok {
				headers[i] = col.size + " CPU/(debug+floor)"
				if v, ok := floorCPU(r, col); ok {
					verdict := "met"
					if v > t.limit {
						verdict = "NOT met"
					}
					c = cell{fmt.Sprintf("%.2f (≤ %.2f) %s", v, t.limit, verdict), true}
				}
			}
			row = append(row, c)
		}
		c := cell{text: "-"}
		if col, ok := r.blocking(sh, false); ok {
			p, okP := r.figs[col]["prime"]
			d, okD := r.figs[col]["debug"]
			if okP && okD && d.episodesPerSec > 0 {
				c = cell{fmt.Sprintf("%.0f / %.0f = %.2f", p.episodesPerSec, d.episodesPerSec, p.episodesPerSec/d.episodesPerSec), true}
			}
		}
		rows = append(rows, append(row, c))
	}
	any := false
	for _, row := range rows {
		for _, c := range row {
			any = any || c.ok
		}
	}
	if !any {
		return
	}
	fmt.Fprintf(w, "\ntargets (issue 45), queue blocking when full, %d MiB: CPU per episode against debug's plus the Snappy floor\n", r.queueMiB)
	fmt.Fprintf(w, "%-10s", "shape")
	for _, h := range headers {
		fmt.Fprintf(w, "  %-28s", cmp.Or(h, "CPU/(debug+floor)"))
	}
	fmt.Fprintf(w, "  %s\n", "small load's episodes/s: prime / debug")
	for i, sh := range r.shapes() {
		fmt.Fprintf(w, "%-10s", sh)
		for _, c := range rows[i][:len(goals())] {
			fmt.Fprintf(w, "  %-28s", c.text)
		}
		fmt.Fprintf(w, "  %s\n", rows[i][len(goals())].text)
	}
}

// blocking is shape's small or large load with the queue blocking when
// full, if it ran.
func (r *report) blocking(shape string, large bool) (column, bool) {
	for _, c := range r.cols {
		if c.shape == shape && c.large == large && c.mode == block {
			return c, true
		}
	}
	return column{}, false
}

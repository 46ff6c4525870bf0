package e2e

import (
	"math"
	"testing"
	"time"
)

// cpuTrend is the collector's CPU per episode along a run as a straight
// line over the rows landed so far. A part of the run read alone (the
// first tenth is 48 s of the million-episode soak) moves by a tenth either
// way with the machine's pace; the line, fitted to every interval of the
// load, is moved little by a short stretch that ran fast or slow. A
// slowdown that spreads along the run tilts it all the same, so it is a
// smoother reading, not one against the machine: the trainer's CPU is that
// (perEpisode.paced).
type cpuTrend struct {
	base, slope float64 // ns per row at no rows landed; its change per row landed
	intervals   int     // the readings' intervals it was fitted to
	spread      float64 // the intervals' weighted deviation from the line, relative to it
}

// fitCPUTrend fits the line to consecutive readings taken while the load
// ran (both labelled "load"): each interval's CPU per row confirmed in it,
// weighted by those rows, at the rows landed halfway through it. Intervals
// that span a pause of the load (a checkpoint's landing) are left out:
// their rows were paid for before it. It needs three intervals.
func fitCPUTrend(samples []sample) (cpuTrend, bool) {
	type point struct{ x, y, w float64 }
	var pts []point
	for i := 1; i < len(samples); i++ {
		a, b := samples[i-1], samples[i]
		if a.phase != "load" || b.phase != "load" || b.rows <= a.rows {
			continue
		}
		rows := float64(b.rows - a.rows)
		pts = append(pts, point{x: float64(a.rows+b.rows) / 2, y: float64(b.cpu-a.cpu) / rows, w: rows})
	}
	if len(pts) < 3 {
		return cpuTrend{}, false
	}
	var sw, sx, sy float64
	for _, p := range pts {
		sw, sx, sy = sw+p.w, sx+p.w*p.x, sy+p.w*p.y
	}
	mx, my := sx/sw, sy/sw
	var sxx, sxy float64
	for _, p := range pts {
		sxx += p.w * (p.x - mx) * (p.x - mx)
		sxy += p.w * (p.x - mx) * (p.y - my)
	}
	t := cpuTrend{intervals: len(pts)}
	if sxx > 0 {
		t.slope = sxy / sxx
	}
	t.base = my - t.slope*mx
	var dev float64
	for _, p := range pts {
		d := (p.y - t.base - t.slope*p.x) / (t.base + t.slope*p.x)
		dev += p.w * d * d
	}
	t.spread = math.Sqrt(dev / sw)
	return t, true
}

// at is the line's CPU per episode once rows have landed.
func (t cpuTrend) at(rows int64) time.Duration {
	return time.Duration(math.Round(t.base + t.slope*float64(rows)))
}

func TestTheCPUTrendIsTheLineThroughTheLoadsIntervalsAndLeavesOutTheLandings(t *testing.T) {
	// 100 µs per row at the start, rising by 10 µs per 100,000 rows, read
	// every 10,000 rows; a landing pause in the middle adds CPU but no
	// rows, and the interval after it lands rows paid for before: both
	// would bend the line if they were fitted.
	var samples []sample
	var cpu time.Duration
	rows := int64(0)
	perRow := func(r int64) time.Duration {
		return 100*time.Microsecond + time.Duration(r)*10*time.Microsecond/100_000
	}
	for i := range 100 {
		phase := "load"
		if i == 50 || i == 51 {
			phase = "land"
			cpu += time.Second
			if i == 51 {
				rows += 40_000
			}
		} else {
			cpu += 10_000 * perRow(rows+5_000)
			rows += 10_000
		}
		samples = append(samples, sample{phase: phase, cpu: cpu, rows: rows})
	}
	trend, ok := fitCPUTrend(samples)
	if !ok {
		t.Fatal("no trend from 100 readings")
	}
	for _, r := range []int64{100_000, 1_000_000} {
		if got, want := trend.at(r), perRow(r); got != want {
			t.Errorf("CPU per episode at %d rows: got %s, want %s", r, got, want)
		}
	}
	if trend.intervals != 96 {
		t.Errorf("fitted %d intervals, want the 96 with both readings in the load", trend.intervals)
	}
	if trend.spread > 1e-9 {
		t.Errorf("spread %g around a line the readings lie on", trend.spread)
	}
}

func TestTheCPUTrendNeedsThreeIntervalsOfLoad(t *testing.T) {
	samples := []sample{
		{phase: "start"}, {phase: "load", cpu: time.Second, rows: 10},
		{phase: "load", cpu: 2 * time.Second, rows: 20}, {phase: "load", cpu: 3 * time.Second, rows: 30},
	}
	if _, ok := fitCPUTrend(samples); ok {
		t.Error("a trend from two intervals of load")
	}
	samples = append(samples, sample{phase: "load", cpu: 4 * time.Second, rows: 40})
	trend, ok := fitCPUTrend(samples)
	if !ok || trend.at(0) != 100*time.Millisecond || trend.at(1000) != 100*time.Millisecond {
		t.Errorf("a flat 100 ms per row read as %+v (ok %v)", trend, ok)
	}
}

package stepmetrics

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPrometheusHistogramQuantileAgreesWithEveryPercentileWeSend writes
// each bucket layout as the classic _bucket series the collector's
// Prometheus exporters make of it, states our p50, p90 and p99 as what
// histogram_quantile must give, and has the real Prometheus (promtool test
// rules) check them. promtool compares exp_samples with reflect.DeepEqual:
// our values must agree to the bit, so they are written with full
// precision. The points have no min or max: clamping to them is our
// addition to the rule, and would move the values away from Prometheus's
// whenever they lie inside the outer buckets.
func TestPrometheusHistogramQuantileAgreesWithEveryPercentileWeSend(t *testing.T) {
	bin := promtoolOrSkip(t)
	rnd := rand.New(rand.NewSource(20240611))
	layouts := fixedClassicLayouts()
	for i := 0; i < 300; i++ {
		layouts = append(layouts, randomExplicitLayout(rnd))
	}
	for i := 0; i < 200; i++ {
		layouts = append(layouts, classicOf(t, randomExponentialLayout(rnd)))
	}

	var series, none strings.Builder
	var ours [3]strings.Builder
	for i, l := range layouts {
		name := `{layout="` + strconv.Itoa(i) + `"}`
		for j, le := range l.le {
			fmt.Fprintf(&series, "      - series: 'h_bucket{layout=\"%d\",le=\"%s\"}'\n        values: '%d'\n", i, formatFloat(le), l.cum[j])
		}
		fmt.Fprintf(&series, "      - series: 'h_bucket{layout=\"%d\",le=\"+Inf\"}'\n        values: '%d'\n", i, l.count)

		rm, ms := resource()
		if l.exponential != nil {
			exponentialPoint(t, ms, *l.exponential)
		} else {
			explicitPoint(t, ms, l.bounds, l.counts, l.count)
		}
		got, rejected := percentilesOf(t, rm)
		assertRejections(t, rejected, nil)
		if len(got) == 0 {
			fmt.Fprintf(&none, "          - labels: '%s'\n            value: 1\n", name)
			continue
		}
		for k, p := range []string{"p50", "p90", "p99"} {
			fmt.Fprintf(&ours[k], "          - labels: '%s'\n            value: %s\n", name, strconv.FormatFloat(got[p], 'g', -1, 64))
		}
	}
	if none.Len() == 0 || ours[0].Len() == 0 {
		t.Fatal("the layouts must hold some that give percentiles and some that give none")
	}

	var file strings.Builder
	file.WriteString("rule_files: []\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n")
	file.WriteString(series.String())
	file.WriteString("    promql_expr_test:\n")
	for k, q := range []string{"0.5", "0.9", "0.99"} {
		// NaN, Prometheus's "no value", is dropped here, so a layout for
		// which one side has a value and the other none fails too.
		fmt.Fprintf(&file, "      - expr: 'histogram_quantile(%s, h_bucket) >= -Inf'\n        eval_time: 0m\n        exp_samples:\n%s", q, ours[k].String())
		// Where we send nothing, Prometheus's answer is NaN (not absent:
		// the series were read).
		fmt.Fprintf(&file, "      - expr: 'count by (layout) (histogram_quantile(%s, h_bucket) != histogram_quantile(%s, h_bucket))'\n        eval_time: 0m\n        exp_samples:\n%s", q, q, none.String())
	}
	path := filepath.Join(t.TempDir(), "percentiles.test.yaml")
	if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "test", "rules", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules disagrees with our percentiles (%v):\n%s", err, out)
	}
	t.Logf("promtool agrees on %d layouts", len(layouts))
}

// promtoolOrSkip finds Debian's promtool (the prometheus package, which
// scripts/lib.sh's ensure_promtool installs). In CI a missing one fails the
// test, so the comparison is never silently dropped; elsewhere it skips.
func promtoolOrSkip(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err == nil {
		return bin
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("promtool checks our percentiles against Prometheus: install Debian's prometheus package (bash -c 'source scripts/lib.sh; ensure_promtool'): %v", err)
	}
	t.Skipf("promtool is not installed (CI is unset, so this skips): install Debian's prometheus package to compare our percentiles with Prometheus's: %v", err)
	return ""
}

// classicLayout is one point and the classic series that stand for it:
// le[i] with cumulative count cum[i], then +Inf with count.
type classicLayout struct {
	bounds      []float64 // explicit point
	counts      []uint64
	exponential *expLayout // or exponential point
	le          []float64
	cum         []uint64
	count       uint64
}

// explicitLayout is an explicit point and its series.
func explicitLayout(bounds []float64, counts []uint64, count uint64) classicLayout {
	l := classicLayout{bounds: bounds, counts: counts, count: count}
	var cum uint64
	for i, b := range bounds {
		cum += counts[i]
		l.le = append(l.le, b)
		l.cum = append(l.cum, cum)
	}
	return l
}

// fixedClassicLayouts are the table tests' layouts that classic series can
// stand for, and the layouts that give no percentiles.
func fixedClassicLayouts() []classicLayout {
	return []classicLayout{
		explicitLayout([]float64{1, 2, 4, 8}, []uint64{2, 6, 8, 4, 0}, 20),
		explicitLayout([]float64{10, 20}, []uint64{8, 2, 0}, 10),
		explicitLayout([]float64{-1, 0, 1}, []uint64{6, 2, 2, 0}, 10),
		explicitLayout([]float64{1, 2}, []uint64{5, 0, 5}, 10),
		explicitLayout([]float64{1, 2}, []uint64{4, 0, 0}, 10),
		explicitLayout([]float64{1, 2}, []uint64{2, 8, 0}, 5),
		explicitLayout([]float64{-5, -2}, []uint64{1, 3, 0}, 4),
		explicitLayout([]float64{1e-9, 3e-9}, []uint64{1, 1, 1}, 3),
		explicitLayout([]float64{0.1, 0.2, 0.30000000000000004}, []uint64{1, 1, 1, 0}, 3),
		// None: count 0, or only the +Inf bucket.
		explicitLayout([]float64{1, 2}, []uint64{0, 0, 0}, 0),
		explicitLayout(nil, []uint64{5}, 5),
	}
}

func randomExplicitLayout(rnd *rand.Rand) classicLayout {
	n := rnd.Intn(12) // 0 bounds: only the +Inf bucket
	magnitude := math.Pow(10, float64(rnd.Intn(9)-4))
	b := (rnd.Float64()*2 - 1) * magnitude
	switch rnd.Intn(3) {
	case 0: // all positive, the usual latency-like layout
		b = math.Abs(b)
	case 1: // all negative
		b = -math.Abs(b) - magnitude*float64(n)
	}
	bounds := make([]float64, n)
	for i := range bounds {
		bounds[i] = b
		b += (rnd.Float64() + 0.01) * magnitude
	}
	counts := make([]uint64, n+1)
	var total uint64
	for i := range counts {
		if rnd.Intn(3) > 0 {
			counts[i] = uint64(rnd.Intn(50))
		}
		total += counts[i]
	}
	switch rnd.Intn(10) {
	case 0: // more counted than bucketed
		total += uint64(rnd.Intn(10))
	case 1: // the +Inf bucket below the finite buckets' total
		total -= min(total, counts[n]+uint64(rnd.Intn(5)))
		if total == 0 {
			total = 1 // count 0 with bucketed observations: we send none, Prometheus reads the buckets
		}
	}
	return explicitLayout(bounds, counts, total)
}

func randomExponentialLayout(rnd *rand.Rand) expLayout {
	l := expLayout{scale: int32(rnd.Intn(6) - 2), negOffset: int32(rnd.Intn(11) - 5), posOffset: int32(rnd.Intn(11) - 5)}
	bucketsOf := func() []uint64 {
		bs := make([]uint64, rnd.Intn(7))
		for i := range bs {
			if rnd.Intn(4) > 0 {
				bs[i] = uint64(rnd.Intn(30))
			}
		}
		return bs
	}
	l.neg, l.pos = bucketsOf(), bucketsOf()
	if rnd.Intn(2) == 0 {
		l.zeroCount = uint64(rnd.Intn(20))
	}
	// The zero bucket stays below the lowest bucket of either sign. A zero
	// threshold of 0 has no classic equivalent after negative buckets: a
	// zero-width bucket can only be the first.
	lowest := math.Min(exponentialBound(l.scale, int64(l.negOffset)), exponentialBound(l.scale, int64(l.posOffset)))
	if len(l.neg) > 0 || rnd.Intn(2) == 0 {
		l.zeroThreshold = lowest * rnd.Float64()
		if l.zeroThreshold == 0 {
			l.zeroThreshold = lowest / 2
		}
	}
	l.count = l.zeroCount
	for _, n := range append(append([]uint64{}, l.neg...), l.pos...) {
		l.count += n
	}
	if rnd.Intn(10) == 0 {
		l.count += uint64(rnd.Intn(10))
	}
	if l.count == 0 {
		l.pos = append(l.pos, 1)
		l.count = 1
	}
	return l
}

// classicOf writes an exponential point as classic series: its buckets in
// our order, a bucket of count 0 wherever one bucket's upper bound is below
// the next one's lower bound, and a first le of count 0 at the lowest
// bound, so that Prometheus interpolates in the same bounds we do. It
// fails on a layout classic series cannot stand for.
func classicOf(t *testing.T, l expLayout) classicLayout {
	t.Helper()
	c := classicLayout{exponential: &l, count: l.count}
	var cum uint64
	add := func(lower, upper float64, n uint64) {
		switch {
		case lower == upper && len(c.le) == 0 && upper <= 0:
			// The classic first bucket answers its bound ≤ 0, as our
			// zero-width bucket does.
		case lower == upper || len(c.le) > 0 && lower < c.le[len(c.le)-1]:
			t.Fatalf("layout %+v: bucket (%v, %v] has no classic equivalent", l, lower, upper)
		case len(c.le) == 0 || lower > c.le[len(c.le)-1]:
			c.le = append(c.le, lower)
			c.cum = append(c.cum, cum)
		}
		cum += n
		c.le = append(c.le, upper)
		c.cum = append(c.cum, cum)
	}
	for i := len(l.neg) - 1; i >= 0; i-- {
		add(-exponentialBound(l.scale, int64(l.negOffset)+int64(i)+1), -exponentialBound(l.scale, int64(l.negOffset)+int64(i)), l.neg[i])
	}
	if l.zeroCount > 0 {
		add(-l.zeroThreshold, l.zeroThreshold, l.zeroCount)
	}
	for i := range l.pos {
		add(exponentialBound(l.scale, int64(l.posOffset)+int64(i)), exponentialBound(l.scale, int64(l.posOffset)+int64(i)+1), l.pos[i])
	}
	return c
}

package report

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// systemPanel is one chart of the System section. Its series differ only
// in their folded attributes (a GPU, a process, a host each), or are one
// histogram's percentiles: eight GPUs make one chart a metric, not eight,
// and the lines of one chart compare at a glance.
type systemPanel struct {
	Title  string   `json:"title"`
	Axis   string   `json:"axis"`
	Charts []int    `json:"charts"` // its series, as indexes of pageData.Charts
	Labels []string `json:"labels"` // each series' legend label
}

// systemFamily is one sub-heading of the System section and its charts.
type systemFamily struct {
	Name   string        `json:"name"`
	Title  string        `json:"title"`
	Panels []systemPanel `json:"panels"`
	// Totals are its histograms' count, sum, mean, min and max. A scraped
	// histogram (vLLM's latencies) counts since its server started, so these
	// are lifetime totals beside percentiles that show the latency now; the
	// page folds them away rather than let them crowd the family.
	Totals []systemPanel `json:"totals,omitempty"`
}

// Kinds of panel, in the order a family lists one metric's.
const (
	panelPlain = iota
	panelPercentiles
	panelTotal
)

type panelKey struct {
	axis, family, metric string
	kind                 int
	stat                 string // a total's statistic
}

type panelMember struct {
	chart              int
	attrs, stat, label string
}

// systemSection sorts the charts of the system group into families and
// panels. It is nil when the run has none: the page then shows no System
// section at all.
func systemSection(charts []chart) []systemFamily {
	keys := map[int]systemKey{}
	stats := map[[2]string][]string{} // axis and metric → its statistics
	for i, c := range charts {
		if c.Group != systemGroup {
			continue
		}
		k := parseSystemKey(c.Name)
		keys[i] = k
		if k.stat != "" {
			am := [2]string{c.Axis, k.metric}
			stats[am] = append(stats[am], k.stat)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	panels := map[panelKey][]panelMember{}
	for i, k := range keys {
		axis := charts[i].Axis
		if s := stats[[2]string{axis, k.metric}]; !isHistogram(s) {
			k.notHistogram()
		}
		pk := panelKey{axis: axis, family: k.family, metric: k.metric}
		label := cmp.Or(k.attrs, "value")
		switch {
		case isPercentile(k.stat):
			pk.kind = panelPercentiles
			label = strings.TrimSpace(k.stat + " " + k.attrs)
		case k.stat != "":
			pk.kind, pk.stat = panelTotal, k.stat
		}
		panels[pk] = append(panels[pk], panelMember{chart: i, attrs: k.attrs, stat: k.stat, label: label})
	}
	order := slices.SortedFunc(maps.Keys(panels), comparePanels)
	var out []systemFamily
	for _, f := range systemFamilies() {
		fam := systemFamily{Name: f[0], Title: f[1], Panels: []systemPanel{}}
		for _, pk := range order {
			if pk.family != fam.Name {
				continue
			}
			p := newPanel(pk, panels[pk])
			if pk.kind == panelTotal {
				fam.Totals = append(fam.Totals, p)
			} else {
				fam.Panels = append(fam.Panels, p)
			}
		}
		if len(fam.Panels)+len(fam.Totals) > 0 {
			out = append(out, fam)
		}
	}
	return out
}

// isHistogram: the exporter writes a histogram's count always, and its sum
// or percentiles beside it; a metric that merely ends in /max is not one.
func isHistogram(stats []string) bool {
	return slices.Contains(stats, "count") && slices.ContainsFunc(stats, func(s string) bool { return s != "count" })
}

func newPanel(pk panelKey, members []panelMember) systemPanel {
	slices.SortFunc(members, func(a, b panelMember) int {
		return cmp.Or(naturalCompare(a.attrs, b.attrs), cmp.Compare(statRank(a.stat), statRank(b.stat)), strings.Compare(a.attrs, b.attrs))
	})
	p := systemPanel{Title: pk.metric, Axis: pk.axis}
	switch pk.kind {
	case panelPercentiles:
		p.Title += " percentiles"
	case panelTotal:
		p.Title += "/" + pk.stat
	}
	for _, m := range members {
		p.Charts = append(p.Charts, m.chart)
		p.Labels = append(p.Labels, m.label)
	}
	return p
}

func comparePanels(a, b panelKey) int {
	return cmp.Or(naturalCompare(a.metric, b.metric), strings.Compare(a.metric, b.metric),
		cmp.Compare(a.kind, b.kind), cmp.Compare(statRank(a.stat), statRank(b.stat)), strings.Compare(a.axis, b.axis))
}

func statRank(stat string) int {
	return slices.Index(histogramStats(), stat)
}

// systemCount is what the System section's heading says it holds.
type systemCount struct{ Charts, Series int }

func countSystem(families []systemFamily) systemCount {
	var n systemCount
	for _, f := range families {
		for _, p := range slices.Concat(f.Panels, f.Totals) {
			n.Charts++
			n.Series += len(p.Charts)
		}
	}
	return n
}

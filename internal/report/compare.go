package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/primeintellect/primeexporter/internal/platform"
)

// Comparison is what the compare page shows: runs of one kind side by side.
type Comparison struct {
	Kind    string
	Runs    []ComparedRun
	Found   int    // runs the paths named
	Filter  string // what the filter kept, "" for all
	Skipped []Skipped
	Header  []DiffRow // the runs' headers, a fact a row
	Config  []DiffRow // their configs, a key a row
	Summary []DiffRow // evaluations: their summaries, a key a row
	Metrics []*MetricRow
	Steps   []StepMatch
	// StepsAlone counts the steps only one run sampled.
	StepsAlone int
}

// ComparedRun is one run of a comparison.
type ComparedRun struct {
	Dir    string
	Label  string // its name, told apart from the others' when two share one
	Header Header
	// Metrics counts its series; BadLines its metrics.jsonl lines that are
	// not posts, BadLineNos the first of them.
	Metrics    int
	BadLines   int
	BadLineNos []int
}

// MetricRow is one chart of the page: one metric over one axis, a series
// for each run that holds it.
type MetricRow struct {
	Name, Axis string
	Series     []RunSeries
	// Missing are the runs that do not hold it, by index: the page names
	// them rather than leave the reader to count lines.
	Missing []int
}

// RunSeries is one run's curve of a metric, thinned as the run page thins
// it, each run apart: a spike of any run survives.
type RunSeries struct {
	Run          int
	Points       int       // the points the run holds
	X, Y         []float64 // plotted; a time-keyed row's x is seconds since the run's start
	DroppedCount int
}

// loaded is what one run's files give a comparison.
type loaded struct {
	series   []thinned
	steps    []StepSamples
	samples  []Sample // an evaluation's
	bad      int
	badLines []int
	err      error
}

// Compare reads the selected runs' curves and samples, a few runs at a
// time (a run of 10,000 steps and 500 metrics holds 5 million points until
// it is thinned), and sets them side by side. A run whose files cannot be
// read is skipped and said, as a record that cannot be read is; fewer than
// two runs left is ErrTooFew.
func Compare(sel *Selection) (*Comparison, error) {
	results := make([]loaded, len(sel.Runs))
	var wg sync.WaitGroup
	slots := make(chan struct{}, min(4, runtime.GOMAXPROCS(0)))
	for i, s := range sel.Runs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			results[i] = loadForCompare(s.Dir, s.head.Kind)
		})
	}
	wg.Wait()

	c := &Comparison{Kind: sel.Kind, Found: sel.Found, Filter: sel.Filter, Skipped: slices.Clone(sel.Skipped)}
	var kept []Selected
	var data []loaded
	for i, s := range sel.Runs {
		if err := results[i].err; err != nil {
			c.Skipped = append(c.Skipped, Skipped{Dir: s.Dir, Reason: err.Error()})
			continue
		}
		kept, data = append(kept, s), append(data, results[i])
	}
	if len(kept) < 2 {
		return nil, fmt.Errorf("%w: %d of the %d selected run(s) could be read (%v)", ErrTooFew, len(kept), len(sel.Runs), c.Skipped)
	}
	labels := runLabels(kept)
	hs := make([]Header, len(kept))
	configs := make([]map[string]any, len(kept))
	summaries := make([]map[string]any, len(kept))
	for i, s := range kept {
		h := s.head
		hs[i], configs[i], summaries[i] = h.Header, h.config, h.summary
		c.Runs = append(c.Runs, ComparedRun{Dir: s.Dir, Label: labels[i], Header: h.Header,
			Metrics: len(data[i].series), BadLines: data[i].bad, BadLineNos: data[i].badLines})
	}
	c.Header = headerRows(hs)
	c.Config = diffConfigs(configs)
	if c.Kind == KindEval {
		c.Summary = diffConfigs(summaries)
		tables := make([][]Sample, len(data))
		var runs []int
		for i, d := range data {
			if tables[i] = d.samples; len(d.samples) > 0 {
				runs = append(runs, i)
			}
		}
		if len(runs) >= 2 {
			c.Steps = []StepMatch{{Step: EvalStep, Runs: runs, Prompts: matchPrompts(tables)}}
		}
		return c, nil
	}
	c.Metrics = metricRows(data)
	steps := make([][]StepSamples, len(data))
	for i, d := range data {
		steps[i] = d.steps
	}
	c.Steps, c.StepsAlone = matchSteps(steps, labels)
	return c, nil
}

// thinned is one of a run's curves as a comparison plots it.
type thinned struct {
	name, axis string
	RunSeries
}

// loadForCompare reads one run's data and thins its curves at once, so
// that only the thinned points outlive the call.
func loadForCompare(dir, kind string) loaded {
	if kind == KindEval {
		samples, _, err := readEvalSamples(dir)
		return loaded{samples: samples, err: err}
	}
	mf, err := readMetricsFile(filepath.Join(dir, platform.MetricsFile))
	if err != nil {
		return loaded{err: err}
	}
	out := loaded{bad: mf.BadLines, badLines: mf.BadLineNos}
	for _, s := range mf.Series {
		x, y := thin(s.X, s.Y, MaxPoints)
		if s.Axis == AxisTime {
			// Each run's time counts from its own start, so that runs
			// begun days apart overlay.
			x = slices.Clone(x)
			for i := range x {
				x[i] -= mf.Start
			}
		}
		out.series = append(out.series, thinned{name: s.Name, axis: s.Axis,
			RunSeries: RunSeries{Points: len(s.X), X: slices.Clip(x), Y: slices.Clip(y), DroppedCount: s.DroppedCount}})
	}
	out.steps, out.err = readSteps(dir)
	return out
}

// metricRows makes one row a metric and axis, over every run's series, in
// the order of their names.
func metricRows(data []loaded) []*MetricRow {
	type key struct{ name, axis string }
	rows := map[key]*MetricRow{}
	for run, d := range data {
		for _, s := range d.series {
			k := key{s.name, s.axis}
			r := rows[k]
			if r == nil {
				r = &MetricRow{Name: s.name, Axis: s.axis}
				rows[k] = r
			}
			rs := s.RunSeries
			rs.Run = run
			r.Series = append(r.Series, rs)
		}
	}
	out := make([]*MetricRow, 0, len(rows))
	for _, r := range rows {
		for run := range data {
			if !slices.ContainsFunc(r.Series, func(s RunSeries) bool { return s.Run == run }) {
				r.Missing = append(r.Missing, run)
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *MetricRow) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Axis, b.Axis))
	})
	return out
}

// runLabels names each run by its title, adding its id where two runs
// share a title (three demo runs are all "demo-run"), and its directory
// where they share an id too (a copied run).
func runLabels(runs []Selected) []string {
	titles, ids := map[string]int{}, map[string]int{}
	for _, r := range runs {
		titles[r.head.Title]++
		ids[r.head.ID]++
	}
	labels := make([]string, len(runs))
	for i, r := range runs {
		h := r.head
		switch {
		case titles[h.Title] == 1:
			labels[i] = h.Title
		case ids[h.ID] == 1 && h.ID != h.Title:
			labels[i] = h.Title + " (" + h.ID + ")"
		default:
			labels[i] = h.Title + " (" + filepath.Base(r.Dir) + ")"
		}
	}
	return labels
}

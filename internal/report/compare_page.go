package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

var (
	//go:embed assets/compare.js
	compareJS string
	//go:embed assets/compare.css
	compareCSS string
	//go:embed assets/compare.html.tmpl
	compareTmpl string
)

var comparePage = template.Must(template.New("compare").Parse(compareTmpl))

// DefaultCompareFile is where prime-sync compare writes when not told.
const DefaultCompareFile = "compare.html"

// compareData is the JSON the compare page's script draws from.
type compareData struct {
	Kind       string         `json:"kind"`
	Runs       []string       `json:"runs"` // labels, by index
	XS         []xs           `json:"xs"`
	Charts     []compareChart `json:"charts"`
	Steps      []StepMatch    `json:"steps"`
	StepsAlone int            `json:"steps_alone,omitempty"`
}

// compareChart is one metric's chart: a series a run that holds it.
type compareChart struct {
	Group   string          `json:"group"`
	Name    string          `json:"name"`
	Axis    string          `json:"axis"`
	Series  []compareSeries `json:"series"`
	Missing []int           `json:"missing,omitempty"`
}

// compareSeries is one run's curve, its x shared through XS as the run
// page shares them: runs of the same steps, thinned alike, share one.
type compareSeries struct {
	Run     int    `json:"run"`
	XI      int    `json:"xi"`
	Y       string `json:"y"`
	Points  int    `json:"points"`
	Plotted int    `json:"plotted"`
	Dropped int    `json:"dropped,omitempty"`
}

// diffTable is a diff's rows as the page's template draws them.
type diffTable struct {
	ID, KeyLabel string
	All          bool // show the rows that do not differ too
	Runs         []ComparedRun
	Rows         []DiffRow
}

// runView is a run as the template shows it.
type runView struct {
	ComparedRun
	BadText string
}

// RenderCompare writes c's page to w.
func RenderCompare(w io.Writer, c *Comparison) error {
	data := compareData{Kind: c.Kind, XS: []xs{}, Charts: []compareChart{}, Steps: c.Steps, StepsAlone: c.StepsAlone}
	if data.Steps == nil {
		data.Steps = []StepMatch{}
	}
	for _, r := range c.Runs {
		data.Runs = append(data.Runs, r.Label)
	}
	ix := xIndex{byHash: map[uint64][]int{}, all: &data.XS}
	for _, m := range c.Metrics {
		ch := compareChart{Group: Group(m.Name), Name: m.Name, Axis: m.Axis, Missing: m.Missing}
		for _, s := range m.Series {
			ch.Series = append(ch.Series, compareSeries{Run: s.Run, XI: ix.add(m.Axis, s.X), Y: float32s(s.Y),
				Points: s.Points, Plotted: len(s.Y), Dropped: s.DroppedCount})
		}
		data.Charts = append(data.Charts, ch)
	}
	// encoding/json escapes <, > and &, so no run text ends the script
	// element that holds it.
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	runs := make([]runView, len(c.Runs))
	for i, r := range c.Runs {
		runs[i] = runView{ComparedRun: r, BadText: badLinesText(r.BadLines, r.BadLineNos)}
	}
	differing := 0
	for _, r := range c.Config {
		if r.Differs {
			differing++
		}
	}
	var buf bytes.Buffer
	if err := comparePage.Execute(&buf, struct {
		Kind, Filter                           string
		Found, ConfigDiffers, StepsAlone       int
		Runs                                   []runView
		Skipped                                []Skipped
		HeaderTable, ConfigTable, SummaryTable diffTable
		Metrics                                []*MetricRow
		Steps                                  []StepMatch
		Data                                   template.JS
		UPlot, Common, Script                  template.JS
		UPlotCSS, Style                        template.CSS
		License, Version                       string
	}{
		Kind: c.Kind, Filter: c.Filter, Found: c.Found, ConfigDiffers: differing, StepsAlone: c.StepsAlone,
		Runs: runs, Skipped: c.Skipped, Metrics: c.Metrics, Steps: c.Steps,
		HeaderTable:  diffTable{ID: "runs-table", All: true, Runs: c.Runs, Rows: c.Header},
		ConfigTable:  diffTable{ID: "config-table", KeyLabel: "key", Runs: c.Runs, Rows: c.Config},
		SummaryTable: diffTable{ID: "summary-table", KeyLabel: "key", All: true, Runs: c.Runs, Rows: c.Summary},
		Data:         template.JS(raw), UPlot: template.JS(uplotJS), Common: template.JS(commonJS), Script: template.JS(compareJS),
		UPlotCSS: template.CSS(uplotCSS), Style: template.CSS(reportCSS + compareCSS), License: uplotLicense, Version: UPlotVersion,
	}); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// badLinesText says which lines of a run's metrics.jsonl were passed over.
func badLinesText(n int, first []int) string {
	if n == 0 {
		return ""
	}
	nums := make([]string, len(first))
	for i, l := range first {
		nums[i] = strconv.Itoa(l)
	}
	list := strings.Join(nums, ", ")
	if more := n - len(first); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	if n == 1 {
		return "metrics.jsonl line " + list + " is not a metrics post (damaged, or cut short); it is not shown."
	}
	return "metrics.jsonl lines " + list + " are not metrics posts (damaged, or cut short); they are not shown."
}

// ErrExists is an output file that is already there: a comparison never
// writes over a file.
var ErrExists = errors.New("is already there: prime-sync compare never writes over a file")

// WriteCompare writes c's page to path, owner-only like the run pages, and
// never over a file that is there: the page is written beside it under a
// temporary name and then linked to path, which fails if path exists, so
// that neither an earlier page nor a file that happens to bear the name is
// lost, and no reader sees half a page.
func WriteCompare(c *Comparison, path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s %w: remove it, or name another file with -o", path, ErrExists)
	}
	var buf bytes.Buffer
	if err := RenderCompare(&buf, c); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(buf.Bytes())
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %w: remove it, or name another file with -o", path, ErrExists)
		}
		return err
	}
	return nil
}

package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"math"
	"strconv"
)

// The vendored chart library: uPlot 1.6.32 from npm (dist/uPlot.iife.min.js
// and dist/uPlot.min.css), MIT, its licence in assets/uPlot.LICENSE.
var (
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
	//go:embed assets/uPlot.LICENSE
	uplotLicense string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/page.html.tmpl
	pageTmpl string
)

// UPlotVersion is the vendored uPlot's version.
const UPlotVersion = "1.6.32"

var page = template.Must(template.New("page").Parse(pageTmpl))

// chart is one series on the page: its points thinned to at most
// MaxPoints, and how many the run holds.
type chart struct {
	Group        string  `json:"group"`
	Name         string  `json:"name"`
	Axis         string  `json:"axis"`
	Points       int     `json:"points"`
	X            numbers `json:"x"`
	Y            numbers `json:"y"`
	Dropped      numbers `json:"dropped,omitempty"`
	DroppedCount int     `json:"dropped_count,omitempty"`
}

// pageData is the JSON the page's script draws from.
type pageData struct {
	Kind     string        `json:"kind"`
	Charts   []chart       `json:"charts"`
	BadLines int           `json:"bad_metric_lines,omitempty"`
	Steps    []StepSamples `json:"steps,omitempty"`
	Eval     *evalData     `json:"eval,omitempty"`
}

type evalData struct {
	Samples    []Sample `json:"samples"`
	BadSamples int      `json:"bad_samples,omitempty"`
}

// numbers writes floats in their shortest form; a page of 500 curves is
// mostly digits.
type numbers []float64

func (ns numbers) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(ns)*10)
	b = append(b, '[')
	for i, f := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	return append(b, ']'), nil
}

// Render writes r's page to w.
func Render(w io.Writer, r *Report) error {
	data := pageData{Kind: r.Header.Kind, BadLines: r.BadLines, Steps: r.Steps, Charts: []chart{}}
	for _, s := range r.Series {
		x, y := thin(s.X, s.Y, MaxPoints)
		data.Charts = append(data.Charts, chart{Group: Group(s.Name), Name: s.Name, Axis: s.Axis, Points: len(s.X),
			X: x, Y: y, Dropped: s.Dropped, DroppedCount: s.DroppedCount})
	}
	if r.Eval != nil {
		data.Eval = &evalData{Samples: r.Eval.Samples, BadSamples: r.Eval.BadSamples}
	}
	// encoding/json escapes <, > and &, so no run text ends the script
	// element that holds it.
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := page.Execute(&buf, struct {
		H                   Header
		Summary             [][2]string
		Data                template.JS
		UPlot, Script       template.JS
		UPlotCSS, Style     template.CSS
		License, Version    string
		Charts, SampleSteps int
	}{
		H: r.Header, Data: template.JS(raw), UPlot: template.JS(uplotJS), Script: template.JS(reportJS),
		UPlotCSS: template.CSS(uplotCSS), Style: template.CSS(reportCSS), License: uplotLicense, Version: UPlotVersion,
		Charts: len(data.Charts), SampleSteps: len(r.Steps), Summary: evalSummary(r.Eval),
	}); err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func evalSummary(e *Eval) [][2]string {
	if e == nil {
		return nil
	}
	return e.Summary
}

package report

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"html/template"
	"io"
	"math"
	"slices"
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
	//go:embed assets/common.js
	commonJS string
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
// MaxPoints, and how many the run holds. Its x are XS[XI], shared with
// every curve of the same steps; its y are float32s, little-endian, in
// base64: a chart draws no finer than 7 digits, and a 500-curve page is
// mostly these numbers (as JSON text they made it three times as big).
type chart struct {
	Group        string  `json:"group"`
	Name         string  `json:"name"`
	Axis         string  `json:"axis"`
	Points       int     `json:"points"`
	XI           int     `json:"xi"`
	Y            string  `json:"y"`
	Plotted      int     `json:"plotted"`
	Dropped      numbers `json:"dropped,omitempty"`
	DroppedCount int     `json:"dropped_count,omitempty"`
}

// xs is one x array of the page; steps are delta-coded (each after the
// first is its distance from the one before), so most are a digit or two.
type xs struct {
	DeltaX bool    `json:"dx,omitempty"`
	V      numbers `json:"v"`
}

// pageData is the JSON the page's script draws from.
type pageData struct {
	Kind     string         `json:"kind"`
	XS       []xs           `json:"xs"`
	Charts   []chart        `json:"charts"`
	System   []systemFamily `json:"system,omitempty"`
	Start    float64        `json:"start,omitempty"` // the run's first row, where the System section's time starts
	BadLines int            `json:"bad_metric_lines,omitempty"`
	Steps    []StepSamples  `json:"steps,omitempty"`
	Eval     *evalData      `json:"eval,omitempty"`
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

// float32s is ys as little-endian float32s in base64.
func float32s(ys []float64) string {
	b := make([]byte, 4*len(ys))
	for i, y := range ys {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(y)))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// xIndex keeps each distinct x array once.
type xIndex struct {
	byHash map[uint64][]int
	all    *[]xs
	raw    [][]float64
}

func (ix *xIndex) add(axis string, x []float64) int {
	h := fnv.New64a()
	var b [8]byte
	for _, v := range x {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		h.Write(b[:])
	}
	sum := h.Sum64()
	for _, i := range ix.byHash[sum] {
		if slices.Equal(ix.raw[i], x) {
			return i
		}
	}
	entry := xs{V: x}
	if axis == AxisStep {
		entry = xs{DeltaX: true, V: deltas(x)}
	}
	*ix.all = append(*ix.all, entry)
	ix.raw = append(ix.raw, x)
	i := len(ix.raw) - 1
	ix.byHash[sum] = append(ix.byHash[sum], i)
	return i
}

// deltas codes sorted integral steps as their first and then differences.
func deltas(x []float64) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		if i == 0 {
			out[i] = x[i]
		} else {
			out[i] = x[i] - x[i-1]
		}
	}
	return out
}

// Render writes r's page to w.
func Render(w io.Writer, r *Report) error {
	data := pageData{Kind: r.Header.Kind, BadLines: r.BadLines, Steps: r.Steps, Charts: []chart{}, XS: []xs{}, Start: r.Start}
	ix := xIndex{byHash: map[uint64][]int{}, all: &data.XS}
	for _, s := range r.Series {
		x, y := thin(s.X, s.Y, MaxPoints)
		data.Charts = append(data.Charts, chart{Group: Group(s.Name), Name: s.Name, Axis: s.Axis, Points: len(s.X),
			XI: ix.add(s.Axis, x), Y: float32s(y), Plotted: len(y), Dropped: s.Dropped, DroppedCount: s.DroppedCount})
	}
	data.System = systemSection(data.Charts)
	sys := countSystem(data.System)
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
		UPlot, Common       template.JS
		Script              template.JS
		UPlotCSS, Style     template.CSS
		License, Version    string
		Charts, SampleSteps int
		System              systemCount
	}{
		H: r.Header, Data: template.JS(raw), UPlot: template.JS(uplotJS), Common: template.JS(commonJS), Script: template.JS(reportJS),
		UPlotCSS: template.CSS(uplotCSS), Style: template.CSS(reportCSS), License: uplotLicense, Version: UPlotVersion,
		Charts: len(data.Charts) - sys.Series, SampleSteps: len(r.Steps), Summary: evalSummary(r.Eval), System: sys,
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

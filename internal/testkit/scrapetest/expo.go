package scrapetest

import (
	"fmt"
	"strings"
)

// Label is one label of a sample, its value unescaped.
type Label struct{ Name, Value string }

// Sample is one sample line of an exposition.
type Sample struct {
	// Name is the sample's own name: "x_bucket", "x_count", "x_total", ...
	Name string
	// Labels are in the order the line writes them.
	Labels []Label
	Value  float64
}

// Label returns the value of the named label and whether the sample has it.
func (s Sample) Label(name string) (string, bool) {
	for _, l := range s.Labels {
		if l.Name == name {
			return l.Value, true
		}
	}
	return "", false
}

// Family is one metric family of an exposition: the samples of a "# TYPE"
// (or, without one, the samples sharing a name).
type Family struct {
	Name string
	// Type is counter, gauge, histogram, summary or untyped.
	Type string
	// Help is the HELP text, unescaped ("" without a HELP line).
	Help    string
	Samples []Sample
}

// Parse reads a Prometheus text-format (0.0.4) exposition into its
// families, in the order they first appear. It is as strict as the server
// needs: a line it cannot read, a second TYPE or HELP for a name, a sample
// that a histogram or summary cannot own, or a _bucket without a valid le
// label is an error naming the line.
func Parse(text []byte) ([]Family, error) {
	e, err := parseExposition(string(text))
	if err != nil {
		return nil, err
	}
	return e.families(), nil
}

// exposition is a parsed text that can be rendered again: every line is
// kept, and a sample line re-renders byte for byte until its value changes.
type exposition struct {
	lines  []expoLine
	fams   []*family
	byName map[string]*family
	// newline: the text ended with a newline.
	newline bool
}

type expoLine struct {
	raw string  // the line as written, for lines that are not samples
	s   *sample // nil unless a sample line
}

type family struct {
	name, typ, help string
	typed           bool // a TYPE line was seen
	helped          bool // a HELP line was seen
	samples         []*sample
}

// sample is one sample line split so that it can be written again with a
// new value (and, for label churn, one more label) and nothing else changed.
type sample struct {
	fam       *family
	lead      string // whitespace before the name, as written
	name      string
	labelText string // "{...}" exactly as written; "" without braces
	labels    []Label
	sep       string // whitespace between name/labels and value
	valueText string // the value as written, until the value changes
	tail      string // whitespace, timestamp and trailing whitespace
	value     float64
	style     valueStyle
}

// text is the sample line as it now stands, with an extra label when
// extra is not "" (a complete `name="value"`).
func (s *sample) text(extra string) string {
	labels := s.labelText
	if extra != "" {
		labels = withLabel(labels, extra)
	}
	return s.lead + s.name + labels + s.sep + s.valueText + s.tail
}

// set changes the sample's value, written in the style the recording used.
func (s *sample) set(v float64) {
	s.value = v
	s.valueText = s.style.format(v)
}

func (e *exposition) families() []Family {
	out := make([]Family, 0, len(e.fams))
	for _, f := range e.fams {
		fam := Family{Name: f.name, Type: f.typ, Help: f.help}
		for _, s := range f.samples {
			fam.Samples = append(fam.Samples, Sample{Name: s.name, Labels: append([]Label(nil), s.labels...), Value: s.value})
		}
		out = append(out, fam)
	}
	return out
}

// render writes the exposition; extra, when not nil, gives the label to add
// to a sample's line, or "" for none, and how many copies of the line to
// write (each copy with its own label, from extra(s, i)).
func (e *exposition) render(extra func(s *sample) []string) []byte {
	var b strings.Builder
	for i, l := range e.lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if l.s == nil {
			b.WriteString(l.raw)
			continue
		}
		labels := []string{""}
		if extra != nil {
			if x := extra(l.s); x != nil {
				labels = x
			}
		}
		for j, x := range labels {
			if j > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(l.s.text(x))
		}
	}
	if e.newline {
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func parseExposition(text string) (*exposition, error) {
	e := &exposition{byName: map[string]*family{}}
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") {
		e.newline = true
		lines = lines[:len(lines)-1]
	}
	var last *family
	for i, raw := range lines {
		lineNo := i + 1
		trimmed := strings.TrimLeft(raw, " \t")
		switch {
		case strings.TrimSpace(raw) == "":
			e.lines = append(e.lines, expoLine{raw: raw})
		case strings.HasPrefix(trimmed, "#"):
			f, err := e.comment(trimmed)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			if f != nil {
				last = f
			}
			e.lines = append(e.lines, expoLine{raw: raw})
		default:
			s, err := parseSample(raw)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			f, err := e.familyFor(s.name, last)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", lineNo, err)
			}
			if f.typ == "histogram" && strings.HasSuffix(s.name, "_bucket") {
				le, ok := Sample{Labels: s.labels}.Label("le")
				if !ok {
					return nil, fmt.Errorf("line %d: histogram bucket %s has no le label", lineNo, s.name)
				}
				if _, err := parseValue(le); err != nil {
					return nil, fmt.Errorf("line %d: histogram bucket %s: le %q: %w", lineNo, s.name, le, err)
				}
			}
			s.fam = f
			f.samples = append(f.samples, s)
			last = f
			e.lines = append(e.lines, expoLine{s: s})
		}
	}
	return e, nil
}

// comment reads a comment line: HELP and TYPE declare a family (returned);
// any other comment is kept as it is.
func (e *exposition) comment(line string) (*family, error) {
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != "#" || (fields[1] != "HELP" && fields[1] != "TYPE") {
		return nil, nil
	}
	if len(fields) < 3 {
		return nil, fmt.Errorf("%s without a metric name", fields[1])
	}
	name := fields[2]
	if !validMetricName(name) {
		return nil, fmt.Errorf("%s for invalid metric name %q", fields[1], name)
	}
	f := e.byName[name]
	if f == nil {
		f = &family{name: name, typ: "untyped"}
		e.fams = append(e.fams, f)
		e.byName[name] = f
	}
	if fields[1] == "TYPE" {
		if f.typed {
			return nil, fmt.Errorf("second TYPE line for %s", name)
		}
		if len(f.samples) > 0 {
			return nil, fmt.Errorf("TYPE line for %s after its samples", name)
		}
		if len(fields) != 4 {
			return nil, fmt.Errorf("TYPE line for %s: want one type", name)
		}
		switch fields[3] {
		case "counter", "gauge", "histogram", "summary", "untyped":
		default:
			return nil, fmt.Errorf("TYPE line for %s: unknown type %q", name, fields[3])
		}
		f.typ, f.typed = fields[3], true
		return f, nil
	}
	if f.helped {
		return nil, fmt.Errorf("second HELP line for %s", name)
	}
	// The docstring is everything after the name and one space, escapes
	// \\ and \n undone.
	_, after, _ := strings.Cut(line, name)
	after = strings.TrimPrefix(after, " ")
	f.help, f.helped = unescapeHelp(after), true
	return f, nil
}

// familyFor finds the family that owns a sample name: its own family, or
// the histogram, summary or counter whose name it extends with a suffix;
// a sample nobody declared starts an untyped family of its own.
func (e *exposition) familyFor(name string, last *family) (*family, error) {
	owns := func(f *family) bool {
		if f == nil {
			return false
		}
		suffix, ok := strings.CutPrefix(name, f.name)
		if !ok {
			return false
		}
		switch f.typ {
		case "histogram":
			return suffix == "_bucket" || suffix == "_count" || suffix == "_sum" || suffix == "_created"
		case "summary":
			return suffix == "" || suffix == "_count" || suffix == "_sum" || suffix == "_created"
		case "counter":
			return suffix == "" || suffix == "_total" || suffix == "_created"
		default:
			return suffix == ""
		}
	}
	if owns(last) {
		return last, nil
	}
	if f := e.byName[name]; f != nil {
		if owns(f) {
			return f, nil
		}
		return nil, fmt.Errorf("sample %s cannot belong to %s %s", name, f.typ, f.name)
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum", "_total", "_created"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && owns(e.byName[base]) {
			return e.byName[base], nil
		}
	}
	f := &family{name: name, typ: "untyped"}
	e.fams = append(e.fams, f)
	e.byName[name] = f
	return f, nil
}

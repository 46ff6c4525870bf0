package scrapetest

import (
	"errors"
	"fmt"
	"math"
	"strconv"
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

func parseSample(raw string) (*sample, error) {
	s := &sample{}
	i := 0
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t') {
		i++
	}
	s.lead = raw[:i]
	start := i
	for i < len(raw) && isNameChar(raw[i], i == start) {
		i++
	}
	if i == start {
		return nil, fmt.Errorf("not a metric name at %q", raw[start:])
	}
	s.name = raw[start:i]
	if i < len(raw) && raw[i] == '{' {
		labels, end, err := parseLabels(raw, i)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		s.labelText, s.labels = raw[i:end], labels
		i = end
	}
	sepStart := i
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t') {
		i++
	}
	if i == sepStart || i == len(raw) {
		return nil, fmt.Errorf("%s: no value", s.name)
	}
	s.sep = raw[sepStart:i]
	valStart := i
	for i < len(raw) && raw[i] != ' ' && raw[i] != '\t' {
		i++
	}
	s.valueText = raw[valStart:i]
	v, err := parseValue(s.valueText)
	if err != nil {
		return nil, fmt.Errorf("%s: value %q: %w", s.name, s.valueText, err)
	}
	s.value, s.style = v, styleOf(s.valueText)
	s.tail = raw[i:]
	if ts := strings.TrimSpace(s.tail); ts != "" {
		if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
			return nil, fmt.Errorf("%s: timestamp %q: %w", s.name, ts, err)
		}
	}
	return s, nil
}

// parseLabels reads "{name="value",...}" starting at raw[i] == '{' and
// returns the labels and the index just past '}'.
func parseLabels(raw string, i int) ([]Label, int, error) {
	i++ // '{'
	var labels []Label
	seen := map[string]bool{}
	skip := func() {
		for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t') {
			i++
		}
	}
	for {
		skip()
		if i >= len(raw) {
			return nil, 0, errors.New("labels not closed")
		}
		if raw[i] == '}' {
			return labels, i + 1, nil
		}
		start := i
		for i < len(raw) && isLabelChar(raw[i], i == start) {
			i++
		}
		if i == start {
			return nil, 0, fmt.Errorf("not a label name at %q", raw[start:])
		}
		name := raw[start:i]
		if seen[name] {
			return nil, 0, fmt.Errorf("label %s twice", name)
		}
		seen[name] = true
		skip()
		if i >= len(raw) || raw[i] != '=' {
			return nil, 0, fmt.Errorf("label %s: no '='", name)
		}
		i++
		skip()
		if i >= len(raw) || raw[i] != '"' {
			return nil, 0, fmt.Errorf("label %s: value not quoted", name)
		}
		i++
		var v strings.Builder
		for {
			if i >= len(raw) {
				return nil, 0, fmt.Errorf("label %s: value not closed", name)
			}
			c := raw[i]
			if c == '"' {
				i++
				break
			}
			if c == '\\' {
				if i+1 >= len(raw) {
					return nil, 0, fmt.Errorf("label %s: escape at end of line", name)
				}
				switch raw[i+1] {
				case '\\':
					v.WriteByte('\\')
				case '"':
					v.WriteByte('"')
				case 'n':
					v.WriteByte('\n')
				default:
					return nil, 0, fmt.Errorf(`label %s: unknown escape \%c`, name, raw[i+1])
				}
				i += 2
				continue
			}
			v.WriteByte(c)
			i++
		}
		labels = append(labels, Label{Name: name, Value: v.String()})
		skip()
		if i < len(raw) && raw[i] == ',' {
			i++
			continue
		}
		skip()
		if i < len(raw) && raw[i] == '}' {
			return labels, i + 1, nil
		}
		return nil, 0, fmt.Errorf("after label %s: want ',' or '}'", name)
	}
}

// withLabel adds a label (a complete `name="value"`) at the end of a
// label text as written, or makes one.
func withLabel(labelText, label string) string {
	if labelText == "" {
		return "{" + label + "}"
	}
	inner := strings.TrimRight(labelText[:len(labelText)-1], " \t")
	if strings.HasSuffix(inner, "{") || strings.HasSuffix(inner, ",") {
		return inner + label + "}"
	}
	return inner + "," + label + "}"
}

func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf", "Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	if strings.ContainsAny(s, "_xXpP") || strings.EqualFold(strings.TrimLeft(s, "+-"), "infinity") || strings.EqualFold(strings.TrimLeft(s, "+-"), "inf") || strings.EqualFold(s, "nan") {
		return 0, errors.New("not a Prometheus float")
	}
	return strconv.ParseFloat(s, 64)
}

func isNameChar(c byte, first bool) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}

func isLabelChar(c byte, first bool) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
}

func validMetricName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameChar(name[i], i == 0) {
			return false
		}
	}
	return true
}

func unescapeHelp(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// valueStyle is how a recording writes a sample value, so that a changed
// value is written the same way: dcgm-exporter writes integers ("405") and
// C "%f" floats ("16.365000"); Python's prometheus_client writes repr()
// floats, Go-style exponents past six integer digits ("0.0",
// "1.7740114612872875e+09").
type valueStyle struct {
	kind     int // styleInt, styleFixed or stylePython
	decimals int // for styleFixed
}

const (
	stylePython = iota
	styleInt
	styleFixed
)

func styleOf(text string) valueStyle {
	if strings.ContainsAny(text, "eEIN") {
		return valueStyle{kind: stylePython}
	}
	dot := strings.IndexByte(text, '.')
	if dot < 0 {
		return valueStyle{kind: styleInt}
	}
	if n := len(text) - dot - 1; n == 6 {
		return valueStyle{kind: styleFixed, decimals: n}
	}
	return valueStyle{kind: stylePython}
}

func (st valueStyle) format(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	switch st.kind {
	case styleInt:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case styleFixed:
		return strconv.FormatFloat(v, 'f', st.decimals, 64)
	}
	return pythonGoString(v)
}

// pythonGoString is prometheus_client's floatToGoString: Python's repr(),
// switched to an exponent (written "e+0N") once there are more than six
// digits before the point.
func pythonGoString(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	s := pythonRepr(v)
	dot := strings.IndexByte(s, '.')
	if v > 0 && dot > 6 {
		mantissa := strings.TrimRight(s[:1]+"."+s[1:dot]+s[dot+1:], "0.")
		return mantissa + "e+0" + strconv.Itoa(dot-1)
	}
	return s
}

// pythonRepr is Python's repr() of a finite float: the shortest digits
// that read back the same, positional from 1e-4 up to 1e16, ".0" on whole
// numbers, otherwise d.ddde±XX.
func pythonRepr(v float64) string {
	if v == 0 {
		if math.Signbit(v) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(v, 'e', -1, 64)
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	var s string
	switch {
	case exp >= 16 || exp < -4:
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		s = fmt.Sprintf("%se%s%02d", m, sign, exp)
	case exp < 0:
		s = "0." + strings.Repeat("0", -exp-1) + digits
	case exp+1 >= len(digits):
		s = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	default:
		s = digits[:exp+1] + "." + digits[exp+1:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

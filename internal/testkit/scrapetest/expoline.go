package scrapetest

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

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

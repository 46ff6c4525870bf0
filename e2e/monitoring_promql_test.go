package e2e

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// promqlNames is what one PromQL expression reads: the metric names it
// selects and the label names it matches, groups or joins on.
type promqlNames struct {
	metrics []string
	labels  []string
}

// promqlFunctions are the functions and aggregations the shipped rules and
// dashboard may call. An identifier followed by "(" that is not here fails
// the read, so a typo in a function name is not taken for a metric.
var promqlFunctions = map[string]bool{
	"abs": true, "absent": true, "absent_over_time": true, "avg": true, "avg_over_time": true,
	"bottomk": true, "ceil": true, "changes": true, "clamp": true, "clamp_max": true, "clamp_min": true,
	"count": true, "count_over_time": true, "delta": true, "deriv": true, "floor": true, "group": true,
	"histogram_quantile": true, "idelta": true, "increase": true, "irate": true, "label_join": true,
	"label_replace": true, "last_over_time": true, "max": true, "max_over_time": true, "min": true,
	"min_over_time": true, "predict_linear": true, "present_over_time": true, "quantile": true,
	"quantile_over_time": true, "rate": true, "resets": true, "round": true, "scalar": true, "sort": true,
	"sort_desc": true, "stddev": true, "sum": true, "sum_over_time": true, "time": true, "timestamp": true,
	"topk": true, "vector": true,
}

// promqlLabelLists are the keywords followed by a parenthesised list of
// label names; group_left and group_right may also stand alone.
var promqlLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// promqlOperators are the keywords that join two expressions.
var promqlOperators = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true}

// readPromQL lists the metric and label names of expr. It reads the PromQL
// the shipped files use and fails on anything else rather than guess: a
// selector by __name__ (the name must be written out), a template variable
// outside a string or a range, an unknown function.
func readPromQL(expr string) (promqlNames, error) {
	var out promqlNames
	s := expr
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			end, err := promqlStringEnd(s, i)
			if err != nil {
				return out, err
			}
			i = end
		case c == '[':
			// A range or subquery: a duration, or a Grafana interval
			// variable ($__rate_interval).
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return out, fmt.Errorf("unclosed [ at %d", i)
			}
			i += end + 1
		case c == '{':
			labels, end, err := promqlMatchers(s, i)
			if err != nil {
				return out, err
			}
			out.labels = append(out.labels, labels...)
			i = end
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isIdentByte(s[i]) || s[i] == '.' || (s[i] == '+' || s[i] == '-') && (s[i-1] == 'e' || s[i-1] == 'E')) {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(s) && (isIdentByte(s[i]) || s[i] == ':') {
				i++
			}
			word := s[start:i]
			next := skipSpace(s, i)
			switch {
			case promqlLabelLists[word]:
				if next < len(s) && s[next] == '(' {
					labels, end, err := promqlLabelList(s, next)
					if err != nil {
						return out, fmt.Errorf("%s: %w", word, err)
					}
					out.labels = append(out.labels, labels...)
					i = end
				} else if word != "group_left" && word != "group_right" {
					return out, fmt.Errorf("%s without a label list at %d", word, start)
				}
			case promqlOperators[word], word == "Inf", word == "NaN", word == "inf", word == "nan":
			case promqlFunctions[word] && (strings.HasPrefix(s[next:], "by") || strings.HasPrefix(s[next:], "without")):
				// An aggregation with its grouping first: sum by (a) (…).
			case next < len(s) && s[next] == '(':
				if !promqlFunctions[word] {
					return out, fmt.Errorf("unknown function %q at %d", word, start)
				}
			case word == "__name__":
				return out, fmt.Errorf("__name__ at %d: write the metric's name out", start)
			default:
				out.metrics = append(out.metrics, word)
			}
		case c == '$':
			return out, fmt.Errorf("a template variable outside a string or a range at %d", i)
		case strings.IndexByte("+-*/%^=!<>,()", c) >= 0:
			i++
		default:
			return out, fmt.Errorf("unexpected %q at %d", c, i)
		}
	}
	slices.Sort(out.metrics)
	slices.Sort(out.labels)
	out.metrics = slices.Compact(out.metrics)
	out.labels = slices.Compact(out.labels)
	return out, nil
}

// promqlMatchers reads {name op "value", …} starting at s[i] == '{'.
func promqlMatchers(s string, i int) (labels []string, end int, err error) {
	i++
	for {
		i = skipSpace(s, i)
		if i < len(s) && s[i] == '}' {
			return labels, i + 1, nil
		}
		start := i
		for i < len(s) && isIdentByte(s[i]) {
			i++
		}
		name := s[start:i]
		if name == "" || !isIdentStart(name[0]) {
			return nil, 0, fmt.Errorf("a label name expected at %d", start)
		}
		if name == "__name__" {
			return nil, 0, fmt.Errorf("__name__ at %d: write the metric's name out", start)
		}
		labels = append(labels, name)
		i = skipSpace(s, i)
		for i < len(s) && strings.IndexByte("=!~", s[i]) >= 0 {
			i++
		}
		i = skipSpace(s, i)
		if i >= len(s) || strings.IndexByte("\"'`", s[i]) < 0 {
			return nil, 0, fmt.Errorf("a quoted value expected after %s at %d", name, i)
		}
		if i, err = promqlStringEnd(s, i); err != nil {
			return nil, 0, err
		}
		i = skipSpace(s, i)
		if i < len(s) && s[i] == ',' {
			i++
		}
	}
}

// promqlLabelList reads (a, b, …) starting at s[i] == '('.
func promqlLabelList(s string, i int) (labels []string, end int, err error) {
	close := strings.IndexByte(s[i:], ')')
	if close < 0 {
		return nil, 0, fmt.Errorf("unclosed ( at %d", i)
	}
	for _, f := range strings.Split(s[i+1:i+close], ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		for j := 0; j < len(f); j++ {
			if !isIdentByte(f[j]) || j == 0 && !isIdentStart(f[j]) {
				return nil, 0, fmt.Errorf("%q is not a label name", f)
			}
		}
		labels = append(labels, f)
	}
	return labels, i + close + 1, nil
}

// promqlStringEnd returns the index after the string literal at s[i].
func promqlStringEnd(s string, i int) (int, error) {
	quote := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && quote != '`':
			j++
		case s[j] == quote:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unclosed string at %d", i)
}

func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
		i++
	}
	return i
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentByte(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func TestThePromQLReaderFindsEveryMetricAndLabelAndRefusesWhatItCannotRead(t *testing.T) {
	for _, tc := range []struct {
		name, expr      string
		metrics, labels []string
		err             string
	}{
		{name: "a bare name", expr: "up", metrics: []string{"up"}},
		{name: "matchers and a range", expr: `increase(a_total{reason!~"x|y", signal="logs"}[10m]) > 0`,
			metrics: []string{"a_total"}, labels: []string{"reason", "signal"}},
		{name: "aggregation, join and a Grafana range", expr: `sum by (instance, exporter) (q_size{instance=~"$instance"}) / on (instance, exporter) group_left q_cap[$__rate_interval]`,
			metrics: []string{"q_cap", "q_size"}, labels: []string{"exporter", "instance"}},
		{name: "set operators and numbers", expr: `(a > 0.5e-3) unless on(instance) (b == bool 1) or vector(0)`,
			metrics: []string{"a", "b"}, labels: []string{"instance"}},
		{name: "histogram quantile", expr: `histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))`,
			metrics: []string{"h_bucket"}, labels: []string{"le"}},
		{name: "a label_replace's strings are no names", expr: `label_replace(m, "dst", "$1", "src", "(.*)")`, metrics: []string{"m"}},
		{name: "an unknown function", expr: `rat(m[5m])`, err: "unknown function"},
		{name: "a name by __name__", expr: `{__name__=~"otelcol_.*"}`, err: "__name__"},
		{name: "a variable outside a string", expr: `m > $threshold`, err: "template variable"},
		{name: "an unclosed matcher", expr: `m{a="b"`, err: "label name expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readPromQL(tc.expr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("readPromQL(%q) = %v, %v; want an error with %q", tc.expr, got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("readPromQL(%q): %v", tc.expr, err)
			}
			if !reflect.DeepEqual(got.metrics, tc.metrics) || !reflect.DeepEqual(got.labels, tc.labels) {
				t.Fatalf("readPromQL(%q) = metrics %v labels %v; want %v %v", tc.expr, got.metrics, got.labels, tc.metrics, tc.labels)
			}
		})
	}
}

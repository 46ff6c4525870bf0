package scrapetest

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The checker's grammar.
const (
	checkName = `[a-zA-Z_:][a-zA-Z0-9_:]*`
	checkPair = `[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"(?:[^"\\\n]|\\[\\"n])*"`
)

var (
	sampleRE = regexp.MustCompile(`^(` + checkName + `)(\{[ \t]*(?:` + checkPair + `[ \t]*,[ \t]*)*(?:` + checkPair + `)?[ \t]*,?[ \t]*\})?[ \t]+([^ \t]+)(?:[ \t]+(-?[0-9]+))?[ \t]*$`)
	pairRE   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\\n]|\\[\\"n])*)"`)
	helpRE   = regexp.MustCompile(`^#[ \t]+HELP[ \t]+(` + checkName + `)(?:[ \t].*)?$`)
	typeRE   = regexp.MustCompile(`^#[ \t]+TYPE[ \t]+(` + checkName + `)[ \t]+(counter|gauge|histogram|summary|untyped)[ \t]*$`)
)

// checkExposition is a small checker of the Prometheus text format (0.0.4)
// written apart from the package's parser, so that tests do not judge what
// the server writes with the code that wrote it. (The real parser,
// github.com/prometheus/common/expfmt, is not a dependency of the module.)
// It checks the line grammar, TYPE/HELP placement, one line per series,
// and that every histogram series has cumulative buckets ending in +Inf
// with _count equal to the +Inf bucket.
func checkExposition(text string) error {
	if text == "" || !strings.HasSuffix(text, "\n") {
		return errors.New("not newline-terminated")
	}
	types := map[string]string{}
	helps := map[string]bool{}
	seenSamples := map[string]bool{} // family names with samples
	series := map[string]bool{}
	type hist struct {
		buckets  map[float64]float64
		count    float64
		hasCount bool
	}
	hists := map[string]*hist{}
	familyOf := func(sample string) string {
		if _, ok := types[sample]; ok {
			return sample
		}
		for _, suf := range []string{"_bucket", "_count", "_sum", "_total"} {
			if base, ok := strings.CutSuffix(sample, suf); ok {
				switch t := types[base]; {
				case t == "histogram", t == "summary" && suf != "_bucket", t == "counter" && suf == "_total":
					return base
				}
			}
		}
		return sample
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, line := range lines {
		at := func(format string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", i+1, line, fmt.Sprintf(format, a...))
		}
		switch {
		case strings.TrimSpace(line) == "":
			continue
		case strings.HasPrefix(line, "#"):
			fields := strings.Fields(line)
			if len(fields) >= 2 && fields[1] == "HELP" {
				m := helpRE.FindStringSubmatch(line)
				if m == nil {
					return at("bad HELP")
				}
				if helps[m[1]] {
					return at("second HELP")
				}
				helps[m[1]] = true
			}
			if len(fields) >= 2 && fields[1] == "TYPE" {
				m := typeRE.FindStringSubmatch(line)
				if m == nil {
					return at("bad TYPE")
				}
				if _, ok := types[m[1]]; ok {
					return at("second TYPE")
				}
				if seenSamples[m[1]] {
					return at("TYPE after samples")
				}
				types[m[1]] = m[2]
			}
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			return at("not a sample line")
		}
		var v float64
		switch m[3] {
		case "+Inf":
			v = math.Inf(1)
		case "-Inf":
			v = math.Inf(-1)
		case "NaN":
			v = math.NaN()
		default:
			var err error
			if v, err = strconv.ParseFloat(m[3], 64); err != nil || strings.ContainsAny(m[3], "iInN_xX") {
				return at("bad value %q", m[3])
			}
		}
		labels := map[string]string{}
		for _, p := range pairRE.FindAllStringSubmatch(m[2], -1) {
			if _, dup := labels[p[1]]; dup {
				return at("label %s twice", p[1])
			}
			labels[p[1]] = p[2]
		}
		var keys []string
		for k, lv := range labels {
			keys = append(keys, k+"="+lv)
		}
		sort.Strings(keys)
		id := m[1] + "{" + strings.Join(keys, ",") + "}"
		if series[id] {
			return at("series written twice")
		}
		series[id] = true
		fam := familyOf(m[1])
		seenSamples[fam] = true
		if types[fam] != "histogram" {
			continue
		}
		var rest []string
		for _, k := range keys {
			if !strings.HasPrefix(k, "le=") {
				rest = append(rest, k)
			}
		}
		hkey := fam + "{" + strings.Join(rest, ",") + "}"
		h := hists[hkey]
		if h == nil {
			h = &hist{buckets: map[float64]float64{}}
			hists[hkey] = h
		}
		switch strings.TrimPrefix(m[1], fam) {
		case "_bucket":
			le, ok := labels["le"]
			if !ok {
				return at("bucket without le")
			}
			bound, err := strconv.ParseFloat(le, 64)
			if err != nil {
				return at("bad le %q", le)
			}
			h.buckets[bound] = v
		case "_count":
			h.count, h.hasCount = v, true
		}
	}
	for key, h := range hists {
		if len(h.buckets) == 0 {
			continue // _count and _sum alone: a histogram without buckets
		}
		var bounds []float64
		for b := range h.buckets {
			bounds = append(bounds, b)
		}
		sort.Float64s(bounds)
		if !math.IsInf(bounds[len(bounds)-1], 1) {
			return fmt.Errorf("%s: no +Inf bucket", key)
		}
		for i := 1; i < len(bounds); i++ {
			if h.buckets[bounds[i]] < h.buckets[bounds[i-1]] {
				return fmt.Errorf("%s: bucket le=%v (%v) below le=%v (%v)", key, bounds[i], h.buckets[bounds[i]], bounds[i-1], h.buckets[bounds[i-1]])
			}
		}
		if !h.hasCount || h.count != h.buckets[math.Inf(1)] {
			return fmt.Errorf("%s: _count %v, +Inf bucket %v", key, h.count, h.buckets[math.Inf(1)])
		}
	}
	return nil
}

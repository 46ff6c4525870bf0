package report

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// DiffRow is one key of the runs' configs, or one fact of their headers,
// across the runs.
type DiffRow struct {
	Key string
	// Values are by run; nil where the run has no such key.
	Values []*string
	// Differs is true when the values are not all present and equal: a key
	// one run lacks is a difference, since the run then ran on a default
	// the page cannot know.
	Differs bool
}

// diffConfigs sets the runs' configs side by side, a row a key: nested
// maps flattened by path (trainer.optimizer.lr), in the key order of
// naturalCompare. Only maps are flattened. A list is one value, written as
// JSON, because two lists of other lengths would give keys that line up by
// position only; an empty map is the value {}, so a key holding one is
// still present.
func diffConfigs(configs []map[string]any) []DiffRow {
	flat := make([]map[string]string, len(configs))
	keys := map[string]bool{}
	for i, c := range configs {
		flat[i] = map[string]string{}
		flattenConfig("", c, flat[i])
		for k := range flat[i] {
			keys[k] = true
		}
	}
	sorted := slices.SortedFunc(maps.Keys(keys), func(a, b string) int {
		return cmpNatural(a, b)
	})
	rows := make([]DiffRow, 0, len(sorted))
	for _, k := range sorted {
		row := DiffRow{Key: k, Values: make([]*string, len(flat))}
		for i, f := range flat {
			if v, ok := f[k]; ok {
				row.Values[i] = &v
			}
		}
		row.Differs = differs(row.Values)
		rows = append(rows, row)
	}
	return rows
}

func cmpNatural(a, b string) int {
	if c := naturalCompare(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// flattenConfig writes m's leaves into out under their dotted paths.
func flattenConfig(prefix string, m map[string]any, out map[string]string) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			flattenConfig(prefix+k+".", sub, out)
			continue
		}
		out[prefix+k] = configValue(v)
	}
}

// configValue writes a leaf as JSON, so that the text "1" and the number 1
// differ and show apart; a number in its shortest form, so that 1e-6 and
// 0.000001, one value written two ways, do not.
func configValue(v any) string {
	if n, ok := v.(json.Number); ok {
		s := n.String()
		if !strings.ContainsAny(s, ".eE") {
			return s // an integer, to its last digit
		}
		if f, err := n.Float64(); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return s
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(raw)
}

func differs(values []*string) bool {
	for _, v := range values {
		if v == nil || *v != *values[0] {
			return true
		}
	}
	return false
}

// headerRows sets the runs' headers side by side, a row a fact, in the
// order the run page lists them; a spec field the run does not have (a
// max steps of 0, say) is absent.
func headerRows(hs []Header) []DiffRow {
	var labels []string
	seen := map[string]bool{}
	for _, h := range hs {
		for _, f := range h.Fields {
			if !seen[f[0]] {
				seen[f[0]] = true
				labels = append(labels, f[0])
			}
		}
	}
	type fact struct {
		label string
		value func(Header) string
	}
	facts := []fact{
		{"Name", func(h Header) string { return h.Title }},
		{"Run id", func(h Header) string { return h.ID }},
		{"Identity", func(h Header) string { return h.Identity }},
		{"Status", func(h Header) string { return h.Status }},
		{"Error", func(h Header) string { return h.Error }},
		{"Exit code", func(h Header) string { return h.ExitCode }},
		{"Model", func(h Header) string { return h.Model }},
		{"Environments", func(h Header) string { return strings.Join(h.Environments, ", ") }},
	}
	for _, l := range labels {
		facts = append(facts, fact{l, func(h Header) string {
			for _, f := range h.Fields {
				if f[0] == l {
					return f[1]
				}
			}
			return ""
		}})
	}
	facts = append(facts,
		fact{"Created", func(h Header) string { return h.Created }},
		fact{"Updated", func(h Header) string { return h.Updated }},
		fact{"Finished", func(h Header) string { return h.Finished }},
		fact{"Synced", func(h Header) string { return map[bool]string{true: "yes", false: "no"}[h.Synced] }},
		fact{"Platform", func(h Header) string { return h.Sync }},
	)
	var rows []DiffRow
	for _, f := range facts {
		row := DiffRow{Key: f.label, Values: make([]*string, len(hs))}
		some := false
		for i, h := range hs {
			if v := f.value(h); v != "" {
				row.Values[i], some = &v, true
			}
		}
		if !some {
			continue // a fact no run has (an error, for runs that all completed)
		}
		row.Differs = differs(row.Values)
		rows = append(rows, row)
	}
	return rows
}

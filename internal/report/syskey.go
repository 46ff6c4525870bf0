package report

import (
	"slices"
	"strings"
)

// systemGroup is the group of the ambient metrics the exporter writes into
// a run (internal/ambient's Prefix, without its slash).
const systemGroup = "system"

// systemKey is an ambient key read back into its parts:
// system/vllm.ttft_s{engine=0}/p50 is the metric vllm.ttft_s of the family
// vllm, with the attributes engine=0 and the statistic p50.
type systemKey struct {
	family string // cpu, memory, …, or "other"
	metric string // the name without system/, attributes or statistic
	attrs  string // the folded attributes as folded: keys sorted, escaped
	stat   string // a histogram statistic (histogramStats), or ""
}

// systemFamilies are the System section's sub-headings, name and title,
// in its order: the host, then what runs on it, as W&B's System panel
// does. A metric of no family here is in "other", last.
func systemFamilies() [][2]string {
	return [][2]string{{"cpu", "CPU"}, {"memory", "Memory"}, {"disk", "Disk"}, {"network", "Network"},
		{"proc", "Processes"}, {"gpu", "GPU"}, {"vllm", "vLLM"}, {"other", "Other"}}
}

// histogramStats are the suffixes a histogram's keys end in
// (internal/stepmetrics), in the order a chart lists them.
func histogramStats() []string {
	return []string{"count", "sum", "mean", "min", "max", "p50", "p90", "p99"}
}

func isPercentile(stat string) bool {
	return stat == "p50" || stat == "p90" || stat == "p99"
}

// parseSystemKey reads name, a key of the system group. The exporter
// writes a histogram's statistic after the attributes
// (vllm.ttft_s{engine=0}/p50); one before them (vllm.ttft_s/p50{engine=0})
// is read the same, so either writer's keys share a chart.
func parseSystemKey(name string) systemKey {
	rest := strings.TrimPrefix(name, systemGroup+"/")
	head, attrs, tail := rest, "", ""
	if open := strings.IndexByte(rest, '{'); open >= 0 {
		if end := closingBrace(rest, open+1); end >= 0 {
			head, attrs, tail = rest[:open], rest[open+1:end], rest[end+1:]
		}
	}
	k := systemKey{metric: head + tail, attrs: attrs}
	if i := strings.LastIndexByte(k.metric, '/'); i >= 0 && slices.Contains(histogramStats(), k.metric[i+1:]) {
		k.metric, k.stat = k.metric[:i], k.metric[i+1:]
	}
	k.family = "other"
	fam, _, _ := strings.Cut(k.metric, ".")
	for _, f := range systemFamilies() {
		if f[0] == fam {
			k.family = fam
		}
	}
	return k
}

// closingBrace is the index of the } that ends folded attributes starting
// at s[from:]; an escaped \} is text. -1 when there is none.
func closingBrace(s string, from int) int {
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '}':
			return i
		}
	}
	return -1
}

// notHistogram makes k an ordinary metric whose name ends in what looked
// like a statistic: a metric is a histogram only when it has a count.
func (k *systemKey) notHistogram() {
	if k.stat != "" {
		k.metric, k.stat = k.metric+"/"+k.stat, ""
	}
}

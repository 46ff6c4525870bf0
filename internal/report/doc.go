// Package report writes a run's report page: one self-contained HTML file
// (report.html, beside the run) that shows an offline run with no server
// and no network. prime-sync report is its command.
//
// Decisions, and why:
//
//   - One file, everything inside. The page must open from a laptop's
//     disk, an air-gapped cluster's, or an attachment: the chart library
//     (uPlot, vendored in assets/ with its licence and version), the page's
//     own script and style, and the run's data are embedded. The data is a
//     JSON document in a script element of type application/json, written
//     by encoding/json, which escapes <, > and &, so no run text can end
//     the element; the page puts text in with textContent only.
//
//   - What the directory holds, as it holds it. The header is run.json
//     (or evaluation.json) and sync.json; the curves are metrics.jsonl, one
//     post per line, posts of one step merged as the platform merges them
//     (a later value of a key wins); the samples are the step's Parquet
//     objects read back with arrow-go, the reader prime-sync already links,
//     as one table in sample_id order. The exporter never writes a
//     non-finite value, but a file another writer made may hold null, a
//     string or Python's NaN: such a value is not plotted, and its chart
//     marks where it was and counts it.
//
//   - Thinning, so that a big run opens fast. A series of more than
//     MaxPoints points is cut into MaxPoints/2 buckets of consecutive
//     points; each bucket keeps its minimum and its maximum, in the order
//     they came, at the bucket's first and last x (thin.go). A spike
//     survives, which an average or a stride would lose, moved by less
//     than a bucket (under a pixel). The thinned x depend on the x alone,
//     so a run's curves share them: each distinct x array is written once
//     (steps delta-coded), and each curve's y as base64 float32s. Each
//     chart says how many points the run holds and how many it plots.
//     Charts are drawn when they scroll into view, so a page of 500
//     metrics draws the few on screen first. A 10,000-step, 500-metric
//     run gives a 4.2 MB page, ready in about 1.2 s (prime-sync.md).
//
//   - A System section, as W&B's System panel: the ambient metrics the
//     exporter writes under system/ (internal/ambient) are taken out of the
//     curves and shown after them, a sub-heading a family (cpu, memory,
//     disk, network, proc, gpu, vllm, other; system.go), over the time
//     since the run's first row, which reads the same in any time zone.
//     Series that differ only in their folded attributes share one chart,
//     a line each, labelled by the attributes, and a histogram's p50, p90
//     and p99 share one: eight GPUs of two nodes would otherwise make
//     sixteen charts a metric, and the lines to compare would be apart. A
//     histogram's count, sum, mean, min and max are folded away: scraped,
//     they count from the server's start, and would crowd the latencies.
//     The grouping is made here, in Go, so that the tests read it; the
//     page only draws it. A run without system/ keys has no section.
//
//   - Sample text is cut at MaxCellBytes a cell, saying so, so that one
//     run of long chats does not make a page no browser opens.
package report

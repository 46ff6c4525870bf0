// Package report writes a run's report page: one self-contained HTML file
// (report.html, beside the run) that shows an offline run with no server
// and no network. prime-sync report is its command. It also writes the
// compare page (prime-sync compare): several runs on one page, made the
// same way (compare*.go, the decisions at the end).
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
//
// The compare page (compare.go, compare_select.go, compare_diff.go,
// compare_samples.go, compare_page.go; assets/compare.*), and why:
//
//   - The run page's parts, not a second page's: the runs are read by the
//     same readers (readHead, readMetricsFile, readSteps, readEvalSamples),
//     thinned by the same thin, embedded as the same shared x arrays and
//     float32 ys, drawn by the same vendored uPlot, and the two scripts
//     share assets/common.js. Run text goes in as text only, as on the run
//     page: the data as one JSON document, the tables through html/template.
//
//   - Runs of one kind. A training run's curves and step tables have
//     nothing to set beside an evaluation's summary and samples, so a mix
//     is refused at the command line, naming which run is which and the
//     -kind flag that picks one. Evaluations compare by header, config,
//     summary and samples.
//
//   - How runs align. One chart a metric and axis, a line a run in the
//     run's colour. Step rows align on the step. Time-keyed rows align on
//     the time since each run's own first row (metricsFile.Start), since
//     runs begun days apart are compared by how far in they were; a run
//     that lacks a metric is named under its chart.
//
//   - What is thinned: each run's series alone, exactly as its own page
//     thins it (MaxPoints), so a spike of any run survives; a run is
//     thinned as soon as it is read, so only thinned points outlive it, and
//     at most four runs (one a core) are read at once.
//
//   - What differs. Configs are flattened by path (maps only; a list is one
//     value: two lists of other lengths would line up by position only),
//     values compared as JSON text with numbers in their shortest form, so
//     1e-6 and 0.000001 are one value and the text "1" is not the number 1.
//     A key a run lacks is a difference (the run ran on a default the page
//     cannot know). The page shows only the differing keys, with a switch
//     for all.
//
//   - How prompts are matched: rows of the same step with the same task and
//     the same prompt text, exactly; a looser match would put answers to
//     different questions side by side. Prompts come in the order the runs
//     first ask them, each run's rows in sample_id order. Only steps two or
//     more runs sampled are set side by side.
//
//   - Nothing is written over: the page is written under a temporary name
//     and hard-linked to its path, which fails if anything is there.
//
//   - Measured (docs/prime-sync.md#comparing-runs): 20 runs of 10,000 steps
//     and 500 metrics give a page of 54.6 MB, ready in 1.7 to 2.4 s in
//     headless Chromium on a shared 2-core machine; reading their 2.3 GB of
//     metrics takes 55 to 85 s, bound by encoding/json. The page is mostly
//     the curves, about 2.7 MB a run: each run keeps its own page's
//     thinning, so that a comparison shows what the run pages show.
package report

// Package scrapetest is test support only: no production code imports it.
//
// The collector scrapes NVIDIA dcgm-exporter (GPU metrics) and vLLM's
// /metrics with its prometheus receiver. Neither a GPU nor a vLLM server
// exists where the tests run, so this package stands in for both: a Server
// re-serves a real recorded /metrics text (DCGM4GPU2Pods, VLLMV1, or any
// other Prometheus text-format exposition) over HTTP on a loopback port,
// and between scrapes it advances the text the way a live exporter would:
//
//   - counters (TYPE counter, and untyped "_total" series) grow by a positive
//     amount each scrape;
//   - histograms take new observations each scrape: every bucket whose le is
//     at or above an observation grows with it, so buckets stay cumulative
//     (non-decreasing in le, never decreasing over time), _count stays equal
//     to the +Inf bucket and _sum grows by the observations themselves;
//   - a few known gauges move within plausible bounds (GPU utilisation in
//     [0,100], framebuffer used + free constant per GPU, vLLM KV-cache usage
//     in [0,1], ...); every other gauge keeps its recorded value;
//   - label sets, HELP, TYPE, comments and line order stay exactly as
//     recorded, escaping included.
//
// The first scrape answers the recorded text byte for byte. Everything is
// deterministic for a seed. A test switches the server's Mode at run time to
// make the target go down, answer 503, answer garbage, or churn a label (a
// new label value every scrape, to exercise key caps), and waits for scrapes
// with Scrapes or WaitScrapes.
//
// testdata/README.md says where the recorded texts come from and what was
// changed in them.
package scrapetest

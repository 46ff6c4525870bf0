// Package ambient reads the metrics that describe where a run executes
// (the host, the trainer's processes, its GPUs, an inference server) and
// names them for the run's charts. Such metrics come from the collector's
// own receivers (hostmetrics, the prometheus receiver scraping
// dcgm-exporter and vLLM), not from the trainer, so three decisions follow.
//
// They join a run and never make one. A resource is ambient when it says
// so (prime.ambient) or when its scopes are a host or scrape receiver's
// (Is): the exporter then only looks up a run that its trainer's own data
// opened, by the resource's run identity (never service.instance.id, which
// the prometheus receiver sets to the target's address) or by the
// Kubernetes pod a trainer announced (internal/pods). Data whose run is not open yet
// waits, bounded, in Waiting; data past its run's end is dropped.
//
// One rule names them (Translate): a known metric becomes a short key
// under "system/" with its unit in the name (names.go lists them, the
// same table as docs/system-metrics.md), aggregated where one chart per
// CPU, state or network device would drown the run (CPU time is averaged
// over CPUs; bytes are summed over devices); any other metric keeps its
// name under "system/". Labels that only describe the scrape or the
// hardware (a GPU's UUID, the pod, the model name) are dropped; the GPU
// index and the host stay, so several nodes of one run keep their series
// apart. A counter that a processor turned into a rate (deltatorate) is
// named "…_per_s"; one that arrives as a running total keeps the total.
//
// One scrape is one row. Receivers stamp each scraper's points
// separately, a few milliseconds apart, and send a resource per scraper,
// process or target; a time-keyed row is one metrics post, so the points
// bound for one run within half a second of its latest row are moved onto
// that row's time (Rows, align.go).
//
// Translated metrics live in the scope ScopeName and pass through
// Translate untouched: a retry hands them back already named.
package ambient

// Package primeexporter is an OpenTelemetry Collector exporter that puts
// reinforcement-learning training runs on the Prime Intellect platform.
//
// A trainer emits OTLP metrics and logs carrying prime.* resource attributes;
// this exporter maps each resource to a platform run, sends step metrics to
// the RFT metrics route and closes runs out. It replaces an in-process SDK,
// so it speaks that SDK's wire contract exactly (package rft).
//
// Design decisions:
//
//   - One run registry per config, shared by the metrics and the logs
//     exporter the collector builds for it, so a run's two signals share one
//     platform run. A run is created lazily and once: concurrent first data
//     waits for the one create.
//   - exporterhelper replays a whole push on a retryable error, so a push
//     hands back only what failed (consumererror.NewMetrics / NewLogs): the
//     steps whose post failed, never the ones the platform accepted. Metrics
//     posts are replayable (the platform merges a step's posts); a create is
//     not, so after an ambiguous create failure the data stays queued and a
//     warning says a duplicate, empty run may exist. Once a failure says the
//     platform is down (a transport error, 429, 502, 503, 504), the rest of
//     the push goes back unsent: its later steps would only fail too, and
//     sending them would put the run's steps out of order.
//   - Bad input is counted and logged once per run and reason, and the rest
//     of its batch goes on; it is never returned as a batch error.
//   - Close-out waits out a grace period after prime.run.end (the other
//     signal's pipeline may still be delivering), waits for the run's data
//     still in flight or in the collector's retry (in an outage the end,
//     which needs no request, arrives before the data it follows), then
//     finalizes or sets the terminal status, trying again until
//     finalize_timeout. Collector shutdown finishes requested close-outs but
//     closes no other run: a collector restart is not the end of a training
//     run.
//   - Offline mode runs the same lifecycle against a local directory with the
//     same bodies, so it doubles as the zero-account demo.
package primeexporter

// Package primeexporter is an OpenTelemetry Collector exporter that puts
// reinforcement-learning training runs on the Prime Intellect platform.
//
// A trainer emits OTLP metrics and logs carrying prime.* resource
// attributes; this exporter maps each resource to a platform run, sends
// step metrics, uploads episodes as step-keyed Parquet sample tables and
// closes runs out. It replaces an in-process SDK, so it speaks that SDK's
// wire contract exactly (package rft).
//
// This package only wires the component: config, factory, start and
// shutdown, the push functions and self-telemetry. The work lives in
// internal packages, each with its decisions in its package doc:
//
//   - internal/runs: the run lifecycle (identity → run, create once,
//     close-out, hand-back tracking, persistence, sample_id ranges, dedup).
//   - internal/upload: a push's episodes → internal/sampletable → objects.
//   - internal/platform: the online and offline backends, chosen once at
//     start, and the exporter's one retry policy.
//   - internal/stepmetrics, internal/sampletable: pure mappings from pdata.
//   - internal/sharedcomponent: one exporter per config for both
//     pipelines, its start, shutdown and component status.
//   - internal/tenants: a multi-tenant gateway's backends and its
//     tenants::* settings.
//   - internal/runstatus: the exporter as a source of the prime_status
//     route.
//
// Design decisions of the wiring:
//
//   - One exporter per config, shared by the metrics and the logs exporter
//     the collector builds for it (contrib's sharedcomponent pattern), so a
//     run's two signals share one run registry and one platform run.
//   - A push maps each resource (stepmetrics, sampletable), hands the result
//     to the run's lease, and returns only what failed, so exporterhelper's
//     replay of the push is safe (see internal/platform for the retry
//     policy).
//   - Bad input is counted and logged once per run and reason, and the rest
//     of its batch goes on; it is never returned as a batch error.
//   - Shutdown comes in two steps: the first pipeline's shutdown notice
//     ends every in-place wait before exporterhelper drains its queue, so
//     the drain ends within the collector's deadline and what is unsent
//     stays in a persistent queue; the last pipeline's shutdown finishes
//     the close-outs trainers asked for and closes no other run.
package primeexporter

//go:generate go run -C internal/metadata/mdatagen . ../../../metadata.yaml $GOPACKAGE

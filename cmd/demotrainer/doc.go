// Command demotrainer plays a short, deterministic reinforcement-learning
// training run and emits it as OTLP/HTTP exactly as the prime exporter reads
// it (shared/spec/telemetry.md): resource attributes naming the run, per-step
// metrics, one prime.metrics event per step, prime.episode records and a
// closing prime.run.end event.
//
// It is what the README's offline demo runs and what the end-to-end tests
// feed a real collector with, so the design favours determinism over realism:
//
//   - Everything except timestamps derives from the flags and -seed: the same
//     command line always produces the same values, bodies and record counts.
//   - Metrics use delta temporality, and both providers are flushed after every
//     step. Each step's points are therefore exported exactly once, in their
//     own request, and never re-exported; this is also what the spec asks of a
//     well-behaved trainer. Cumulative temporality would re-send every earlier
//     step's gauge series on every collection.
//   - Every failure to export is fatal: flush and shutdown errors are returned,
//     and errors the SDK reports asynchronously through the global OTel error
//     handler are collected for the run. The program exits 1 naming the first
//     of them, so a test or a demo never passes on data that was not delivered.
//
// What it shares with cmd/evalrunner (the common flags, the OTLP log export,
// the events, the close-out and the exit codes) is cmd/internal/trainerlib.
// The command has its own go.mod so that the OTel SDK and its exporters stay
// out of the exporter component's module.
package main

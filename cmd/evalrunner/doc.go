// Command evalrunner plays a short, deterministic evaluation and emits it as
// OTLP/HTTP the way an instrumented eval runner (verifiers' eval CLI) would,
// for the prime exporter's evaluation runs (docs/evals.md, "What to
// send"):
//
//   - a resource with prime.run.kind=eval that names the evaluation
//     (prime.run.key, or prime.run.id to attach to an existing one) and
//     describes it (model, environments, config, tags, framework, ...);
//   - one prime.episode record per rollout whose body is a verifiers native
//     document, the shape of Episode.to_record() (episodes-native.md);
//   - a prime.metrics event with the user's summary keys;
//   - a closing prime.run.end event.
//
// It shares its flags, OTLP set-up, events and close-out with cmd/demotrainer
// through cmd/internal/trainerlib, and favours determinism over realism the
// same way:
//
//   - Everything except record timestamps derives from the flags and -seed:
//     the same command line always sends the same documents, in the same
//     order, and writes the same -manifest.
//   - The logs are flushed after every -batch episodes and at the end, and
//     every failure to export is fatal: flush and shutdown errors, and those
//     the SDK reports through the global OTel error handler. The program exits
//     1 naming the first of them, so a test never passes on data that was not
//     delivered.
//
// One thing the Go SDK decides for us: attribute.MapValue sorts a map's keys,
// so a map body (the default) reaches the collector in key order, not in the
// declaration order of Episode.to_record(). -json-body sends the document as
// JSON text instead, which keeps its order.
//
// The command has its own go.mod so that the OTel SDK and its exporters stay
// out of the exporter component's module.
package main

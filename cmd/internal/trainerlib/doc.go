// Package trainerlib is what cmd/demotrainer and cmd/evalrunner share: the
// flags both take, the OTLP/HTTP log export, the events every run sends, the
// close-out of a run and the text helpers of its episodes. Each command keeps
// what is its own: its flags, its resource, its episodes and its summary.
//
// The two commands are what the README's demo runs and what the end-to-end
// tests feed a real collector with, so the rules here are the ones both
// promise:
//
//   - Every failure to export is fatal. Flush and shutdown errors are
//     returned, and the errors the SDK reports through the global OTel error
//     handler are collected (ErrorSink) and fail the run too; FirstFailure
//     picks the one to report.
//   - Exports happen when the command flushes: the batch processor's own
//     interval is a day, so each flush sends what was recorded since the last
//     one and returns its errors to the step or batch that made them.
//   - An interrupted run is closed out as cancelled (Play.End), and the
//     telemetry is shut down even then (Finish), so that what was recorded
//     still goes out.
//   - A bad command line is a UsageError: the program exits 2. Telemetry that
//     did not arrive is an ExportError: the program exits 1.
//
// It is a module of its own, beside the two commands' modules (each has a
// replace to it), so that the OTel SDK stays out of the exporter's go.mod.
package trainerlib

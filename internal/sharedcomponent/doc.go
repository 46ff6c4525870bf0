// Package sharedcomponent makes one instance serve every pipeline that
// names its component, the pattern of contrib's internal/sharedcomponent.
// The collector builds a component for each pipeline and signal, but the
// prime exporter's metrics and logs must reach one run registry, so that a
// run's two signals make one platform run.
//
// Decisions, and why:
//
//   - A Map holds one instance per key (the component's id and config), so
//     a reload's new config builds a fresh instance; an instance leaves its
//     Map at its last shutdown.
//   - The instance starts with the first pipeline and shuts down after the
//     last one, where contrib's shuts down at the first: each pipeline's
//     exporterhelper drains its own queue into the instance before it
//     shuts down, and the instance must serve until the last drain ends.
//     A pipeline whose start comes after the first gets nil: the collector
//     stops at the first failed start, so none comes after a failure.
//   - Every pipeline's shutdown first tells the instance that shutdown has
//     begun (Instance.BeginShutdown), before that pipeline drains its
//     queue, so that the instance ends its in-place waits and the drain
//     ends within the collector's shutdown deadline.
//   - The component status is one (Status): every host that started the
//     instance hears every event, and a host that starts later hears the
//     last error. Several services fail apart, so the status is
//     RecoverableError while any source fails, naming all that do, and OK
//     once none does; a PermanentError is final, as the collector accepts
//     no other status after it.
package sharedcomponent

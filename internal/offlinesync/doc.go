// Package offlinesync puts runs the exporter wrote in offline mode onto the
// platform: prime-sync's engine.
//
// An offline run directory holds exactly the bodies the platform would
// have received (run.json with the create body, metrics.jsonl with one
// metrics post per line, samples/step_<step>_<range>.parquet objects), so a
// sync replays them through the same rft client, with the same retry and
// replay rules, and the same close-out as the exporter. Only run_id
// changes: the metrics posts carry the platform run id, and each object's
// run_id column is rewritten (sampletable.RewriteRunID), every other byte
// of the object staying as the exporter wrote it.
//
// # Exactly once, resumable
//
// A journal, sync.json in the run directory, is replaced atomically after
// every step that changes the platform: the platform run id, the offset
// of the last metrics line posted, each object's presigned key and URL,
// whether its PUT finished, whether it was confirmed, and the close-out.
// A sync killed at any moment is finished by the next one, which starts
// from the journal:
//   - a metrics line posted but not journaled is posted again; the
//     platform merges posts of one step, so that is harmless (replayable);
//   - an object uploaded (presigned and PUT, in one stage) but not
//     journaled is presigned and PUT again: the first key is never
//     confirmed, and the viewer only reads confirmed keys;
//   - an object whose PUT failed after its presign keeps that URL, and is
//     PUT again to it (the same key, the same bytes: the rewrite is
//     deterministic) while it is valid, else to a new key; only a
//     confirmed key is in the table;
//   - an object confirmed but not journaled is confirmed again under the
//     same key, which the contract makes a no-op.
//
// Two windows remain, both the contract's own. The create is not
// replayable: when its answer is lost, the platform may hold a run the
// sync never learned of, and the sync (this one, or the next) creates
// another: an empty orphan, never a run with its data twice. The exporter
// does the same, since giving up would keep the run off the platform.
// And a machine crash, as opposed to a killed process, can lose journal
// writes not yet on disk; only those whose loss costs nothing but a
// replay are left unflushed: the metrics offset, a presign (an orphaned
// URL), a confirm (confirmed again under the same key). The run id and
// each finished PUT's key are flushed before anything depends on them, so
// no object is ever uploaded under a second key.
//
// # One sync per run directory
//
// A sync holds an flock on sync.lock in the run directory for as long as
// it works on the run, so two prime-sync processes never both send; the
// second is told which directory is busy and leaves it. Within one sync
// too: a directory named twice (a symlink) is synced under one name.
//
// # Many runs at once
//
// Sync works on Options.ParallelRuns runs at a time. The runs share
// nothing but the platform: each has its own lock, journal and state, so
// every rule above is a run's own and holds however many run at once, a
// kill with several in flight included. Until the platform has accepted
// the key once (keyCheck) the runs go one at a time, so that a refused
// key is refused once. A run that fails is reported and the others go
// on; only a refused key stops the runs not yet begun. The progress is one
// over all runs (Progress hears every run's events).
//
// # Live runs
//
// A run whose run.json still says running is synced as far as it goes:
// complete metrics lines (the collector appends whole lines; a line
// without its newline is left for the next sync) and the objects already
// written (the exporter writes them by rename, so a listed object is
// whole). The run stays open on the platform until a sync finds run.json
// ended.
package offlinesync

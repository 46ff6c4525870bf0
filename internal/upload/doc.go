// Package upload turns a push's prime.episode records into step-keyed
// Parquet objects and puts each into the sample table (presign → PUT →
// confirm online, one file offline). It marshals, then sends: sampletable
// maps a record to rows (Accept) and encodes an object; Objects
// (objects.go) owns the object from its range to its confirm, over the
// platform's objects route and a keyed ObjectStore, which also keeps the
// episodes confirmed before, by step: the uploader reads and writes the
// delivered sets itself, where its objects are. It talks to the run
// lifecycle only through the two roles it declares: the ObjectRun
// (objects.go: the run's id, store key, ranges and counts) and the Route
// of its documents (ledger.go: Prime Traces under the run's team, or the
// table). runs.Lease is both; the tests use a fake.
//
// Decisions, and why:
//
//   - Every step is uploaded on its own: a step that fails is handed back
//     to the collector's retry by itself, and the other steps of the batch
//     still go. Once the platform is down, the rest goes back unsent, in
//     step order.
//   - Every row of a record is an episode of the batch: one, or one per
//     trace of a native document too large for one row. Such rows can be
//     alike to the byte, so their part (the trace they project) is in
//     their fingerprint; a row that has none keeps the fingerprint it had
//     before, so what a store holds from an earlier version still counts.
//   - An object is known by the content of its episodes (a fingerprint of
//     their columns, which a replay of the same records reproduces). Its
//     range and upload progress are kept from the first attempt on, so
//     the retry of the same records reuses its range and URL and, after a
//     successful PUT, only confirms: the viewer unions every
//     object of a step, so an object uploaded twice would show its rows
//     twice.
//   - Episodes confirmed before are left out (already_delivered), so a
//     batch the queue replays after a restart adds nothing.
//   - One owner per object: Objects.resume reads, once a step, which
//     episodes were delivered and what earlier attempts left of the
//     step's objects; Objects.take gives an object its range (the run's
//     NextRange, which writes nothing) before it is encoded, and Send
//     takes it through the platform's two stages, the upload (presign,
//     PUT) and the confirm, writing the object's own key once it is PUT
//     and, after the confirm, its episodes delivered and the key deleted
//     in one batch: two writes an object, of its own size, and never its
//     run's record. The save is after the PUT because from then on the
//     key must not be forgotten (a new key would land the rows twice);
//     before it, losing the URL costs a presign after a restart. No call
//     goes back up: the platform returns each stage's progress, and the
//     run only answers. A failure leaves the object where it stopped, and
//     its retry (or a restart, or another collector of the fleet) resumes
//     from there; an object the platform refuses for good is forgotten.
//   - The push enters the uploader once (Push): the root keeps a push's
//     episode records and hands them over together.
//   - A step's episodes are cut into objects of at most max_object_bytes of
//     text; one episode larger than max_episode_bytes is rejected alone,
//     row by row: the other rows of its document still go.
//   - Eval work, steps off the cadence and empty trajectories have no row:
//     they are skipped and counted apart from rejections (off_cadence once
//     per row the record would have had).
//   - Values taken as a Python user means them (a step as a string, a list
//     prompt) are counted by reason (Telemetry.Coerce) and the run's
//     values_coerced, and said once per run and reason: the row goes in,
//     and the trainer learns what it could send instead. They are counted
//     once a push, when its batch is released, not once a record: a
//     verifiers prompt is a list in every record, and the counter and the
//     warning's check were 14 % of the collector's CPU at 2 KB.
//   - Accept hands back the mapped record, so that a sink taking more of it
//     than its rows (its Document) maps it once.
package upload

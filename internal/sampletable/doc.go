// Package sampletable maps prime.episode log records to rows of the
// training viewer's sample table and writes those rows as Parquet objects
// (rft-api.md "The training sample table"). A record is column-keyed
// (telemetry.md §3) or a native verifiers document (episodes-native.md). It
// is pure: bytes in, bytes out. The root package picks the records, groups
// them by run and step, applies the cadence, assigns sample_id ranges and
// uploads the bytes.
//
// Decisions, and why:
//
//   - Two steps, FromRecord then Encoder.Encode. A record is mapped (and
//     rejected, on its own) when it arrives, into a Record: its step, its
//     rows (one, several for an oversized document, none), its document and
//     its coercions; a step's rows are encoded when the caller has them all.
//     Episode.Size lets the caller enforce its size limits and split objects
//     before encoding anything.
//
//   - Row text in reused memory. FromRecordIn writes a row's JSON columns
//     (the trajectory above all) into an Arena that the caller releases
//     once the rows are encoded; chunks go back to an ArenaPool for the
//     next push. At 2 KB episodes the trajectory was most of what the
//     exporter allocated, and garbage collections paced by it cost more
//     than the writing (arena.go). The price is a lifetime rule: no row's
//     text outlives Release, which in -race builds (the test command's)
//     zeroes it so that a test shows a breach.
//
//   - Native documents. A body (a map, or a string holding a JSON object)
//     with a top-level traces list is a verifiers Episode.to_record(), which
//     prime-rl already holds for every episode: the trainer sends it as it
//     is, and the exporter projects it the way the platform SDK does
//     (prime_runs/projection.py), so a run shows the same rows whichever of
//     the two sent them. Any other body keeps the column-keyed rules, which
//     ignore a traces key. The step is attribute prime.work.step, else the
//     body's run.work.step; eval work is either attribute prime.work.type or
//     run.work.type saying "eval". Attributes prime.episode.<column> are not
//     read: the document is the episode, and the SDK reads nothing else.
//
//   - The projection. The summary trace is the first trainable one, else
//     the first. Its branches are rebuilt from the message graph (one per
//     leaf, ascending; a node's call is the last naming it) with their token
//     counts, its reward summed as Python 3.12 sums (compensated, so the row
//     carries the SDK's value to the bit), and its info extended with the
//     whole record (native_wrapper) and its index (native_trace_index), as
//     {**info, ...} does: a key already there keeps its place. The episode's
//     advantage is the summary trace's info.advantage. A document whose
//     shape the projection cannot follow (a node that is not a map, a parent
//     that is no node's index, parents in a cycle, a token count that is not
//     an int) is rejected, naming the path (traces[0].nodes[3].parent),
//     since the SDK would have failed on it too; what the projection does
//     not read is not checked.
//
//   - The fallback. When the summary row's v0 sample would exceed the
//     platform's 25 MiB request, the SDK uploads one row per trace instead,
//     each with the trace's own info (JSON null when empty, as the SDK
//     writes it) and the episode's advantage; so does FromRecord. The
//     sample is counted as the row's text and 512 bytes for the SDK's other
//     fields: a few KB off, against 25 MiB. Such rows can be alike to the
//     byte, so Episode.Part (the trace's index) tells them apart, and the
//     uploader's fingerprints with it.
//
//   - Document is the record as compact JSON: the bytes native_wrapper
//     holds, and what another sink of the same record (Prime Traces) takes
//     as is, sharing the body's memory rather than a copy. A map body is
//     written by pjson; text is compacted when its check found whitespace
//     between tokens, and walked where it lies, like
//     column-keyed text: the body is checked once, when it is read, and
//     each level of the document is then walked without checking it again
//     (jsonscan.Skip), picking out what the projection needs; values are
//     copied as spans. Python's json.dumps writes NaN and ±Inf as NaN and
//     Infinity, which are not JSON: a document's text that parses only with
//     them as null is taken so, as the SDK's own projection would store
//     them; a column-keyed body keeps its stricter rule. A 200 KB document
//     as prime-otel sends it maps in about 270 µs of CPU, its row encoded
//     in about 380 more, where the Snappy floor of its cells is about 360
//     (BenchmarkVerifiersMap and BenchmarkVerifiersMapAndEncode,
//     native/200KB, against BenchmarkVerifiersSnappyFloor); its row holds
//     the whole record once more.
//
//   - Python values are taken as a Python user means them, and counted
//     (Record.Coerced) rather than rejected: the OTel Python SDK sends a
//     numpy integer as a string, so a prime.work.step holding a decimal
//     integer ("20", JSON's integer grammar) is that number
//     (reject.NumberString); and a column-keyed tag, prompt or answer that
//     is not a string (a list of chat messages) is stored as its JSON text
//     (reject.JSONText). Nothing else is coerced: "1.5", "1e3" or "+1" as a
//     step, a map env_name, a string reward are still rejected.
//
//   - Sources of a column-keyed record. Attribute prime.episode.<column>
//     wins over body key <column>; a null or empty value is no value, so an
//     empty attribute leaves the column to the body. The body is a map, or a
//     string holding a JSON object. Other text is ignored rather than
//     rejected: a logging bridge puts the log line there and the episode in
//     attributes. Text that starts like an object but does not parse, and
//     bodies of other types, are rejected, because they were meant as the
//     episode.
//
//   - JSON text is read in place. Episodes carry megabytes of chat,
//     usually serialised by the trainer already. A body or trajectory
//     given as JSON text is sliced into spans by internal/jsonscan, never
//     decoded into values and encoded again: values keep their bytes, and
//     a step costs one scan and no per-value allocation (5x to 7x faster
//     than encoding/json, a sixth of the bytes: its package doc has the
//     figures). On the 200 KB body that is 0.5 ms against 2.8 ms an
//     episode, where mapping and encoding take 1.5 ms an episode all told
//     (BenchmarkFromRecordAndEncode). The scanner accepts exactly what
//     encoding/json accepts. Numbers are still read through pvalue, so
//     JSON text and pdata follow one set of lenient rules (an int for a
//     double, an integral double for an int).
//
//   - JSON columns (completion, trajectory, task, info, metrics, timing) hold
//     the JSON encoding of the value, except, in a column-keyed record, a
//     string that already holds a JSON object or array, which is stored as
//     it is (no double encoding): a document's values are its own. Only
//     objects and arrays pass: "42" as a string is stored as "\"42\"",
//     since it was sent as a string. pdata is encoded by pjson, the
//     exporter's one pdata JSON writer: map keys in their stored order (the
//     trainer's insertion order, as Python's json.dumps keeps), no HTML
//     escaping, UTF-8 as is; NaN and ±Inf, which JSON lacks, become null, as
//     JavaScript's JSON.stringify does, rather than losing the episode;
//     bytes become base64 strings.
//
//   - A column-keyed trajectory is re-serialised, since every branch's
//     "advantage" is set to the episode's (null when it has none), as the
//     SDK does. The value keeps its place when the branch had one, else goes
//     last; duplicate keys collapse into it. A trajectory must be a list of
//     maps (or JSON text of an array of objects), since an advantage cannot
//     be set on anything else.
//
//   - The last branch stands in for what the record leaves out: its
//     num_input_tokens and num_output_tokens (telemetry.md §3), and its
//     "messages" for completion. The latter is our reading of rft-api.md,
//     which defines completion as "the final branch's messages"; a record's
//     own completion always wins. A given value also spares the branch's
//     value from being checked.
//
//   - Nulls. tag, prompt and answer are "" by default (rft-api.md); every
//     other column is null when the record has no value. problem_id, when
//     unknown, is the row's sample_id, which only Encode knows. created_at is
//     the record's timestamp, else its observed timestamp, else now, in UTC
//     and truncated to microseconds.
//
//   - No row, no work. Eval work and episodes with an empty trajectory have
//     no row, so FromRecord stops as soon as it knows and returns a Record
//     without rows (Eval tells the first) instead of rejecting it: they are
//     skipped and counted apart from failures, and an eval record's other
//     columns (or traces) are not checked.
//
//   - Rejections. A value that does not fit its column is a
//     *reject.Rejection with a stable Reason (the root package counts by it
//     and logs once per run and reason), Field the attribute or body key,
//     and a message naming them and the type found, e.g.
//     `prime.episode: body key reward must be a number, got map`. Columns are
//     checked in table order, so a record always reports the same misfit.
//
//   - Valid UTF-8 only. Parquet's STRING and Arrow's utf8 promise UTF-8,
//     and readers (DuckDB, pyarrow) refuse anything else, so invalid bytes
//     become U+FFFD before they reach a column.
//
//   - The object. Columns exactly as rft-api.md lists them, all nullable
//     (pyarrow's default), written by internal/flatparquet: one row
//     group, data pages v1 of about 1 MiB with PLAIN values, Snappy,
//     the Arrow schema stored, a null count on every column and a min
//     and max on all but the free text (freeText) and long strings. No
//     dictionary: free text is mostly unique (pyarrow's dictionary falls
//     back to PLAIN on it too), and the short columns are small beside
//     it. INT64 columns are annotated INT(64, signed) as arrow-go
//     annotates them, where pyarrow leaves them bare; readers take both
//     as BIGINT. Encode writes the episodes' cells as they are, with no
//     intermediate table, and keeps its buffers for the next object. It
//     refuses rows that do not belong in the object (another step, eval,
//     empty), ranges whose ids would reach 2^53 and more text than Arrow
//     readers address (2 GiB), rather than write a table the viewer would
//     misread.
package sampletable

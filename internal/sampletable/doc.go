// Package sampletable maps prime.episode log records (telemetry.md §3) to rows
// of the training viewer's sample table and writes those rows as Parquet
// objects (rft-api.md "The training sample table"). It is pure: bytes in,
// bytes out. The root package picks the records, groups them by run and
// step, applies the cadence, assigns sample_id ranges and uploads the bytes.
//
// Decisions, and why:
//
//   - Two steps, FromRecord then Encoder.Encode. A record is mapped (and
//     rejected, on its own) when it arrives; a step's rows are encoded when
//     the caller has them all. Episode.Size lets the caller enforce its size
//     limits and split objects before encoding anything.
//
//   - Sources. Attribute prime.episode.<column> wins over body key <column>;
//     a null or empty value is no value, so an empty attribute leaves the
//     column to the body. The body is a map, or a string holding a JSON
//     object. Other text is ignored rather than rejected: a logging bridge
//     puts the log line there and the episode in attributes. Text that starts
//     like an object but does not parse, and bodies of other types, are
//     rejected, because they were meant as the episode.
//
//   - JSON text is read in place. Episodes carry megabytes of chat, usually
//     serialised by the trainer already. A body or trajectory given as JSON
//     text is sliced into spans by a small scanner, never decoded into
//     values and encoded again: values keep their bytes, and a step costs
//     one scan and no per-value allocation. BenchmarkBodyText holds it
//     against the straightforward encoding/json reading (the body into a map
//     of json.RawMessage, the trajectory token by token) that gives the same
//     text: 6x faster on a single-turn body (3 KB of JSON), 7.5x on an
//     agentic one (200 KB), with 8 allocations instead of 116 and 159 and
//     a sixth of the bytes. On the 200 KB body that is 0.4 ms against
//     3.2 ms an episode, where mapping and encoding with the scanner take
//     2.7 ms an episode all told (BenchmarkFromRecordAndEncode). The
//     scanner accepts exactly what encoding/json accepts (a fuzz test holds
//     it to that). Numbers are still read through pvalue, so JSON text and
//     pdata follow one set of lenient rules (an int for a double, an
//     integral double for an int).
//
//   - JSON columns (completion, trajectory, task, info, metrics, timing) hold
//     the JSON encoding of the value, except a string that already holds a
//     JSON object or array, which is stored as it is (no double encoding).
//     Only objects and arrays pass: "42" as a string is stored as "\"42\"",
//     since it was sent as a string. pdata is encoded by pjson, the
//     exporter's one pdata JSON writer: map keys in their stored order (the
//     trainer's insertion order, as Python's json.dumps keeps), no HTML
//     escaping, UTF-8 as is; NaN and ±Inf, which JSON lacks, become null, as
//     JavaScript's JSON.stringify does, rather than losing the episode;
//     bytes become base64 strings.
//
//   - The trajectory is re-serialised, since every branch's "advantage" is
//     set to the episode's (null when it has none), as the SDK does. The
//     value keeps its place when the branch had one, else goes last;
//     duplicate keys collapse into it. A trajectory must be a list of maps
//     (or JSON text of an array of objects), since an advantage cannot be
//     set on anything else.
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
//     no row, so FromRecord stops as soon as it knows and flags them (Eval,
//     EmptyTrajectory) instead of rejecting them: they are skipped and
//     counted apart from failures, and an eval record's other columns are
//     not checked.
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
//     (pyarrow's default); snappy, dictionary encoding on (free text falls
//     back to PLAIN by itself), statistics on, the Arrow schema stored —
//     pyarrow's settings, which the viewer was built on. arrow-go annotates
//     INT64 columns INT(64, signed) where pyarrow leaves them bare; readers
//     take both as BIGINT. One object is one Arrow record and one row group.
//     Encode sizes its builders once per object, since a step's text runs to
//     many megabytes, and it refuses rows that do not belong in the object
//     (another step, eval, empty) and ranges whose ids would reach 2^53,
//     rather than write a table the viewer would misread.
package sampletable

// Command primebench is the project's end-to-end benchmark (issues 11, 34
// and 45, run by scripts/bench.sh, not part of CI): how many prime.episode records a
// collector with the prime exporter moves per second and per CPU second,
// next to the same collector with the debug exporter (the pipeline's floor)
// and with the otlphttp exporter (a stock exporter that also encodes,
// compresses and posts its data).
//
// Design decisions:
//
//   - The load is a trainer's load, in shapes reported apart (shape*.go),
//     since the exporter's cost per byte depends on how an episode lays out
//     its text: plain (the first load, a pdata map, kept so that figures
//     compare with earlier runs), verifiers (a tool-using chat whose
//     trajectory repeats the prompt and completion), native (the
//     Episode.to_record() fixture, lengthened) and tokens (token ids and
//     logprobs); the last three are JSON text, as prime-otel sends every
//     episode. Each shape comes at about 2 KB and 200 KB, its filler sized
//     by measuring the record, and its text is words drawn as prose is, so
//     that the compression figures are honest.
//   - One collector binary (bench/builder-config.yaml) and one config shape
//     for all three: the otlp gRPC receiver and the same in-memory
//     sending_queue (bytes sizer, 32 MiB unless -queue-mib says
//     otherwise, 4 consumers, batches of 1–8 MiB or 200 ms); only the
//     exporter differs. 32 MiB is about what the consumers hold in flight:
//     a deeper backlog costs prime CPU that debug, which never falls
//     behind, does not pay (docs/performance.md). Each configuration runs with
//     the queue blocking when full (block_on_overflow: a full queue slows
//     the senders down, as it would a trainer) and refusing when full (the
//     senders send again after 20 ms, as an SDK retries): peak queue bytes
//     depend on which, so the report has a column for each.
//   - The Snappy floor is measured in the same run, on the same machine:
//     each rep first compresses the load's own rows' cell text (its first
//     episodes, mapped as the exporter maps them) in pages of the writer's
//     size, on every core at once as the collector under load runs, timed
//     in each thread's CPU. prime's CPU per episode is set against
//     debug's plus the floor, and its throughput against what the floor
//     allows: debug's pace with the floor's CPU spread over the cores.
//   - The load is built before the clock starts, down to its protobuf bytes,
//     and is sent over OTLP gRPC with a pass-through codec: the load
//     generator shares the machine's cores with the collector, so it does no
//     encoding while the clock runs. The bytes are the same for every
//     configuration and rep; each collector process creates its runs anew,
//     so no episode is ever a replay.
//   - The clock stops where the data lands. prime: rows the fake platform
//     (rft/rfttest in discard mode: it counts Parquet rows and keeps no
//     bytes) has confirmed; otlphttp: records the counting sink has decoded;
//     debug, which lands nowhere: the collector's own
//     otelcol_exporter_sent_log_records, scraped from its Prometheus
//     endpoint.
//   - CPU is the collector's alone (utime + stime from /proc over the
//     measured window), peak RSS its VmHWM. The platform, the sink and the
//     senders run in this process on the same cores, so throughput, not
//     CPU, carries their noise.
//   - Reps are interleaved (rep 1: prime, debug, otlphttp; rep 2: …) so
//     drift on a shared machine hits every configuration alike; each figure
//     is the median over reps.
//   - The report ends with issue 45's targets in one table, a shape a row:
//     each load's CPU per episode against debug's plus the floor beside
//     its target (2 KB at most 2.0, 200 KB at most 1.3) and whether the run
//     meets it, and the 2 KB load's throughput beside debug's.
//   - CPU profiles of prime and debug (-profile-dir) come from an extra run
//     each with the pprof extension, kept out of the measured reps; debug's
//     is the receiver's share, which prime pays too.
package main

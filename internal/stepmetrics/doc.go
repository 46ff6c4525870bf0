// Package stepmetrics maps OTLP metrics, and prime.metrics log events, to the
// name → value entries of the platform's metrics rows: a step's, or a time's
// for data with no step (telemetry.md §2–3, rft-api.md "Step metrics"). It
// is pure: no I/O, no collector component code; the root package groups the
// entries by run and row, de-duplicates a step's and sends them.
//
// Decisions, and why:
//
//   - Step resolution order. A data point's prime.step attribute wins: it is
//     exact and travels with the point. Failing that, the gauge or sum named
//     Options.StepMetric ("step") that the same resource reported with the
//     same TimeUnixNano gives it, because an SDK collects every instrument
//     of a reader at once and a trainer that already records its step as a
//     gauge should not have to tag every other instrument. The step metric's
//     own points take their own value as their step (and also yield the
//     entry "step", which the post carries anyway). A zero timestamp never
//     matches (it means "unset"); step points disagreeing at one timestamp
//     make every point that leans on them a bad_step, rather than picking
//     one at random. Steps are read leniently (an integral double is an
//     int, telemetry.md §3); their sign is not checked here (the spec sets
//     no range).
//
//   - Time-keyed rows. A training point or event with no step at all is
//     not lost: its entries are the row of its time (Row{Time: t},
//     Entry.TimeKeyed), because that is what the platform's own SDK posts
//     for log_metrics(values, step=None) (prime-rl keys its inference
//     metrics on wall time that way), and the exporter must say the same
//     thing on the wire. A point's time is its time_unix_nano; an event's
//     its timestamp, else its observed timestamp (EventTime). With no time
//     either there is nothing to key the row by: no_step. Only a missing
//     step is time-keyed. A step that is there but bad (a non-integer
//     prime.step, a step gauge non-integral or in conflict at the point's
//     timestamp) stays bad_step: putting it in a time row would guess
//     that the trainer meant no step, and hide its bug. An evaluation
//     (Options.Stepless) has no rows and is not concerned. Every entry
//     carries its point's or event's time, so that the root package can
//     stamp a step's post with the newest (_timestamp), as the SDK stamps
//     every row.
//
//   - Python values are taken as a Python user means them. The OTel Python SDK
//     (1.44) stringifies numpy scalars: np.int64(20) and np.float32(0.5) arrive
//     as the strings "20" and "0.5", and a trainer's steps and metrics are
//     numpy scalars more often than not. Rejecting them would lose a run's
//     curves over a type the user never chose. So a prime.step string holding a
//     decimal integer is that step (a point's and an event's alike), a
//     prime.metrics value string holding a decimal number is that number, and a
//     bool value is 1 or 0 (Python's True == 1; an SDK sends a Python bool as
//     an OTLP bool). "Decimal" is JSON's number grammar, not strconv's: "NaN",
//     "inf", "", " 1", "+1", "0x10" stay bad values, since a string that only
//     parses under a lenient reading is not a number anyone meant; a step
//     string with a fraction or exponent ("20.0") stays a bad step, as a str()
//     of a numpy integer never gives one. A number string past float64 is ±Inf
//     and rejected as non_finite, as the double would be. Each coercion comes
//     back as a reason (reject.NumberString, reject.BoolValue) so the root
//     package counts it apart from rejections: the data is delivered, and the
//     trainer can still find and fix its types. A coercion counts only when its
//     point or event delivered something; a value rejected anyway is a
//     rejection alone, never both.
//
//   - Key folding. The platform's post is one flat name → number object per
//     row, so the data-point attributes that tell series apart (env, rank,
//     …) must go into the name, or two series would overwrite each other.
//     name{k=v,…} with sorted keys is the Prometheus-like form people read
//     at a glance; it is deterministic, and escaping `\ , = { }` in keys and
//     values makes it injective: distinct attribute sets never collide.
//     Values take their plain form: strings as is, doubles shortest
//     round-trip, bytes standard base64 (what JSON itself gives bytes), an
//     empty value "". Lists and maps are compact JSON written by pjson, the
//     exporter's one pdata JSON writer, with map keys sorted so a series
//     keeps its key whatever order a producer put them in; NaN and ±Inf
//     inside them are null, as everywhere the exporter writes JSON (JSON has
//     no NaN, and the point is not lost over an attribute).
//
//   - Rejections are *reject.Rejection values, Field naming the metric (the
//     entry key for a non-finite value, the key or attribute for an event),
//     so the root package counts and logs them like every other loss.
//
//   - Derived values. Histograms and summaries are not scalars. count, sum,
//     min and max are taken as recorded; mean = sum/count is derived because
//     it is the curve a trainer wants, and a metric SDK can only give it
//     through a histogram. Non-finite values are rejected one by one, so a
//     histogram whose sum overflowed still sends its count.
//
//   - Percentiles. A histogram's buckets are not sent, but the curve a
//     trainer watches beside the mean is the tail, so an explicit-bucket or
//     exponential point also gives key/p50, key/p90 and key/p99 (quantiles
//     0.5, 0.9, 0.99), estimated from its buckets by Prometheus's classic
//     histogram_quantile rule, exactly: it is what operators already read off
//     the same histograms, and one percentile should not have two values.
//     rank = q × count; the first bucket whose cumulative count reaches the
//     rank (>=) holds it, and the answer is lower + (upper−lower) ×
//     ((rank−below)/n), linear within the bucket (below: the observations
//     under it; n: its own), computed in Prometheus's order of operations, so
//     that promtool agrees to the bit (promtool_test.go, promtool 2.42). An
//     explicit layout's first bucket starts at 0 when its bound is positive
//     and answers its bound when that is ≤ 0; a rank in the +Inf bucket
//     answers the highest finite bound. The +Inf bucket counts the point's
//     count, as the collector's Prometheus exporters write it, lifted to the
//     finite buckets' total when that is more (Prometheus forces cumulative
//     counts not to decrease). No percentiles for count 0, no bucket
//     counts, no finite bound (Prometheus needs two buckets), or a layout
//     OTLP forbids (bucket_counts not one longer than explicit_bounds,
//     bounds not finite and non-decreasing): there is nothing sound to
//     interpolate in. Equal neighbouring bounds make a zero-width bucket,
//     which answers its bound. A count-0 point whose buckets count
//     something gives none, where Prometheus would read its buckets: the
//     point says it observed nothing.
//
//     An exponential point is read as explicit buckets from the most
//     negative to the most positive: its negative buckets, the zero bucket
//     (−zero_threshold, zero_threshold] if it counts anything (with a
//     threshold of 0 that is the value 0), its positive buckets, bucket i
//     of offset o holding (base^(o+i), base^(o+i+1)], base = 2^(2^−scale),
//     negated for the negative ones; a count above the buckets' total
//     answers the highest bound, like a +Inf bucket. It is interpolated
//     linearly, as classic buckets are, although Prometheus 2.51 and later
//     interpolate native histograms exponentially: one rule for both
//     types, so that a p99 means the same whichever instrument an SDK
//     chose, and the bucket already bounds the error tightly.
//
//     The error: the estimate lies in the bucket that holds the rank, and
//     so does the true percentile, so it is off by at most that bucket's
//     width; for an exponential bucket (base^k, base^(k+1)] that is below
//     (base−1) × the true value (9% at scale 3), for the zero bucket
//     2 × zero_threshold. Two buckets have no such bound: the +Inf bucket
//     (the answer is its lower bound) and an explicit first bucket (the
//     answer assumes no value below 0, or is its bound). So the estimate
//     is then clamped to the point's recorded min and max, which the true
//     percentile never leaves: clamping only ever moves it closer. That is
//     our addition to Prometheus's rule, and the comparison test's points
//     record no min or max. A percentile that is not finite (a bucket past
//     float64's range) is rejected as non_finite, like any other value.
//     The buckets are read in place, twice at most (their total, then the
//     walk to the p99's bucket), without allocating: this runs for every
//     histogram point.
//
//   - Nothing recorded is not an error: a point flagged NoRecordedValue (or
//     with an empty value) produces neither an entry nor a rejection.
//
//   - prime.metrics events. The step is the prime.step attribute only (no
//     step gauge: an event is not collected with one); without it the event
//     is time-keyed, as above. The values are the body when it is a
//     non-empty map (or a string holding a JSON object), else the
//     attributes; not both, because a logging bridge fills the attributes
//     with provenance (code.lineno, thread.id are ints) that a
//     body-carrying trainer never meant as metrics. Among attributes,
//     event.name, everything under prime. (the exporter's namespace) and the
//     exact provenance names log bridges add are not metrics. Event keys are
//     taken as given: an event has no data-point attributes to fold in.
//
//   - Order is deterministic (metric order, then point order; document order
//     for a JSON event body), so callers and tests can compare slices.
//
//   - FilterRows resolves rows exactly as FromResource does, string steps
//     and time rows included, so a retry handed back to the collector
//     holds just the failed rows' points plus the step gauge points they
//     need. It copies points unchanged, timestamps included: the retry is
//     mapped, and its coercions counted, afresh, into the same rows.
package stepmetrics

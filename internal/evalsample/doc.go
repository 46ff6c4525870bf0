// Package evalsample maps the prime.episode records of an evaluation run
// (prime.run.kind = "eval") to the samples of the platform's evaluations
// API, and keeps the evaluation's summary (evals-api.md "Samples",
// "Summary" and the OTLP mapping). It is pure: no I/O. The root package
// picks the records, batches the samples (rft.SampleBatches) and sends
// them; the run registry keeps the Summary, and should keep the Counters.
//
// Decisions, and why:
//
//   - One projection. A native document's sample comes from sampletable
//     (ReadEvalBody, EvalBody.ProjectV0): the walk that gives the training
//     table its rows, so the branches, their token counts, the reward (to
//     the bit), the summary trace and info with native_wrapper are the
//     table's, and the two cannot drift. Only what the SDK's
//     build_samples does differently differs: a trajectory branch has no
//     "advantage", nothing is skipped as eval work or for want of a step,
//     and a trace without nodes still has its sample (completion and
//     trajectory []). An episode whose sample would exceed 25 MiB gives
//     one sample per trace, each with its own id and info, as the SDK's.
//
//   - The v0 sample (below) is the SDK's, key by key. Where the SDK
//     computes a value from verifiers' models (is_truncated, token_usage,
//     error), the computation is verifiers' at a60a606. Ours: where the
//     document leaves a key out, the SDK would read the pydantic default;
//     we write null (metrics {}; prompt, completion and trajectory []),
//     since a to_record() document always has them, and a document without
//     them is not one verifiers wrote.
//
//   - The record's attributes are not read, and nothing is skipped: in an
//     evaluation every episode is a sample, whatever its run.work says.
//
//   - Any other object is one sample as it is (the SDK passes a mapping
//     with sample_id through): compact JSON, its keys in their order, ints
//     as ints, NaN and ±Inf as null (Python's NaN and Infinity in text
//     too). It must carry a non-null sample_id (reject.NoSampleID: a null
//     is no value, as everywhere in prime.episode). Nothing is added to it,
//     rollout_number included.
//
//   - A sample no samples request can carry (over 25 MiB with the
//     envelope) rejects its record (reject.EpisodeTooLarge): the SDK
//     refuses to send it rather than drop it silently.
//
//   - Rollout numbers are the caller's state (Counters, one per
//     evaluation): the n-th episode of an example_id is rollout n, across
//     batches, as the SDK numbers them with the dict its caller carries.
//     A document is numbered once, after its summary trace has projected
//     (a record rejected for its shape takes no number, except one
//     rejected for a later trace in the per-trace fallback); a record
//     mapped twice (a replay) takes a second number, so map each record
//     once. Counters remember a bounded number of examples, forgetting the
//     least recently numbered.
//
//   - The summary is the SDK's metrics.from_episodes, kept as running sums
//     instead of a list of episodes: over the trainable traces of every
//     episode seen, or over every trace while none is trainable; per
//     trace, sub-reward scores and metrics merged ({**scores, **metrics});
//     avg_error over episodes, those without traces included. avg_reward's
//     sum is compensated as Python's built-in sum is, avg_metrics' sums are
//     plain as the SDK's are, so both are the SDK's numbers to the bit. A
//     NaN or ±Inf makes its average not finite, and rendering removes it,
//     as the SDK's sending does. A plain sample counts as one trace, as its
//     keys say: trainable when "trainable" is true, its "reward" when a
//     number, its "metrics" that are numbers, not ok when "error" is
//     present and not null; sub-reward scores flattened into it cannot be
//     told from its other keys and are not averaged. With no episodes the
//     averages are 0, as from_episodes([]) gives.
//
//   - User keys (metric points and prime.metrics of the evaluation): the
//     last finite value wins; a NaN does not erase a value, as the SDK
//     drops it when it is logged. avg_metrics/<k> nests as avg_metrics.<k>.
//     They are merged over the computed keys shallowly, as the spec says:
//     one user avg_metrics/<k> replaces the computed avg_metrics map whole
//     (and a user avg_metrics map wins over a user avg_metrics number).
//
//   - prime_runs.traces_episodes_written (Summary.AddTracesEpisodes) is
//     merged into the summary's prime_runs map when it has one.
//
//   - Snapshots. Summary.State and Restore, and MarshalJSON and
//     UnmarshalJSON, carry sums and counts (no NaN: a non-finite value is
//     a flag), so a restart finishes the evaluation with what it had seen.
//     Counters marshal too.
//
//   - Bounds: a summary keeps at most 1024 metric names per aggregate and
//     4096 user keys; Counters DefaultCounterLimit examples.
//
//   - Rejections are *reject.Rejection, their Field the body key.
//
// # The v0 sample
//
// Keys in the SDK's order (projection.py trace_to_sample), from the
// summary trace T (the first trainable trace, else the first) of the
// document D:
//
//	sample_id       D.id; in a per-trace sample, T.id
//	example_id      T.task.data.idx
//	rollout_number  the example's count of episodes (Counters)
//	episode_id      D.id
//	agent           T.agent.name
//	trainable       T.agent.trainable
//	task            T.task.data
//	prompt          []
//	completion      the last branch's messages; [] for no branch
//	answer          T.task.data.answer
//	tool_defs       T.tools; null when empty
//	reward          the sum of score × weight over T.rewards; null when not finite
//	timing          T.timing
//	is_completed    T.is_completed
//	is_truncated    T.stop_condition is max_turns, max_input_tokens, max_output_tokens,
//	                max_total_tokens or compaction_failed, or T's last call without
//	                an error finished for "length" (verifiers' Trace.is_truncated)
//	metrics         T.metrics; {} when absent
//	error           the last of T.errors; null for none
//	stop_condition  T.stop_condition
//	trajectory      per branch {messages, num_input_tokens, num_output_tokens}
//	token_usage     T's calls' usage summed (Usage.aggregate): prompt_tokens and
//	                completion_tokens, then cached_input_tokens, reasoning_tokens
//	                and cost when a call reports them; null when no call has usage
//	info            T.info plus native_wrapper = D and native_trace_index; in a
//	                per-trace sample, T.info, null when empty
//	<name>          each non-null T.rewards[name].score, unless <name> is a key
//	                above (the SDK's setdefault)
package evalsample

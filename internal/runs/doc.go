// Package runs is the run lifecycle: it maps a resource to one platform
// run, creates or attaches it once, keeps what a run's uploads and metric
// posts must remember, and closes the run out. The exporter's metrics and
// logs pipelines share one Registry, so a run's two signals share one
// platform run.
//
// # API
//
//   - New(Config, Deps, ...Option) builds a Registry on a platform.Runs
//     backend and a Store (MemStore, or ExtensionStore on a storage
//     extension), both chosen once at start. Restore reloads saved runs;
//     Start begins the idle_timeout janitor; Shutdown finishes requested
//     close-outs and closes the store.
//   - Acquire(ctx, resource, signal, records) resolves the resource's
//     identity and returns a Lease on its run, creating (or attaching) the
//     run on its first data. Data that can never be sent is counted and
//     logged there and comes back as ErrSkipped.
//   - A Lease is a push's hold on its run: PostSteps (metrics, with
//     de-duplication of values already sent), Delivered / Object /
//     SaveObject / ObjectDone (the sample uploader's episodes, ranges and
//     pending uploads), Count, End (prime.run.end), Release.
//   - MarkHandedBack and Settle track the data a push handed back to the
//     collector's retry, so that a close-out waits for it.
//
// # Invariants
//
//   - Identity: prime.run.id, run.id, prime.run.key, run.key,
//     service.instance.id, first match wins; one identity is one registry
//     entry for the life of the process (and across restarts with a
//     persistent store).
//   - Create once: concurrent first data of a run waits for one create. A
//     create is not replayable, so it is retried in place only when the
//     request provably never reached the platform; after an ambiguous
//     failure the data goes back to the collector's retry and a warning
//     says a duplicate, empty run may exist. A 403 is remembered for 10
//     minutes. Without a team (prime.run.team_id or team_id) no create is
//     sent when Config.RequireTeam is set, and the data is rejected as
//     no_team; attached runs need no team.
//   - Close-out: after prime.run.end the run takes data for finalize_grace;
//     then it waits until no push holds a lease and none of its data waits
//     in the collector's retry, takes no more data (run_closed), and sends
//     its terminal status until it lands, a permanent refusal, or
//     finalize_timeout. It happens once per run. Collector shutdown finishes
//     requested close-outs and closes no other run.
//   - sample_id ranges: a run this process created counts its ranges per
//     step from 0; an attached run draws from [2^20, 2^21). A range is
//     taken once per object and kept with its pending upload, so a retry
//     or a restart never reuses one nor leaves a gap.
//   - Everything that a restart must not forget (run id, end, ranges,
//     pending uploads, delivered episodes) is written to the store before
//     the step that depends on it goes on.
//   - Memory is bounded: the sent values (65,536 per run), pending uploads
//     (256 per run) and the in-memory delivered set (2^18) are LRU caches,
//     and a closed run keeps only a small tombstone, so later data for it
//     is refused rather than starting a new run.
package runs

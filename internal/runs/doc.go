// Package runs is the run lifecycle: it maps a resource to one platform
// run, creates or attaches it once, keeps what a run's uploads and metric
// posts must remember, and closes the run out. The exporter's metrics and
// logs pipelines share one Registry, so a run's two signals share one
// platform run.
//
// # API
//
//   - New(Config, Deps, ...Option) builds a Registry on a platform.Runs
//     backend and a Store (internal/runstore: MemStore, ExtensionStore on
//     a storage extension, or RedisStore, which a fleet of collectors
//     shares and which plays the shared roles of fleet_redis.go too), both
//     chosen once at start. Restore reloads saved runs; Start begins the
//     idle_timeout janitor (and, in a fleet, the heartbeat); Shutdown
//     finishes requested close-outs, stops the heartbeat and closes the
//     store.
//   - Acquire(ctx, resource, signal, records) resolves the resource's
//     identity and returns a Lease on its run, creating (or attaching) the
//     run on its first data. Data that can never be sent is counted and
//     logged there and comes back as ErrSkipped.
//   - A Lease is a push's hold on its run: PostSteps (metrics rows, a
//     step's with de-duplication of values already sent, a time's as it
//     comes), NextRange (a sample object's sample_id range; the object
//     itself, to its confirm, and the episodes delivered before are
//     internal/upload's, in its store), Key (the run's key in the store),
//     Count, End (prime.run.end), Release. Its callers take the few
//     methods they use as interfaces of their own (upload.ObjectRun, the
//     exporter's stepPoster).
//   - MarkHandedBack and Settle track the data a push handed back to the
//     collector's retry, so that a close-out waits for it.
//
// # Parts
//
// The Registry keeps the run map (identity → run) and Acquire, Restore,
// Start, Shutdown and the hand-back calls; New wires three parts, once:
//
//   - The fleet (fleet.go) is what this collector shares with the others
//     of its fleet, picked from the store: solo (fleet_solo.go) for a
//     Store, redisFleet (fleet_redis.go; its create and close-out in
//     fleet_redis_create.go and fleet_redis_closeout.go) for a store that
//     also plays the shared roles (holdStore, claimStore, counterStore).
//     It covers a push's hold, the create and close-out
//     claims, sample_id ranges, delivered episodes and
//     the run's record, the quiet checks a close-out waits on, and
//     start/stop (the heartbeat), as six roles, each declared beside the
//     part that uses it and held by that part alone (fleetRoles):
//     presence and pushHolds (registry.go), recordKeeper (persist.go),
//     objectLedger (objects.go), createFleet (creator.go), closeOutFleet
//     (closer.go). Solo answers every call: its holds and claims do
//     nothing, and its ranges are the run's own counter. Nothing else asks
//     which fleet it has.
//   - The creator (creator.go, evalspec.go) gives a run its platform id,
//     for training runs and evaluations alike: it attaches, or creates
//     under the run's createMu through the fleet, which sends the create
//     once for the fleet (solo: at once); a 403 is remembered for
//     refusalBackoff.
//   - The closer (closer.go, evalend.go) owns the close-out sequence:
//     requestEnd (prime.run.end, an end the fleet recorded, a restored
//     ending run), the wait for the run's pushes and retries, the fleet's
//     claim, the terminal status sent until it lands, the closed record;
//     and the idle_timeout janitor. It starts their goroutines (grace
//     timers, later rounds, the janitor) and its shutdown stops the
//     janitor and runs or waits for every scheduled close-out, within the
//     shutdown's deadline. The heartbeat is the fleet's: started by Start,
//     stopped by Shutdown once the close-outs are done.
//
// # Invariants
//
//   - Identity: prime.run.id, run.id, prime.run.key, run.key,
//     service.instance.id, first match wins; one identity is one registry
//     entry for the life of the process (and across restarts with a
//     persistent store, and across the collectors of a shared one).
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
//     step from 0, for its newest steps (maxRangeSteps); a late object of
//     an older step, and any object of an attached run, draws at random
//     from the upper half [2^20, 2^21), which no counter reaches. Nothing
//     is written per range: the run's record holds where its free ranges
//     begin, and a process that restores the run counts every step in the
//     band above (rangesBand), so a restart never reuses a range. An
//     object keeps its range through retries and restarts under its own
//     key (internal/upload). With a shared store the counter is the
//     fleet's (below).
//   - Everything that a restart must not forget (run id, end, where free
//     ranges begin, delivered episodes) is written to the store before
//     the step that depends on it goes on. A storage extension that
//     refuses the write (a full disk) does not hold the step back: the
//     write is kept in memory, answered from there, and written when
//     storage takes writes again (runstore's backlog); a crash meanwhile
//     forgets it.
//   - Damaged state never stops the collector: a value a store cannot
//     read is salvaged, or its run left out, with one log line
//     (internal/runstore: salvage.go, extension_repair.go,
//     redis_damage.go).
//   - Memory is bounded and flat in a run's length: the sent values are
//     exact for the newest 512 steps, then kept per key as ranges of sent
//     steps (at most 256 a key; sentValues); the delivered sets are the store's, bounded there
//     (runstore's package doc); and a closed
//     run keeps only a small tombstone, so later data for it is refused
//     rather than starting a new run.
//
// # Shared registry (RedisStore)
//
// Collectors configured with the same shared_registry (the node collectors
// of a multi-node run, a gateway fleet behind the load_balancing exporter,
// a gateway restarted elsewhere) keep one registry in Redis. Redis's
// atomic operations are the whole of the coordination: SET NX PX claims,
// HINCRBY counters, and Lua scripts that read and write in one step.
// Each collector keeps its in-memory entries as before and reads the
// shared record on every push (one round trip), so what another collector
// did is seen at the next push.
//
// The keys and their expiries are internal/runstore's (its package doc):
// a run's record and range counters, the create and close-out claims, its
// holds, each collector's heartbeat, pending uploads, delivered episodes
// per step, and the index of runs whose close-out is not done.
//
// Create: a push with no id for its run takes the create claim. The winner
// reads the record again (a creator may have written the id and let its
// claim go in between), creates, writes the id, then lets the claim go;
// the others poll every 100 ms for the id, or for the claim to go (and
// take it), for up to 30 s, after which their data goes back to the
// collector's retry. Nothing is created without the claim. A failed
// create lets the claim go at once; an ambiguous one keeps the warning
// that a duplicate, empty run may exist. Should a create outlast its
// claim and a second collector create too, the first id written wins and
// both send to it. An attached run needs no claim.
//
// sample_id ranges: HINCRBY on the record per run and step. A created run
// counts from 0, as a single collector does; an attached run counts from
// 2^20, since writers outside the fleet (the platform's own SDK) count
// from 0. The random upper-half ranges are no longer needed between
// collectors; they remain only for a push that lost Redis between its
// first look and its upload, which draws from [3·2^19, 2^21), above every
// counted range.
//
// Close-out rule: data any collector holds when the run is marked closing
// (a push in flight, or a batch handed back to its retry before then) is
// delivered before the terminal status; data that reaches any collector
// after the mark is refused as run_closed, with the usual log line. A
// push's hold is taken by the script that checks for the mark, so no push
// slips between the mark and the close-out's count of holds. In order:
// prime.run.end makes the record ending (the fleet's first end wins);
// every collector that sees the run ending, through its own end or the
// record on its next push, schedules a close-out after finalize_grace;
// each waits until no live collector holds the run; one takes the close-out
// claim (the others look again every 5 s until the record says closed, so
// that a closer that was killed is replaced), marks the run closing,
// waits for its own pushes and the fleet's leases (within
// finalize_timeout), sends the terminal status and writes closed. The
// idle_timeout janitor counts a run idle only when no collector took its
// data.
//
// Exactly-once across collectors: delivered fingerprints and pending
// uploads are the fleet's, so a batch replayed through another collector
// leaves out what was delivered (already_delivered), and an upload another
// collector PUT is resumed with the confirm alone. The sent metric values
// stay per collector: a replay through another one posts a step's values
// again, which the platform merges.
//
// What each failure costs:
//
//   - Redis down: every push's first call fails; its data goes back to the
//     collector's retry (retryable, never permanent), the component status
//     turns to a recoverable error with one error log line, and back to OK
//     with an info line when Redis answers. Nothing is created or closed
//     out meanwhile (close-outs wait), and nothing is dropped. A push that
//     loses Redis midway retries the step that could not be checked, takes
//     a random fallback range, and logs what it could not record; if
//     marking its delivery fails, a replay through another collector may
//     upload those episodes again. Hand-backs made while Redis is down are
//     not seen by another collector's close-out. A collector that starts
//     while Redis is down starts without the ending runs; they are closed
//     out by the collectors that saw their end, by one that gets data for
//     them, or by the next to start.
//   - Redis restarted without its data: the fleet forgets its runs, as a
//     collector without storage does (a second run, ranges from 0 again).
//     Run the registry's Redis with persistence (appendonly).
//   - A collector killed mid-create: its claim holds the identity for at
//     most 2 minutes; meanwhile the fleet's pushes for the run wait 30 s
//     each and go back to the retry; then the next collector creates. If
//     the killed create reached the platform, that run stays empty.
//   - A collector killed holding data: its holds lapse within 15 seconds
//     (its heartbeat's expiry), so they delay a close-out, or its final
//     drain, by at most that (the drain is bounded by finalize_timeout
//     too). What it had not delivered is sent again by its sender (an
//     agent's queue) to the collector that takes the run over; data that
//     arrives after the run was marked closing is refused as run_closed.
//     A collector cut off from Redis for longer than 15 seconds is counted
//     as gone the same way until its heartbeat is renewed.
//   - A collector shut down gracefully: its heartbeat stops after its own
//     close-outs, so data it handed back to its retry and did not send
//     (a persistent sending queue replayed after a restart) holds the run
//     open for at most 15 seconds more.
//   - A collector killed mid-close-out: its claim expires after
//     finalize_timeout + 1 minute and a collector that saw the end, or the
//     next to start, finishes it; data for the run is refused meanwhile.
//   - A run moving between collectors (the gateway set changed, a gateway
//     restarted elsewhere): the new collector reads the record on the
//     run's first data and goes on with the same run id, range counter,
//     delivered set and pending uploads. What each collector still keeps
//     alone costs little: sent metric values (a repost), a remembered 403
//     (a request), its hand-back ledger (its own retries).
package runs

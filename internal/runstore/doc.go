// Package runstore is the run registry's persistence: what the run
// lifecycle (internal/runs) must remember about a run across a collector
// restart, and across the collectors of a fleet. It imports nothing of the
// lifecycle; internal/runs declares the roles it uses (its Store, and the
// shared roles of its Redis fleet) beside their callers, internal/upload
// the sample objects' (its ObjectStore), and the exporter picks one store
// at start:
//
//   - MemStore (mem.go): no storage; the delivered set in memory, the
//     newest 2^18 fingerprints in two generations; nothing survives a
//     restart.
//   - ExtensionStore (extension.go): a storage extension's client (the
//     contrib file_storage). Records under run/<key> with an index of keys;
//     a run's delivered episodes a value per step with a binary,
//     checksummed index (extension_index.go the format, extension_cache.go
//     the index in memory, extension_delivered.go the marks, bounded to a
//     run's newest 2^18 by pruning its oldest steps whole);
//     extension_repair.go repairs a damaged part or index;
//     extension_migrate.go moves the layout of earlier releases once;
//     extension_backlog.go keeps in memory the writes a full disk refuses,
//     answers from there and writes them when storage takes writes again.
//     Each sample object's upload is a key of its own (objects.go), which
//     the uploader (internal/upload) writes, never the run's record.
//   - RedisStore (redis.go): the shared registry of a fleet of collectors,
//     which beyond a store's calls holds, claims, counts and keeps pending
//     uploads (redis_pending.go) and delivered steps (redis_delivered.go)
//     with Redis's atomic operations; redis_damage.go moves aside or
//     repairs a key that holds what the registry does not write.
//
// A record is a SavedRun (record.go), keyed by the run's key (runkey.go).
//
// # Damage
//
// A store can hand back a value other than the one written: bit rot, a
// write torn below the storage extension, an operator's edit, another
// program's key in a shared Redis. The stores check every value they read.
// A damaged value is recovered as far as what is left allows, or its run
// is left out (salvage.go); either way one log line names the run and the
// damage, and the collector starts and goes on (docs/operations.md,
// Storage faults).
//
// # Redis keys
//
// Keys, with <p> the configured prefix and <k> the identity (id:<run id>,
// key:<run key>, instance:<service.instance.id>); each expiry counts from
// the key's last write (every push touches the record), so only finished
// or abandoned runs age out:
//
//   - <p>:run:<k>, a hash, 30 days: the record (identity, platform id,
//     team, state ""/ending/closing/closed, the first end's status and
//     reason, Prime Traces flags, when any collector last took data) and
//     the range counters, field range:<step>. A save merges: the id and
//     the end are written once, the state only moves forward.
//   - <p>:claim:create:<k>, 2 minutes: the collector creating the run.
//   - <p>:claim:closeout:<k>, finalize_timeout + 1 minute: the collector
//     closing the run out.
//   - <p>:holds:<k>, a sorted set, each member 10 minutes: the run's data
//     held anywhere, l:<collector>:<n> per push in flight, r:<collector>:<n>
//     per batch handed back to a collector's retry (renewed by each retry
//     attempt). A member counts only while its collector's heartbeat is
//     there; the 10 minutes are the backstop.
//   - <p>:alive:<collector>, 15 seconds: the collector's heartbeat,
//     renewed every 5 s (every second after a failed renewal) from Start
//     until Shutdown has finished its close-outs, and by every hold it
//     takes. The script that counts a run's holds skips, in the same step,
//     the members of a collector whose heartbeat has lapsed (it was killed
//     or lost Redis); it leaves them, so that a collector that answers
//     again counts again.
//   - <p>:pending:<k>, a hash, 7 days: unconfirmed uploads by object
//     fingerprint (range, presigned URL and key, whether the PUT is done).
//   - <p>:deliveredstep:<step>:<k>, a sorted set per step scored by
//     marking time, 7 days after its last marking: the fingerprints of the
//     step's confirmed episodes and committed documents (an evaluation's
//     samples and documents are under the step -9223372036854775807);
//     <p>:deliveredsteps:<k>, the run's steps (a sorted set scored by
//     step), and <p>:deliveredheld:<k>, their count, 7 days. A marking
//     (one script) deletes the run's oldest steps, whole, past 2^18
//     fingerprints (at about 100 bytes each in Redis, some 26 MB a run at
//     most); a check is one pipeline. The sets of earlier releases,
//     <p>:deliveredz:<k> (the run's newest 2^18 by marking time) and
//     <p>:delivered:<k> (a plain set), are still read until they expire.
//   - <p>:ending, a set without expiry: runs whose close-out is not done,
//     which a starting collector reloads; a close-out removes its run.
//   - On a multi-tenant gateway, each tenant's registry is a store Scoped
//     to <p>:tenant:<digest of the user id> (redis_scoped.go), with every
//     key above under it, and <p>:tenants, a hash without expiry, is the
//     tenant index (user id → the key it last sent with; Fields and
//     SetField).
//
// The same Redis (NewRedisClient) holds a multi-tenant gateway's ingest
// limits, which internal/tenants keeps: <p>:limit:<unit>:<digest of the
// user id>, a hash, until the bucket would be full again.
package runstore

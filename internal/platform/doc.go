// Package platform is where runs go, chosen once at start: Online (the
// platform's RFT API through package rft) or Offline (a local directory
// with the same bodies). Both implement Runs (create, attach, metrics,
// finalize, status) and Objects (a step's sample object: online in two
// stages, "upload", a presign when needed then the PUT, and "confirm";
// one file offline), so the lifecycle and the uploader never ask which one
// they have. The caller saves an object after its upload, before the
// confirm: from then on its key must never be forgotten (a new key could
// land the rows twice), while losing a presign only orphans a URL. This
// package also holds the exporter's one retry policy, the one translation
// of platform errors into the collector's, and the watch of each service's
// outages.
//
// # Retry policy
//
// Three places retry, each for a reason the others cannot cover:
//
//  1. The rft client, in place, briefly. Every platform call gets up to 5
//     attempts and every object PUT 3, with jittered exponential backoff
//     from 1 s to 30 s, or the platform's Retry-After (at most 60 s). It
//     retries only what a duplicate cannot harm: metrics posts (the
//     platform merges a step's posts), presign, PUT, confirm, finalize and
//     status; a create only when the request provably never reached the
//     platform (no connection, or 429). It exists because a blip must not
//     cost a trip through the queue: the retried request keeps its place,
//     so a run's steps reach the platform in order, and the Retry-After is
//     honoured by the request that received it. In-place waits end at the
//     collector's first shutdown notice, so a drain never waits them out.
//
//  2. exporterhelper (retry_on_failure and sending_queue), for
//     everything longer, with no time limit by default
//     (max_elapsed_time 0, where exporterhelper's default drops a
//     request after 5 minutes): the queue bounds memory, since a full
//     queue refuses at the receiver and the trainer's SDK retries at
//     the source. A push returns only what did not land
//     (consumererror.NewLogs / NewMetrics): the steps and objects that
//     failed and, once a failure says the platform is down (Down: a
//     transport error, 429, 502, 503, 504), everything after them,
//     unsent, so no step overtakes another. Retryable translates the
//     error: permanent classes (400, 401, 403, 404, a body the client
//     refuses) are dropped and counted, never retried; a Retry-After
//     becomes exporterhelper's throttle. Every step of a replayed push
//     is safe to replay: the run is created once, values already sent
//     and episodes already delivered are left out (a collector
//     restarted from storage sends a step's values again: the platform
//     merges a step's posts), and an object whose PUT succeeded is only
//     confirmed.
//
//  3. The close-out, by itself. The prime.run.end record was acknowledged
//     to the collector when the close-out was scheduled, so nothing else
//     would ever retry it: a close-out that fails for a reason that may
//     pass tries again every 5 s (or after the Retry-After), each round
//     with the client's in-place attempts, until finalize_timeout or the
//     collector's shutdown. Finalize and status are compare-and-set, and a
//     409 counts as done, so every round is safe.
//
// Nothing else retries: the uploader and the metrics path never loop on
// their own, and a create refused with 403 is not asked again for 10
// minutes (a wait, not a retry).
//
// # Outages
//
// Online and OnlineTraces tell the operator about a long outage of a
// service the exporter calls (the platform's API, its object storage,
// Prime Traces; each watched apart, since they are different services) in
// two log lines: one warning once the service has failed every call for
// over a minute, naming the routes that failed and how full the
// collector's sending queue is (WithOutageBacklog), and one info line at
// the first success after that, saying how long the outage lasted.
// exporterhelper already logs every failed push; these lines tell one
// outage from many failures, and say whether the queue is filling while
// the exporter waits. The watch (outage.go) also tells a health callback
// (WithOutageHealth) when an outage begins and ends, at once rather than
// after a minute: the exporter's component status, which a health check
// reads, says what holds data back now.
//
// The watch knows nothing of errors: watched (errors.go) reports every
// call to its service's watch as a success, or as a failure that says the
// service is down (Down), named by its route. An outage begins when the first call that failed
// with it began (a call may spend up to a minute in the client's in-place
// retries before it reports), and the warning is logged at the first
// failure after a minute: exporterhelper's back-off (at most 30 s by
// default) keeps failures coming while the outage lasts.
package platform

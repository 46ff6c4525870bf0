// Package rfttest is an in-process fake of the Prime Intellect platform's
// training-run ("RFT") API, in the spirit of net/http/httptest: NewServer
// starts a loopback HTTP server that speaks the routes and enforces the rules
// of the platform contract (rft-api.md in the project's shared spec), records
// every request, and lets a test inspect the resulting runs and script faults.
//
// # An independent oracle
//
// The fake is written from the spec alone. It decodes request bodies as
// generic JSON (json.Decoder with UseNumber) and does not import the
// project's rft client package, on purpose: a fake that shared the client's
// wire structs would agree with any mistake in them. Here a misspelt key, a
// null optional, a float where an int belongs or a missing auth header is a
// 4xx, exactly where a strict platform would refuse it.
//
// It is stricter than the real platform is known to be in a few places, so
// that client mistakes surface in tests rather than in production:
//   - unknown keys in any body are a 400 (FastAPI would ignore them);
//   - integers must be integer literals ("10", not "10.0" or "1e1");
//   - metric values must be JSON numbers;
//   - a metrics post with no "step" must carry a positive "_timestamp"
//     (unix seconds): it is the row of that time, kept in Run.TimeMetrics;
//   - a body must be valid UTF-8 and exactly one JSON object;
//   - a wrong Content-Type on a platform route is a 415.
//
// Writes to a run that is already closed (metrics, presign, confirm) are
// refused with 409 {"detail":"Cannot … run in '<STATUS>' state."}, the way
// the status route refuses a second close: the spec has the client drain
// before it closes out and send nothing afterwards, so any such write is a
// client bug a test should see.
//
// # Prime Traces
//
// The same server also plays Prime Traces (prime-traces.md), a host of its
// own in production: POST /api/v1/traces off URL(), whatever the Prefix.
// It takes the key as Authorization: Bearer only, and refuses, with
// Prime Traces' {"error": {"code", "message"}} body: a team listed in
// Options.TracesDisabledTeams (403 service_not_enabled); a body other than
// the two multipart parts metadata ({"schema_version": 1}, an optional
// non-empty context, nothing else) and traces (traces.jsonl,
// application/x-ndjson, gunzipped when its part says Content-Encoding:
// gzip); an Idempotency-Key other than sha256:<hex> of the uncompressed
// JSONL (400 digest_mismatch); a line format other than episode (400
// line_format_mismatch, or 409 line_format_conflict when the same bytes
// were committed under the other format); a line that is not one compact
// JSON object, or whose member traces do not each carry run.id (400
// invalid_trace). A batch sent again (same team, same digest) gets its
// first receipt with a 200 and is not committed twice. TraceDocuments,
// TraceUploads and TraceRequests inspect what arrived; RouteTraces takes
// faults, and Fault.Code gives a fault Prime Traces' error body.
//
// Stricter than the service is known to be: an x-api-key header (the
// platform's, which has no business on another host) is a 400, so is a
// gzip mtime other than 0 (a replay's bytes would differ), and lines must
// be compact. invalid_request (400, or 415 for a wrong Content-Type) and
// batch_too_large (413) are the fake's own codes for envelope errors the
// spec names none for.
//
// # Users, keys and ownership
//
// Every key belongs to one user: Options.APIKey (default "test-key") to the
// default user UserID, each of Options.Users (or AddUser) to its User.ID;
// a user may hold several keys. GET /api/v1/user/whoami, whatever the
// Prefix, with the key in both headers as on the RFT routes, answers
// {"data":{"id":<the key's user>}} and 401 for a key the server does not
// know: what a client asks to learn whether a 401 elsewhere was about its
// key (RouteWhoami takes faults as any route). RevokeKey makes a key a 401
// on every route from then on, whoami and Prime Traces included.
//
// A run belongs to the user whose key created it (AddRun: UserID;
// AddRunOwnedBy: any), and so does an evaluation. Any request on a run
// with another user's key (metrics, presign, confirm, finalize, status) is
// a 404 {"detail":"Run not found"} that changes nothing, before any other
// rule (another user's closed run is a 404, not a 409); an unknown run's
// 404 names the id. Another user's evaluation answers as an unknown one. A
// create for a team is a 403 unless both Options.AllowedTeams and the
// user's Teams let it (nil lets every team). The hub's environments and
// Prime Traces uploads belong to no user: any live key reaches them.
// Run.Owner and Evaluation.Owner name the owner; Request.UserID the user
// whose key each request carried, where its route takes the key ("" when
// it was missing or refused).
//
// # Evaluations and the environments hub
//
// The server also plays the evaluations API (evals-api.md), always under
// /api/v1 whatever the Prefix, with the key as Authorization: Bearer (an
// x-api-key is not looked at). The hub holds the environments a test
// registers with AddEnvironment; a resolve by name (POST
// /environmentshub/resolve) is a get-or-create, a lookup by slug (GET
// /environmentshub/{owner}/{name}/@latest) answers 404 for one it does not
// have, and a create (POST /evaluations/, 201; without the trailing slash a
// 307, as FastAPI redirects) answers 404 for an environment id or pinned
// version the hub lacks. Every create registers a new evaluation and every
// samples request appends, duplicates included, so the spec's
// non-replayable routes show their hazard. PUT /evaluations/{id} takes
// either the summary update ({"metadata"?, "metrics"?}, metadata replacing
// the whole document) or the failed/cancelled status ({"status":
// "FAILED"|"CANCELLED", "error_message"?}); finalize moves RUNNING to
// COMPLETED once. A closed evaluation refuses every write with 409
// {"detail": "Cannot … evaluation in '<STATUS>' state."}. Evaluations,
// Evaluation and Environments inspect the state (samples in append order,
// every update and finalize in order); AddEvaluation stands for a hosted
// launch's evaluation. Stricter than the platform is known to be: bodies
// must be compact, a samples request over 25 MiB is a 413, every sample
// needs a sample_id, empty metadata or metrics must be left out, a
// summary number must be finite, an error_message over 4,096 characters is
// a 400, and a resolve of a slug-shaped name is a 400.
//
// # Faults
//
// Inject queues scripted faults per route; each matching request consumes
// the next one, whether or not it would have been authenticated (a fault
// models the network or a gateway in front of the platform). A fault can
// answer a status without processing (the request provably never reached the
// platform: 429, connection refused), or process first and then answer or
// drop the connection (a lost response: 502/504, read timeout), which is the
// case the spec's non-replayable create must survive. A Delay is bounded:
// it ends early when the client gives up or the server closes, and a request
// whose delay ended early is not processed (unless it already was).
// SetOutage answers every request of every route through one fault until
// it is lifted: the platform is down for a while. Outages tells when each
// outage began and ended and how many requests of each route it refused.
//
// # What it does not model
//
//   - Presigned-URL expiry (expiresIn is reported, never enforced), object
//     storage reads, listings, multipart uploads and redirects.
//   - The dashboard, run listing/reading routes, the teams listing, scopes
//     other than the team lists, and per-run tokens: a user's key opens
//     everything of that user's.
//   - Rate limits and server-side retries: 429/5xx only come from Inject.
//   - The Parquet content: uploaded bytes are stored as they are; decoding
//     and checking the table is the tests' business.
//   - HTTP/2 and TLS: the server speaks plain HTTP/1.1 on 127.0.0.1.
package rfttest

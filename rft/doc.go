// Package rft is the client of the Prime Intellect platform's training-run
// ("RFT") API: create a run, post step metrics, upload sample tables
// (presign → PUT → confirm) and close the run out. It speaks exactly the wire
// contract of the platform's Python SDK (prime_runs) and has no collector
// imports, so the exporter's lifecycle logic stays apart from the wire.
//
// # One wire struct per body
//
// Every request and response body has exactly one Go struct (wire.go), with
// the platform's JSON spelling in its tags. Required keys are always sent
// (team_id, max_steps even when 0, environments as [] never null); optional
// keys are left out when unknown, never sent as null. The one response that
// comes in two spellings (presign: presignedUrl/s3Key or presigned_url/s3_key,
// with or without a "data" envelope) is still read by one struct.
//
// # Replay policy per route
//
// Whether a call may be sent again after a failure depends on what the
// platform does with a duplicate, so each route declares it where it is
// called:
//
//   - create run is NOT replayable: the platform registers a run per request,
//     so a retry after a lost response (502, 503, 504, read timeout, reset)
//     registers a second run and only the second would be tracked. It is
//     retried in place only when the failure proves the request was never
//     processed: the connection was never made (refused, DNS, connect
//     timeout), or the platform answered 429.
//   - metrics, presign, confirm, finalize and status are replayable: the
//     platform merges metric posts of one step, a presign only mints a URL,
//     a second confirm of a key changes nothing, and finalize/status are
//     compare-and-set (a 409 "already closed" is a success). They are retried
//     in place on every retryable class.
//   - 400, 401, 403 and 404 are never retried: sending the same request again
//     gets the same answer.
//
// Telling "never sent" from "maybe processed" uses net/http/httptrace: once
// the request has been written, any failure is ambiguous; before that (no
// connection, or a failed dial) it is not. A transport that reports no trace
// events is treated as ambiguous unless its error is a dial error, because
// guessing "unsent" wrongly would duplicate a run.
//
// # Retry briefly, in place; outages are the caller's
//
// The client retries in place only briefly: up to 5 attempts per platform
// call (the SDK's figure) and 3 per object PUT, with exponential backoff
// from 1 s capped at 30 s and jittered ×0.5–1.5, or the server's Retry-After
// (capped at 60 s). Longer outages are the caller's job: the collector's
// queue and retry replay the whole push later. So every error is typed
// (*Error) with a Class, and says whether trying the operation again later
// may succeed (Retryable) and whether the platform may already have
// processed it (Ambiguous), which is what the caller needs to decide between
// a retry, a permanent drop, and a warning about a possible duplicate run.
//
// # Secrets
//
// The API key goes out in both Authorization: Bearer and x-api-key (the
// internal router reads one, the public router the other) and nowhere else:
// no error string, no String() output, no redirect. Platform calls and object
// PUTs follow no redirects, because net/http would forward x-api-key to
// another host.
//
// Object PUTs go through a client of their own (NewObjectClient), because a
// presigned URL carries its own credentials and the store rejects others:
// Put sets only Content-Type and User-Agent, never the platform's auth
// headers, and the URL's query string (the signature) never appears in an
// error either. That client reaches the store the way the platform is
// reached, through the configured proxy_url or else the environment's
// proxies (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), so that uploads work where
// only a proxy gets out; it follows no redirect, because a presigned PUT
// must go where it was signed for. Its transport is its own, cloned from
// net/http's default for the dial, TLS and idle settings, so that
// CloseIdleConnections at shutdown releases the store's keep-alive
// connections along with the platform's and touches no other client's.
// Its connections take a PUT's body in one write from where it lies
// (putbody.go) rather than through a 32 KB buffer a write.
//
// # Prime Traces
//
// Traces is the client of Prime Traces, the platform's store of episode
// documents, a host of its own (https://prime-traces.pintel.dev by default,
// PRIME_TRACES_URL in the SDK). One batch is one POST {url}/api/v1/traces:
// a multipart/form-data body whose first part, "metadata", is
// {"schema_version":1,"context":{…}} (context is provenance such as source
// and run_type, left out when empty, never the run id) and whose second,
// "traces" (traces.jsonl, application/x-ndjson, Content-Encoding: gzip), is
// the documents as compact UTF-8 JSON lines joined by "\n". The key goes
// only in Authorization: Bearer, never in x-api-key; the team, when known,
// in X-Prime-Team-ID; X-Prime-Line-Format: episode says the lines are
// episode documents. A 200 or 201 answers {"upload_id", "status":
// "committed"}.
//
// Uploads are content-addressed: Idempotency-Key is sha256:<hex> of the
// uncompressed JSONL, the gzip stream has mtime 0 and the multipart
// boundary comes from that digest, so the same batch is the same bytes
// every time and a replay commits nothing twice. That is why a batch is
// retried in place even after an ambiguous failure (429, 502, 503, 504,
// transport errors; up to 5 attempts; Retry-After honoured up to 60 s), and
// why TraceBatches cuts lines deterministically: a batch closes at 30 MiB
// of JSONL or 1,000,000 lines, and a line over 64 MiB is refused locally,
// never split. Other answers are final and carry the body's error.code in
// Error.Code: 400 (invalid_trace, digest_mismatch, trace_too_large, …),
// 409 line_format_conflict (the same bytes were sent under another line
// format), 401/403 unauthenticated, forbidden (the key lacks the traces
// scope), service_not_enabled (the account has no Prime Traces: the
// caller's cue to keep the run on the sample table) and auth_unavailable.
// The classes stay those of the status code, so a caller that treats
// auth_unavailable as passing must read Code.
//
// The service finds a run's episodes by trace.run.id only, and the SDK
// never overwrites a run a document already has. prime-rl stamps its own
// run (its trainer's id, with work) on every episode, so under the SDK's
// rule its documents would carry no platform run id and the dashboard would
// not find them. StampRun decides otherwise: the platform run id becomes
// run.id on the document and on every member trace, the trainer's differing
// id moves to run.trainer_run_id, and every other key of the run stays; a
// document without a run gets {"id", "type"}, a member trace without one a
// copy of the document's. Everything else of the document is kept as
// written, key order and number spelling included.
//
// # Evaluations
//
// The evaluations API (evals-api.md) has its own client methods
// (evals.go), all under /api/v1 even for a client built for
// /api/internal, since the internal router serves training only, and all
// with the key as Authorization: Bearer alone. Environments are resolved
// before the create: by name through the hub's get-or-create
// (ResolveEnvironment, replayable), by slug through GET …/@latest
// (LookupEnvironment, replayable), an explicit id as it is; one that
// cannot be resolved fails the list. CreateEvaluation, AppendSamples and
// FinalizeEvaluation are NOT replayable (the platform registers an
// evaluation per create, appends per samples request, and completes once),
// so they are retried in place only when the request was provably never
// processed (never sent, or 429); after an ambiguous failure the caller
// decides, and for samples it counts the batch as uncertain rather than
// send it twice. UpdateEvaluation (config and summary) and
// SetEvaluationStatus (FAILED or CANCELLED, a 409 "already closed" being a
// success) are replayable. Summaries lose their non-finite numbers
// (FiniteSummary) before they are sent. One samples request carries at
// most 25 MiB, the envelope {"samples":[]}, each sample's compact JSON and
// the commas counted; SampleBatches cuts samples by exactly that rule on
// exactly the bytes AppendSamples sends (each sample compacted, nothing
// re-escaped), and reports a sample that can never fit instead of
// splitting or dropping it.
package rft

// Package primestatusextension is the prime_status extension: an HTTP
// route that tells a trainer about its run, so that prime_otel's init()
// can report the platform's run id and dashboard, and raise when the run
// is refused.
//
//	GET /prime/v1/runs/status?kind=train&key=<run key>
//	GET /prime/v1/runs/status?kind=eval&id=<platform id>
//
// The extension knows no runs itself. The prime exporters of the
// collector register with it at start (RegisterRunStatusSource) and it
// asks each in turn; the first answer other than unknown wins. On the
// agent tier, which has no prime exporter, gateways lists the gateways'
// status routes: they are asked at once, each within a short timeout, and
// the first answer other than unknown wins. gateway_client is how they are
// asked (confighttp: tls, auth, timeout); in front of multi-tenant
// gateways its auth is prime_auth, which asks with the caller's own key
// (the route's include_metadata: true), so that each gateway answers the
// caller about its own runs only.
//
// Decisions:
//   - The route reads; it never creates, holds or acquires a run. A run
//     comes into being by its data (prime_otel's init() sends a
//     prime.run.start record first).
//   - A query is strict: kind train or eval (default train), exactly one
//     of key and id, no other parameter; anything else is a 400 naming the
//     parameter, so that a misspelt parameter fails at once rather than
//     answering unknown until the trainer's wait runs out.
//   - The server is confighttp's: TLS, auth and the rest come with it. It
//     listens on loopback by default.
package primestatusextension

//go:generate go run -C ../internal/metadata/mdatagen . ../../../primestatusextension/metadata.yaml $GOPACKAGE

// Package primeauthextension is the prime_auth extension: a server
// authenticator for OTLP receivers that lets in a sender whose request
// carries a platform key the platform accepts, as
// "Authorization: Bearer <key>", and refuses every other (OTLP/HTTP 401,
// gRPC Unauthenticated), so that a trainer hears at once that its key is
// missing or wrong. It is also a client authenticator (forward.go) for a
// collector that forwards trainers' requests, such as the agent tier in
// front of multi-tenant gateways: each request goes on with the key its
// trainer sent.
//
// Decisions:
//   - The platform is the authority: a key is good when the platform's
//     GET /api/v1/user/whoami names its user. The gateway is configured
//     with no key and no list of tokens, so a multi-tenant gateway has no
//     secret of its own to lose, and a key revoked on the platform stops
//     working here within the cache's TTL.
//   - Answers are cached (internal/tenant): a good key for ttl, a refused
//     one for refused_ttl, at most max_keys of them. A key that was good
//     is still let in for max_stale while the platform cannot be asked; a
//     key never seen good is refused meanwhile, with an error that says
//     the platform could not be asked rather than that the key is wrong.
//   - The user id goes into client.Info.Auth as "prime.user_id". The prime
//     exporter does not rely on it (a batched or persisted request keeps
//     only its metadata): it asks whose the key is itself, so receivers
//     must set include_metadata: true.
//   - Forwarding holds no key: the key sent on is the one in the
//     forwarded request's client metadata (the receiver's
//     include_metadata: true; the persistent queue keeps metadata, so a
//     replayed request goes with its own key). A request without one
//     fails, never goes out keyless. gRPC refuses to send it on a plain
//     connection (RequireTransportSecurity); HTTP sends it over https, or
//     in clear text to loopback only.
//   - No error or log line repeats what a sender presented.
package primeauthextension

//go:generate go run -C ../internal/metadata/mdatagen . ../../../primeauthextension/metadata.yaml $GOPACKAGE

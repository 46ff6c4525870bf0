// Package tenants is a multi-tenant gateway's backends: one per platform
// user, each a whole single-key exporter's backend (its own run registry,
// store, uploader and 401 guard) speaking with that user's key, and the
// tenants::* settings that make a gateway.
//
// Runs are scoped to their tenant because each tenant's identities live in
// its own registry: a sender who presents another tenant's prime.run.key
// makes a run of its own, and one who presents another's prime.run.id is
// refused by the platform (the run is not its user's) and counted. A key
// the platform starts refusing trips that tenant's guard alone, and not the
// component's status, so readiness stays up while other tenants flow.
//
// A tenant's backend is made on its first data and kept until shutdown;
// tenants::max_tenants bounds how many are made, each holding a registry
// of at most tenants::max_open_runs open runs. With storage, the tenants
// and the key each last sent with are kept in the storage extension (plain
// text, beside the persistent queue, which holds each request's
// Authorization header too), so that after a restart the idle janitor and
// the close-outs of every tenant's runs go on with that tenant's key
// before it sends again.
//
// Each tenant's ingest rate is limited (tenants::limits, limits.go), in
// bytes and records per second with a burst, each tenant's own or the
// defaults. The decisions:
//
//   - The limit is asked at the receiver, before the sending queue
//     (AdmitLogs, AdmitMetrics), so that what it refuses was never
//     accepted and nothing accepted is dropped: the sender hears OTLP/HTTP
//     429 with Retry-After or gRPC RESOURCE_EXHAUSTED with RetryInfo, and
//     sends again then, as prime_otel and the OTel SDKs do.
//   - A token bucket per tenant and unit that admits while it is not in
//     debt and then takes the whole request (bucket.go): a request bigger
//     than the burst still passes on a full bucket, and its debt holds the
//     tenant back, so the retry delay is exact and no request is refused
//     for ever.
//   - Across gateways the limit is shared on the shared registry's Redis
//     when there is one (bucket_redis.go), not split N ways as Mimir's
//     distributors do: the agents route each run to one gateway, so under
//     a split a tenant with one run would get 1/N of its limit. While
//     Redis does not answer each gateway keeps the limit alone at the full
//     rate: availability before precision.
//   - Overrides by user id come from a file read again while the gateway
//     runs, as Mimir's runtime overrides (overrides.go); a bad edit keeps
//     the last good overrides.
//
// Two decisions of the package's shape:
//
//   - It sits beside internal/tenant rather than in it: tenant says who
//     sent a request, and the prime_auth extension imports it; this package
//     holds run registries and storage, which the extension has no use for.
//   - A Gateway is generic in its backend, which the exporter builds with
//     the same constructor as the single key's (Settings.Build): two
//     assemblies of a backend would drift, and the second would lack
//     something. This package gives each tenant's registry its client,
//     store, logger and limit; the exporter adds the rest.
package tenants

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

// Package tenant says who sent a request to a multi-tenant gateway: the
// platform key it carries as "Authorization: Bearer <key>", and the user
// that key belongs to as the platform's whoami answers.
//
// The platform is the only authority on keys, so the gateway holds none of
// its own: a key is good while whoami says whose it is. Answers are cached
// for a bounded time and in a bounded number, because every OTLP request
// carries the key and whoami is one more round trip; a refused key is
// cached too, for less time, so that a sender retrying a bad key cannot
// make the gateway call the platform for each request. A key is never
// kept as the cache's map key: the map is keyed by its SHA-256, so a heap
// dump of the cache shows only the keys in flight.
package tenant

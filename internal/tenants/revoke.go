package tenants

import "go.opentelemetry.io/collector/component"

// keyRevoker is an extension that authenticates senders by their platform
// key and can be told that the platform refused one (prime_auth).
type keyRevoker interface {
	RevokeKey(key string)
}

// KeyRevokers tells every keyRevoker of the collector of a refused key;
// nil when there is none.
func KeyRevokers(host component.Host) func(key string) {
	var rs []keyRevoker
	for _, ext := range host.GetExtensions() {
		if r, ok := ext.(keyRevoker); ok {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	return func(key string) {
		for _, r := range rs {
			r.RevokeKey(key)
		}
	}
}

package runstore

import "context"

// Scoped is a store on s's connection whose keys start with prefix
// instead: a registry of its own in the same Redis, as a multi-tenant
// gateway keeps one per tenant. Its Close leaves the connection open; s's
// closes it. A tenant's stores share one connection pool rather than each
// holding its own, which a thousand tenants would make a thousand pools.
func (s *RedisStore) Scoped(prefix string) *RedisStore {
	opts := s.opts
	opts.Prefix = prefix
	return &RedisStore{
		c: s.c, opts: opts, down: s.down, scoped: true,
		hold: s.hold, holds: s.holds, save: s.save, unlock: s.unlock, replace: s.replace, markStep: s.markStep,
	}
}

// Prefix is what every key of s starts with.
func (s *RedisStore) Prefix() string { return s.opts.Prefix }

// Fields reads the hash <prefix>:<name>, a value of the caller's own kept
// beside the registry's keys, without expiry: a multi-tenant gateway's
// tenant index (user id → the key it last sent with).
func (s *RedisStore) Fields(ctx context.Context, name string) (map[string]string, error) {
	m, err := s.c.HGetAll(ctx, s.plain(name)).Result()
	return m, s.seen(err)
}

// SetField writes one field of the hash Fields reads. Each field is
// written on its own, so that collectors adding fields at once lose none.
func (s *RedisStore) SetField(ctx context.Context, name, field, value string) error {
	return s.seen(s.c.HSet(ctx, s.plain(name), field, value).Err())
}

// plain is the key <prefix>:<name>.
func (s *RedisStore) plain(name string) string {
	if s.opts.Prefix == "" {
		return name
	}
	return s.opts.Prefix + ":" + name
}

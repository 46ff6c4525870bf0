package runstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/zap"
)

// Expiries of the shared registry's keys. Each is counted from the key's
// last touch, so a live run never loses them; they only bound what a
// finished or abandoned run leaves in Redis.
const (
	// recordTTL: a run's record (id, state, end, ranges) outlives its last
	// data by 30 days. Until then a closed run refuses late data, and its
	// ranges keep counting; after it, the identity would start a new run.
	recordTTL = 30 * 24 * time.Hour
	// deliveredTTL: the delivered episodes of a run are remembered for 7
	// days after the last one; a replay older than that is uploaded again.
	deliveredTTL = 7 * 24 * time.Hour
	// pendingTTL: an unconfirmed upload is resumable for 7 days after its
	// last progress, far longer than any retry of it.
	pendingTTL = 7 * 24 * time.Hour
)

// RedisOptions are the shared registry's connection and its health hook.
type RedisOptions struct {
	Endpoint string
	Password string
	DB       int
	// Prefix starts every key, so that several fleets can share a Redis.
	Prefix string
	// TLS, when set, reaches Redis over TLS.
	TLS    *tls.Config
	Logger *zap.Logger
	// Health is told when Redis stops answering (err) and when it answers
	// again (nil), once per change.
	Health func(err error)
}

// RedisStore is the shared registry: a store on Redis that a fleet of
// collectors shares. Beyond a store's calls it holds, claims, counts and
// keeps pending uploads; its atomic operations (SET NX PX, HINCRBY, Lua
// scripts) are the whole of the fleet's coordination. Its keys are in the
// package doc.
type RedisStore struct {
	c    *redis.Client
	opts RedisOptions
	// down is shared by the stores Scoped makes on one connection: Redis
	// is down for all of them at once, and Health hears it once.
	down *atomic.Bool
	// scoped stores leave the connection to the store they came from.
	scoped  bool
	hold    *redis.Script
	holds   *redis.Script
	save    *redis.Script
	unlock  *redis.Script
	replace *redis.Script
	// markStep is markStepScript.
	markStep *redis.Script
	// reported are the one-time reports of damage made (runs' keys).
	reported sync.Map
}

// recordFields are the record's fixed fields, in the order the hold script
// returns them; the ranges are fields of the same hash (range:<step>).
func recordFields() []string {
	return []string{"key", "source", "value", "attach", "id", "team", "state", "end_status", "end_reason", "traces_committed", "traces_on_table", "seen"}
}

// holdScript reads the record and, unless the run is closing or closed,
// adds the hold: one step, so that a close-out that marked the run closing
// has seen every hold it will ever have to wait for. Redis's clock scores
// the holds, so that the collectors' clocks need not agree. Taking a hold
// also renews its collector's heartbeat (ARGV[4] the heartbeat key without
// the owner), so that no hold is taken uncounted.
const holdScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rec = redis.call('HMGET', KEYS[1], 'key', 'source', 'value', 'attach', 'id', 'team', 'state', 'end_status', 'end_reason', 'traces_committed', 'traces_on_table', 'seen')
if ARGV[1] == '' then return {rec, 0} end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'seen', string.format('%.0f', now))
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
if rec[7] == 'closing' or rec[7] == 'closed' then return {rec, 0} end
local owner = string.match(ARGV[1], '^[^:]*:([^:]+):')
if owner then redis.call('SET', ARGV[4] .. owner, '1', 'PX', ARGV[5]) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', string.format('%.0f', now))
redis.call('ZADD', KEYS[2], string.format('%.0f', now + tonumber(ARGV[2])), ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {rec, 1}
`

// holdsScript counts the live holds by kind, forgetting expired ones and
// ignoring those of a collector whose heartbeat (<p>:alive:<owner>, ARGV[1]
// the key without the owner) has lapsed: it was killed or lost Redis. They
// are not removed, so that a collector that answers again counts again;
// their own expiry is the backstop.
const holdsScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now))
local leases, retries = 0, 0
local alive = {}
for _, m in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local owner = string.match(m, '^[^:]*:([^:]+):')
  local live = true
  if owner then
    if alive[owner] == nil then alive[owner] = redis.call('EXISTS', ARGV[1] .. owner) == 1 end
    live = alive[owner]
  end
  if live then
    if string.sub(m, 1, 1) == 'l' then leases = leases + 1 else retries = retries + 1 end
  end
end
return {leases, retries}
`

// saveScript merges a record: identity, id, team and end are written once,
// the state only moves forward, the Prime Traces flags only turn on. The
// ending index lists the runs whose close-out is not done, for a restart.
const saveScript = `
local rank = {[''] = 0, ending = 1, closing = 2, closed = 3}
local function once(f, v) if v ~= '' then redis.call('HSETNX', KEYS[1], f, v) end end
once('key', ARGV[1]) once('source', ARGV[2]) once('value', ARGV[3]) once('attach', ARGV[4])
once('id', ARGV[5]) once('team', ARGV[6])
local cur = redis.call('HGET', KEYS[1], 'state') or ''
if (rank[ARGV[7]] or 0) > (rank[cur] or 0) then
  redis.call('HSET', KEYS[1], 'state', ARGV[7])
  cur = ARGV[7]
end
if cur ~= '' then once('end_status', ARGV[8]) once('end_reason', ARGV[9]) end
if ARGV[10] == '1' then redis.call('HSET', KEYS[1], 'traces_committed', '1') end
if ARGV[11] == '1' then redis.call('HSET', KEYS[1], 'traces_on_table', '1') end
if cur == 'ending' or cur == 'closing' then redis.call('SADD', KEYS[2], ARGV[1]) end
if cur == 'closed' then redis.call('SREM', KEYS[2], ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[12])
return 1
`

// unlockScript deletes a claim only for its owner: a claim that expired
// and was taken by another collector is not ours to drop.
const unlockScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`

// NewRedisStore connects lazily: a Redis that is down at start delays the
// pushes, not the collector.
func NewRedisStore(opts RedisOptions) *RedisStore {
	// A push waits on Redis; a short bound hands the data back to the
	// collector's retry instead of holding a queue consumer.
	c := NewRedisClient(opts, 2*time.Second)
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &RedisStore{
		c: c, opts: opts, down: new(atomic.Bool),
		hold: redis.NewScript(holdScript), holds: redis.NewScript(holdsScript),
		save: redis.NewScript(saveScript), unlock: redis.NewScript(unlockScript), replace: redis.NewScript(replaceFieldScript),
		markStep: redis.NewScript(markStepScript),
	}
}

// NewRedisClient is a client of opts' Redis that connects lazily, each
// command, dial, read and write bounded by timeout: the shared registry's,
// and a multi-tenant gateway's shared ingest limits'.
func NewRedisClient(opts RedisOptions, timeout time.Duration) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  opts.Endpoint,
		Password:              opts.Password,
		DB:                    opts.DB,
		TLSConfig:             opts.TLS,
		DialTimeout:           timeout,
		ReadTimeout:           timeout,
		WriteTimeout:          timeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            1,
		DialerRetries:         2,
		DisableIdentity:       true,
		// Maintenance push notifications are a managed-Redis feature; a
		// plain server refuses them.
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
}

// key is one of the registry's keys: <prefix>:<kind>:<run key>, the run
// key's NUL separator shown as a colon.
func (s *RedisStore) key(kind, runKey string) string {
	k := kind + ":" + strings.Replace(runKey, "\x00", ":", 1)
	if s.opts.Prefix == "" {
		return k
	}
	return s.opts.Prefix + ":" + k
}

// endingKey is the index of runs whose close-out is not done.
func (s *RedisStore) endingKey() string { return s.plain("ending") }

// seen passes err on, named, and tells Health when Redis went away or
// came back. A caller's own cancellation says nothing about Redis, nor
// does a command refused for what a key holds (damage).
func (s *RedisStore) seen(err error) error {
	if err == nil || errors.Is(err, redis.Nil) {
		if s.down.CompareAndSwap(true, false) {
			s.opts.Logger.Info("The shared run registry (Redis) answers again", zap.String("endpoint", s.opts.Endpoint))
			if s.opts.Health != nil {
				s.opts.Health(nil)
			}
		}
		return err
	}
	err = fmt.Errorf("shared run registry (redis %s): %w", s.opts.Endpoint, err)
	if errors.Is(err, context.Canceled) || damagedReply(err) {
		return err
	}
	if s.down.CompareAndSwap(false, true) {
		s.opts.Logger.Error("The shared run registry (Redis) does not answer: data goes back to the collector's retry, and no run is created or closed out, until it does",
			zap.String("endpoint", s.opts.Endpoint), zap.Error(err))
		if s.opts.Health != nil {
			s.opts.Health(err)
		}
	}
	return err
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// Load returns the runs whose close-out is not done (ending, or closing
// when their closer stopped), so that a restarted collector finishes them;
// every other run is read when its data comes.
func (s *RedisStore) Load(ctx context.Context) ([]SavedRun, error) {
	keys, err := repaired(ctx, s, "", []string{"ending"}, func() ([]string, error) {
		return s.c.SMembers(ctx, s.endingKey()).Result()
	})
	if err != nil {
		return nil, s.seen(err)
	}
	var out []SavedRun
	for _, k := range keys {
		sr, found, _, err := s.Hold(ctx, k, "", 0)
		if err != nil {
			return nil, err
		}
		if !found {
			// The record expired: nothing is left to close out.
			if err := s.c.SRem(ctx, s.endingKey(), k).Err(); err != nil {
				return nil, s.seen(err)
			}
			continue
		}
		if sr.State == StateClosing {
			sr.State = StateEnding
		}
		out = append(out, sr)
	}
	return out, nil
}

// Save merges the record; ranges and pending uploads have their own calls
// (Next, SaveObject), since a whole-record write would undo another
// collector's.
func (s *RedisStore) Save(ctx context.Context, sr SavedRun) error {
	flag := func(b bool) string {
		if b {
			return "1"
		}
		return ""
	}
	_, err := repaired(ctx, s, sr.Key, []string{"run", "ending"}, func() (any, error) {
		return s.save.Run(ctx, s.c, []string{s.key("run", sr.Key), s.endingKey()},
			sr.Key, sr.Source, sr.Value, flag(sr.Attach), sr.ID, sr.Team, sr.State, sr.EndState, sr.EndWhy,
			flag(sr.Traces.Committed), flag(sr.Traces.OnTable), ms(recordTTL)).Result()
	})
	return s.seen(err)
}

func (s *RedisStore) Hold(ctx context.Context, runKey, hold string, ttl time.Duration) (SavedRun, bool, bool, error) {
	res, err := repaired(ctx, s, runKey, []string{"run", "holds"}, func() ([]any, error) {
		return s.hold.Run(ctx, s.c, []string{s.key("run", runKey), s.key("holds", runKey)}, hold, ms(ttl), ms(recordTTL), s.key("alive", ""), ms(HeartbeatTTL)).Slice()
	})
	if err != nil {
		return SavedRun{}, false, false, s.seen(err)
	}
	s.seen(nil)
	if len(res) != 2 {
		return SavedRun{}, false, false, fmt.Errorf("shared run registry: unexpected hold reply %v", res)
	}
	vals, _ := res[0].([]any)
	held, _ := res[1].(int64)
	names := recordFields()
	f := make(map[string]string, len(names))
	for i, name := range names {
		if i < len(vals) {
			if v, ok := vals[i].(string); ok {
				f[name] = v
			}
		}
	}
	if f["key"] == "" && f["id"] == "" {
		return SavedRun{}, false, held == 1, nil
	}
	sr := SavedRun{
		Key: f["key"], Source: f["source"], Value: f["value"], Attach: f["attach"] == "1",
		ID: f["id"], Team: f["team"], State: f["state"], EndState: f["end_status"], EndWhy: f["end_reason"],
		Traces: Traces{Committed: f["traces_committed"] == "1", OnTable: f["traces_on_table"] == "1"},
	}
	if seen, err := strconv.ParseInt(f["seen"], 10, 64); err == nil {
		sr.SeenAt = time.UnixMilli(seen)
	}
	s.checkRecord(ctx, runKey, f, &sr)
	return sr, true, held == 1, nil
}

func (s *RedisStore) Unhold(ctx context.Context, runKey, hold string) error {
	_, err := repaired(ctx, s, runKey, []string{"holds"}, func() (int64, error) {
		return s.c.ZRem(ctx, s.key("holds", runKey), hold).Result()
	})
	return s.seen(err)
}

func (s *RedisStore) Holds(ctx context.Context, runKey string) (int, int, error) {
	n, err := repaired(ctx, s, runKey, []string{"holds"}, func() ([]int64, error) {
		return s.holds.Run(ctx, s.c, []string{s.key("holds", runKey)}, s.key("alive", "")).Int64Slice()
	})
	if err != nil {
		return 0, 0, s.seen(err)
	}
	s.seen(nil)
	if len(n) != 2 {
		return 0, 0, fmt.Errorf("shared run registry: unexpected holds reply %v", n)
	}
	return int(n[0]), int(n[1]), nil
}

// Alive renews owner's heartbeat, <p>:alive:<owner>, for ttl: until it
// lapses the owner's holds count. It runs in the background, so it leaves
// the health reports (seen) to the pushes: a renewal that fails as Redis
// comes back does not turn the status back to an error.
// Alive goes through seen, so that an idle gateway's heartbeat is what
// tells its health check that Redis is down, or back.
func (s *RedisStore) Alive(ctx context.Context, owner string, ttl time.Duration) error {
	return s.seen(s.c.Set(ctx, s.key("alive", owner), "1", ttl).Err())
}

func (s *RedisStore) Claim(ctx context.Context, name, owner string, ttl time.Duration) (bool, error) {
	ok, err := s.c.SetNX(ctx, s.key("claim", name), owner, ttl).Result()
	return ok, s.seen(err)
}

func (s *RedisStore) Unclaim(ctx context.Context, name, owner string) error {
	return s.seen(s.unlock.Run(ctx, s.c, []string{s.key("claim", name)}, owner).Err())
}

// Next counts on a range counter. One that is not an integer is repaired
// (repairCounter), one on a record of another type moved aside.
func (s *RedisStore) Next(ctx context.Context, runKey, counter string) (int64, error) {
	n, err := s.next(ctx, runKey, counter)
	if err != nil && damagedReply(err) {
		s.aside(ctx, runKey, []string{"run"})
		s.repairCounter(ctx, runKey, counter)
		n, err = s.next(ctx, runKey, counter)
	}
	return n, s.seen(err)
}

func (s *RedisStore) next(ctx context.Context, runKey, counter string) (int64, error) {
	var incr *redis.IntCmd
	rec := s.key("run", runKey)
	_, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.HIncrBy(ctx, rec, counter, 1)
		p.PExpire(ctx, rec, recordTTL)
		return nil
	})
	return incr.Val(), err
}

// Close closes the connection, unless s is Scoped: its connection is the
// one it came from's.
func (s *RedisStore) Close(context.Context) error {
	if s.scoped {
		return nil
	}
	return s.c.Close()
}

package runstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

func fpMembers(fps []uint64) []any {
	out := make([]any, len(fps))
	for i, fp := range fps {
		out[i] = fpField(fp)
	}
	return out
}

// A run's delivered episodes are a sorted set per step,
// <p>:deliveredstep:<step>:<k>, scored by when they were marked, with an
// index of the run's steps (<p>:deliveredsteps:<k>, scored by step) and
// their count (<p>:deliveredheld:<k>): Delivered is one round trip (the
// step's set, and the sets of earlier releases), MarkDelivered one script
// (markStepScript) that adds them and prunes the run's oldest steps,
// whole, past maxStoredDelivered, as a storage extension does. The sets
// earlier releases kept (deliveredz, a sorted set of the run's newest
// marked fingerprints; delivered, a plain set) are read until their TTL
// ends them.
func (s *RedisStore) Delivered(ctx context.Context, runKey string, step int64, fps []uint64) ([]bool, error) {
	if len(fps) == 0 {
		return nil, nil
	}
	members := make([]string, len(fps))
	for i, fp := range fps {
		members[i] = fpField(fp)
	}
	var scores, legacyZ *redis.FloatSliceCmd
	var legacy *redis.BoolSliceCmd
	_, err := repaired(ctx, s, runKey, []string{stepKind(step), "deliveredz", "delivered"}, func() ([]redis.Cmder, error) {
		return s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			scores = p.ZMScore(ctx, s.key(stepKind(step), runKey), members...)
			legacyZ = p.ZMScore(ctx, s.key("deliveredz", runKey), members...)
			legacy = p.SMIsMember(ctx, s.key("delivered", runKey), fpMembers(fps)...)
			return nil
		})
	})
	if err != nil {
		return nil, s.seen(err)
	}
	out := make([]bool, len(fps))
	for i := range out {
		// A missing member scores 0; a marked one its marking's time.
		out[i] = scores.Val()[i] != 0 || legacyZ.Val()[i] != 0 || legacy.Val()[i]
	}
	return out, s.seen(nil)
}

// stepKind is the kind of a step's delivered set's key.
func stepKind(step int64) string { return "deliveredstep:" + strconv.FormatInt(step, 10) }

// markStepScript adds ARGV[6..] to the step's set (KEYS[1]) scored by
// Redis's clock, the step to the run's index (KEYS[2]) and their count to
// the run's (KEYS[3]); then, while the run holds more than ARGV[2],
// deletes its oldest steps (their keys are ARGV[4] .. step .. ARGV[5]),
// never the step marked, and past that the step's own oldest members. A
// count that is not a number is counted again from the sets (the reply
// says so); an old step's set of another type is deleted as it goes.
const markStepScript = `
local t = redis.call('TIME')
local score = tonumber(t[1]) * 1000000 + tonumber(t[2])
local added = 0
for i = 6, #ARGV, 500 do
  local args = {}
  for j = i, math.min(i + 499, #ARGV) do
    args[#args + 1] = score
    args[#args + 1] = ARGV[j]
  end
  added = added + redis.call('ZADD', KEYS[1], unpack(args))
end
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[1])
local recounted = 0
local held = tonumber(redis.call('GET', KEYS[3]) or '0')
if held == nil or held < 0 then
  held = 0
  for _, st in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local n = redis.pcall('ZCARD', ARGV[4] .. st .. ARGV[5])
    if type(n) == 'number' then held = held + n end
  end
  recounted = 1
else
  held = held + added
end
local bound = tonumber(ARGV[2])
local i = 0
while held > bound do
  local st = redis.call('ZRANGE', KEYS[2], i, i)[1]
  if st == nil then break end
  if st == ARGV[1] then
    i = i + 1
  else
    local k = ARGV[4] .. st .. ARGV[5]
    local n = redis.pcall('ZCARD', k)
    if type(n) == 'number' then held = held - n end
    redis.call('DEL', k)
    redis.call('ZREM', KEYS[2], st)
  end
end
if held > bound then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, held - bound - 1)
  held = bound
end
redis.call('SET', KEYS[3], string.format('%d', held), 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return recounted
`

func (s *RedisStore) MarkDelivered(ctx context.Context, runKey string, step int64, fps []uint64) error {
	if len(fps) == 0 {
		return nil
	}
	kind := stepKind(step)
	// The keys of the run's other steps, for the script: head .. step .. tail.
	head := s.key("deliveredstep", "")
	tail := strings.TrimPrefix(s.key(kind, runKey), head+strconv.FormatInt(step, 10))
	args := make([]any, 0, 5+len(fps))
	args = append(args, step, maxStoredDelivered, ms(deliveredTTL), head, tail)
	for _, fp := range fps {
		args = append(args, fpField(fp))
	}
	recounted, err := repaired(ctx, s, runKey, []string{kind, "deliveredsteps", "deliveredheld"}, func() (int64, error) {
		return s.markStep.Run(ctx, s.c, []string{s.key(kind, runKey), s.key("deliveredsteps", runKey), s.key("deliveredheld", runKey)}, args...).Int64()
	})
	if err == nil && recounted == 1 {
		s.opts.Logger.Warn("The count of delivered episodes of "+runName(runKey)+" in the shared run registry is damaged (not a number): counted again from its steps; nothing is lost",
			zap.String("endpoint", s.opts.Endpoint))
	}
	return s.seen(err)
}

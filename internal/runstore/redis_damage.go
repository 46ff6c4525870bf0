package runstore

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Damage in the shared registry: a key that holds another type than the
// registry writes (another program's key under the prefix, an operator's
// SET), a field that is not what it must be. Redis refuses a command on
// such a key; that is not Redis being down, so it neither turns the
// status to an error nor holds the run's data in the retry forever. Each
// is repaired where the refusal comes, with one log line (Damage in
// the package doc).

// damagedReply says Redis refused a command for what a key holds.
func damagedReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.Contains(msg, "WRONGTYPE") || strings.Contains(msg, "not an integer")
}

// registryKey is one of the registry's keys, the type it holds, and what
// its loss costs, for the line that moves a damaged one aside.
type registryKey struct {
	key, typ, what, cost string
	// with are keys that belong to what this one holds, moved aside with
	// it: a run's pending uploads hold ranges of its record's counters.
	with []string
}

// registryKeys are the keys of kinds: a run's (run, holds, pending,
// deliveredstep:<step>, deliveredsteps, deliveredheld, and an earlier
// release's deliveredz and delivered) or the index of ending runs
// (ending).
func (s *RedisStore) registryKeys(runKey string, kinds []string) []registryKey {
	out := make([]registryKey, 0, len(kinds))
	for _, kind := range kinds {
		k := registryKey{key: s.key(kind, runKey), what: kind}
		switch kind {
		case "ending":
			k.key, k.typ, k.what, k.cost = s.endingKey(), "set", "The index of ending runs",
				"a run that was ending is closed out by a collector that sees its data or its end, not by a collector starting"
		case "run":
			k.typ, k.what, k.cost = "hash", "Run record", "the run goes on from what the collectors remember of it, or is created again (a second run on the platform) where none does"
			k.with = []string{s.key("pending", runKey)}
		case "holds":
			k.typ, k.what, k.cost = "zset", "Holds", "a close-out under way may not wait for data other collectors hold"
		case "pending":
			k.typ, k.what, k.cost = "hash", "Pending uploads", "they are uploaded again under new sample_id ranges"
		case "deliveredz":
			k.typ, k.what, k.cost = "zset", "Delivered episodes (an earlier release's sorted set)", "a replay of episodes delivered before may upload them again"
		case "delivered":
			k.typ, k.what, k.cost = "set", "Delivered episodes (an earlier release's set)", "a replay of episodes delivered before may upload them again"
		case "deliveredsteps":
			k.typ, k.what, k.cost = "zset", "The index of delivered steps", "the run's older steps are no longer pruned (they expire 7 days after their last marking)"
		case "deliveredheld":
			k.typ, k.what, k.cost = "string", "The count of delivered episodes", "nothing: it is counted again from the run's steps"
		default:
			if step, ok := strings.CutPrefix(kind, "deliveredstep:"); ok {
				k.typ, k.what, k.cost = "zset", "Delivered episodes of step "+step, "a replay of that step's episodes delivered before may upload them again"
			}
		}
		out = append(out, k)
	}
	return out
}

// aside moves each key of kinds that holds another type out of the way,
// to <key>:damaged (kept for pendingTTL, for a post-mortem), with one line
// naming the run. Another collector may have moved it first.
func (s *RedisStore) aside(ctx context.Context, runKey string, kinds []string) {
	for _, k := range s.registryKeys(runKey, kinds) {
		typ, err := s.c.Type(ctx, k.key).Result()
		if err != nil || typ == "none" || typ == k.typ {
			continue
		}
		to := k.key + ":damaged"
		if err := s.c.Rename(ctx, k.key, to).Err(); err != nil {
			continue
		}
		_ = s.c.PExpire(ctx, to, pendingTTL).Err()
		for _, w := range k.with {
			if s.c.Rename(ctx, w, w+":damaged").Err() == nil {
				_ = s.c.PExpire(ctx, w+":damaged", pendingTTL).Err()
			}
		}
		what := k.what
		if k.key != s.endingKey() {
			what += " of " + runName(runKey)
		}
		s.opts.Logger.Error(what+" in the shared run registry is damaged (a "+typ+" where a "+k.typ+" belongs): moved aside to "+to+"; "+k.cost,
			zap.String("endpoint", s.opts.Endpoint))
	}
}

// repaired runs op, and once more after moving aside the keys of kinds
// that made Redis refuse it.
func repaired[T any](ctx context.Context, s *RedisStore, runKey string, kinds []string, op func() (T, error)) (T, error) {
	v, err := op()
	if err != nil && damagedReply(err) {
		s.aside(ctx, runKey, kinds)
		v, err = op()
	}
	return v, err
}

// replaceFieldScript sets a hash field to ARGV[3] only if it still holds
// ARGV[2], the damaged value: another collector may have repaired it
// first, and its repair may already be in use.
const replaceFieldScript = `
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
`

// repairedRangeStart is where a damaged range counter starts again: above
// every range a counter hands out (none gets near 2^18 objects in a step),
// and, for an attached run (counted from randomRangeLow), below the
// fallback ranges (fallbackRangeLow).
const repairedRangeStart = 1 << 18

// repairCounter replaces a range counter that is not an integer.
func (s *RedisStore) repairCounter(ctx context.Context, runKey, counter string) {
	rec := s.key("run", runKey)
	v, err := s.c.HGet(ctx, rec, counter).Result()
	if err != nil {
		return
	}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return
	}
	if n, err := s.replace.Run(ctx, s.c, []string{rec}, counter, v, repairedRangeStart).Int(); err != nil || n == 0 {
		return
	}
	s.opts.Logger.Warn("Sample_id range counter "+counter+" of "+runName(runKey)+" in the shared run registry is damaged (holds "+strconv.Quote(v)+"): it counts on from "+strconv.Itoa(repairedRangeStart)+", above every range it handed out; nothing is lost",
		zap.String("endpoint", s.opts.Endpoint))
}

// checkRecord repairs what a record read by Hold may hold: an unknown
// state (taken as ending when the record has an end, else as open) and a
// record without its identity fields (cut short: it stands for the run
// all the same, since it has its id). Each is said once per run.
func (s *RedisStore) checkRecord(ctx context.Context, runKey string, f map[string]string, sr *SavedRun) {
	if !validSavedState(sr.State) {
		took := ""
		if sr.EndState != "" {
			took = StateEnding
		}
		if n, err := s.replace.Run(ctx, s.c, []string{s.key("run", runKey)}, "state", sr.State, took).Int(); err == nil && n == 1 {
			s.opts.Logger.Warn("Run record of "+runName(runKey)+" in the shared run registry is damaged (unknown state "+strconv.Quote(sr.State)+"): taken as "+cmp.Or(took, "open"),
				zap.String("endpoint", s.opts.Endpoint), zap.String("run_id", sr.ID))
		}
		sr.State = took
	}
	if f["key"] == "" && sr.ID != "" {
		sr.Key = runKey
		sr.Source, sr.Value, sr.Attach, _ = keyIdentity(runKey)
		if s.once("identity\x00" + runKey) {
			s.opts.Logger.Warn("Run record of "+runName(runKey)+" in the shared run registry is damaged (its identity fields are missing): the run goes on as run "+sr.ID,
				zap.String("endpoint", s.opts.Endpoint), zap.String("run_id", sr.ID))
		}
	}
}

// once is true the first time a report is made; the set is small (one
// entry per damaged run).
func (s *RedisStore) once(report string) bool {
	_, seen := s.reported.LoadOrStore(report, true)
	return !seen
}

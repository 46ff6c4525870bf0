package runstore

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

func fpField(fp uint64) string { return strconv.FormatUint(fp, 16) }

// Object reads an unconfirmed upload (objects.go). A damaged one is dropped with one
// line: its object is uploaded again under a new range, as if it had
// never started.
func (s *RedisStore) Object(ctx context.Context, runKey string, fp uint64) (SavedObject, bool, error) {
	k := s.key("pending", runKey)
	raw, err := repaired(ctx, s, runKey, []string{"pending"}, func() ([]byte, error) {
		return s.c.HGet(ctx, k, fpField(fp)).Bytes()
	})
	if errors.Is(err, redis.Nil) {
		return SavedObject{}, false, s.seen(nil)
	}
	if err != nil {
		return SavedObject{}, false, s.seen(err)
	}
	s.seen(nil)
	so, err := readSavedObject(raw)
	if err != nil {
		if s.c.HDel(ctx, k, fpField(fp)).Err() == nil {
			s.opts.Logger.Warn("Pending upload "+fpField(fp)+" of "+runName(runKey)+" in the shared run registry is damaged ("+damageOf(err)+"): dropped; its object is uploaded again under a new sample_id range",
				zap.String("endpoint", s.opts.Endpoint))
		}
		return SavedObject{}, false, nil
	}
	return so, true, nil
}

func (s *RedisStore) SaveObject(ctx context.Context, runKey string, fp uint64, so SavedObject) error {
	body, err := json.Marshal(so)
	if err != nil {
		return err
	}
	k := s.key("pending", runKey)
	_, err = repaired(ctx, s, runKey, []string{"pending"}, func() ([]redis.Cmder, error) {
		return s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, k, fpField(fp), body)
			p.PExpire(ctx, k, pendingTTL)
			return nil
		})
	})
	return s.seen(err)
}

func (s *RedisStore) DropObject(ctx context.Context, runKey string, fp uint64) error {
	_, err := repaired(ctx, s, runKey, []string{"pending"}, func() (int64, error) {
		return s.c.HDel(ctx, s.key("pending", runKey), fpField(fp)).Result()
	})
	return s.seen(err)
}

// ConfirmObject marks a confirmed object's episodes delivered, then
// forgets the object: two commands, as the marking is a script of its
// own. A crash between them leaves an upload that expires (pendingTTL)
// and whose episodes are delivered already.
func (s *RedisStore) ConfirmObject(ctx context.Context, runKey string, fp uint64, step int64, fps []uint64) error {
	if err := s.MarkDelivered(ctx, runKey, step, fps); err != nil {
		return err
	}
	return s.DropObject(ctx, runKey, fp)
}

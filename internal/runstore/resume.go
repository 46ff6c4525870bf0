package runstore

import "context"

// Resume is what the uploader reads once a step, before it encodes: which
// of the step's episodes a sink committed before (Delivered), and the
// progress saved of the objects it is about to send, by fingerprint. One
// call, so that a step's objects cost the uploader one read of the store
// however many they are; an object not found, or unreadable, is not in
// the map (it is uploaded as new, as Object's callers did). The map is nil
// when none is found, as on nearly every push.
func (s *ExtensionStore) Resume(ctx context.Context, runKey string, step int64, episodes, objects []uint64) ([]bool, map[uint64]SavedObject, error) {
	return resume(ctx, runKey, step, episodes, objects, s.Delivered, s.Object)
}

func (s *RedisStore) Resume(ctx context.Context, runKey string, step int64, episodes, objects []uint64) ([]bool, map[uint64]SavedObject, error) {
	return resume(ctx, runKey, step, episodes, objects, s.Delivered, s.Object)
}

func (m *MemStore) Resume(ctx context.Context, runKey string, step int64, episodes, objects []uint64) ([]bool, map[uint64]SavedObject, error) {
	return resume(ctx, runKey, step, episodes, objects, m.Delivered, m.Object)
}

func resume(ctx context.Context, runKey string, step int64, episodes, objects []uint64,
	delivered func(context.Context, string, int64, []uint64) ([]bool, error),
	object func(context.Context, string, uint64) (SavedObject, bool, error),
) ([]bool, map[uint64]SavedObject, error) {
	done, err := delivered(ctx, runKey, step, episodes)
	if err != nil {
		return nil, nil, err
	}
	var saved map[uint64]SavedObject
	for _, fp := range objects {
		so, found, err := object(ctx, runKey, fp)
		if err != nil || !found {
			continue
		}
		if saved == nil {
			saved = map[uint64]SavedObject{}
		}
		saved[fp] = so
	}
	return done, saved, nil
}

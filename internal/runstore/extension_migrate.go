package runstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// The layout before (a key per episode, delivered/<key>/<fp hex>, with a
// log of markings under deliveredlog/ and deliveredhead/) is moved on
// Load, once, into the pseudo-step legacyStep, the oldest of the window,
// which every Delivered consults (it is read into memory once, at most
// maxStoredDelivered fingerprints, 2 MB, a run) until pruning reaches it.
// A storage extension that cannot list its keys has its runs' logs moved
// at their first use instead; what an even earlier release wrote without
// a log is then no longer read.
const (
	storeEpPrefix  = "delivered/"
	storeLogPrefix = "deliveredlog/"  // deliveredlog/<n>/<key>: a run's nth marking
	storeLogHead   = "deliveredhead/" // deliveredhead/<key>: which markings it holds
)

// legacyStep holds what the layout before kept: its steps are unknown.
const legacyStep = math.MinInt64

// legacyParts cuts a set of the layout before into the legacy parts, as
// writes.
func legacyParts(runKey string, fps []uint64) ([]stepPart, []*storage.Operation) {
	var parts []stepPart
	var ops []*storage.Operation
	for p := int64(0); len(fps) > 0; p++ {
		n := min(len(fps), maxPartFingerprints)
		parts = append(parts, stepPart{step: legacyStep, part: p, n: int64(n)})
		ops = append(ops, storage.SetOperation(stepPartKey(runKey, legacyStep, p), encodePart(fps[:n])))
		fps = fps[n:]
	}
	return parts, ops
}

// migrate moves the delivered sets of the layout before, once, when the
// storage extension can list its keys: each run's keys become legacy
// parts in one batch (one line each); the layout key then says it is
// done.
func (s *ExtensionStore) migrate(ctx context.Context) error {
	raw, err := s.client.Get(ctx, storeLayoutKey)
	if err != nil || string(raw) == storeLayoutSteps {
		return err
	}
	found, canList, err := s.walk(ctx, "delivered")
	if err != nil || !canList {
		return err // moved run by run, as they are used (moveLog)
	}
	old := map[string][]uint64{}
	drop := map[string][]*storage.Operation{}
	for key := range found {
		var runKey string
		switch {
		case strings.HasPrefix(key, storeEpPrefix):
			rest := strings.TrimPrefix(key, storeEpPrefix)
			i := strings.LastIndexByte(rest, '/')
			if i < 0 {
				continue
			}
			runKey = rest[:i]
			if fp, err := strconv.ParseUint(rest[i+1:], 16, 64); err == nil {
				old[runKey] = append(old[runKey], fp)
			}
		case strings.HasPrefix(key, storeLogPrefix):
			_, runKey, _ = strings.Cut(strings.TrimPrefix(key, storeLogPrefix), "/")
		case strings.HasPrefix(key, storeLogHead):
			runKey = strings.TrimPrefix(key, storeLogHead)
		default:
			continue
		}
		drop[runKey] = append(drop[runKey], storage.DeleteOperation(key))
	}
	for _, runKey := range slices.Sorted(maps.Keys(drop)) {
		fps := slices.Compact(slices.Sorted(slices.Values(old[runKey])))
		ops := drop[runKey]
		if len(fps) > 0 {
			parts, writes := legacyParts(runKey, fps)
			if cur, damage, err := s.readSteps(ctx, runKey); err == nil && damage == "" && cur != nil {
				// A build of this layout marked the run already (its
				// layout key lost): its parts follow the legacy ones.
				parts = append(parts, slices.DeleteFunc(cur.all().parts, func(p stepPart) bool { return p.step == legacyStep })...)
			}
			ops = append(append(ops, writes...), newRunSteps(parts).writes(runKey)...)
		}
		if err := s.client.Batch(ctx, ops...); err != nil {
			return err
		}
		s.opts.Logger.Info("Moved the delivered episodes an earlier release stored for "+runName(runKey)+" to the per-step layout: they stay delivered",
			zap.String("storage", s.opts.Name), zap.Int("fingerprints", len(fps)))
	}
	return s.client.Set(ctx, storeLayoutKey, []byte(storeLayoutSteps))
}

// moveLog moves one run's delivered log of the layout before, where
// storage could not be listed at Load: the fingerprints its chunks name
// become legacy parts, and its keys go, in one batch. Fingerprints stored
// before that release's log existed are not found.
func (s *ExtensionStore) moveLog(ctx context.Context, runKey string) (*runSteps, error) {
	raw, err := s.client.Get(ctx, storeLogHead+runKey)
	if err != nil || raw == nil {
		return newRunSteps(nil), err
	}
	lg, damage, ok := salvageLog(raw)
	if !ok {
		s.opts.Logger.Warn("Delivered log of "+runName(runKey)+" is damaged ("+damage+"): the episodes it logged are no longer read (a replay of one may upload it again)",
			zap.String("storage", s.opts.Name), zap.String("storage_key", storeLogHead+runKey))
		lg = deliveredLog{}
	}
	ops := []*storage.Operation{storage.DeleteOperation(storeLogHead + runKey)}
	var fps []uint64
	for n := lg.First; n < lg.Next; n++ {
		key := storeLogPrefix + strconv.FormatInt(n, 10) + "/" + runKey
		chunk, err := s.client.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		for i := 0; i+8 <= len(chunk); i += 8 {
			fp := binary.LittleEndian.Uint64(chunk[i:])
			fps = append(fps, fp)
			ops = append(ops, storage.DeleteOperation(storeEpPrefix+runKey+"/"+strconv.FormatUint(fp, 16)))
		}
		ops = append(ops, storage.DeleteOperation(key))
	}
	fps = slices.Compact(slices.Sorted(slices.Values(fps)))
	parts, writes := legacyParts(runKey, fps)
	rs := newRunSteps(parts)
	ops = append(append(ops, writes...), rs.writes(runKey)...)
	if err := s.client.Batch(ctx, ops...); err != nil {
		return nil, err
	}
	s.opts.Logger.Info("Moved the delivered episodes an earlier release logged for "+runName(runKey)+" to the per-step layout: they stay delivered",
		zap.String("storage", s.opts.Name), zap.Int("fingerprints", len(fps)))
	return rs, nil
}

// deliveredLog is the header of a run's log in the layout before: chunks
// [First, Next) hold Held fingerprints.
type deliveredLog struct {
	First int64 `json:"first"`
	Next  int64 `json:"next"`
	Held  int64 `json:"held"`
}

// salvageLog reads a delivered log's header; ok is false when it is
// damaged, with what could be read of it.
func salvageLog(raw []byte) (lg deliveredLog, damage string, ok bool) {
	err := json.Unmarshal(raw, &lg)
	if err == nil && lg.First >= 0 && lg.Next >= lg.First && lg.Held >= 0 {
		return lg, "", true
	}
	if err == nil {
		return deliveredLog{}, fmt.Sprintf("impossible values %s", raw), false
	}
	fields, _, _, _ := readObject(raw)
	var part deliveredLog
	for name, v := range fields {
		_ = json.Unmarshal(wrapField(name, v), &part)
	}
	return part, damageOf(err), false
}

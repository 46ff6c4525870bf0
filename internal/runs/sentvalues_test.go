package runs

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exactValues counts the values the window holds.
func exactValues(s *sentValues) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return 0
	}
	n := 0
	for _, slot := range s.st.window {
		n += len(slot.vals)
	}
	return n
}

// rangesOf is a copy of key's ranges of sent steps below the window.
func rangesOf(s *sentValues, key string) []stepRange {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil || s.st.keys[key] == nil {
		return nil
	}
	return append([]stepRange(nil), s.st.keys[key].ranges...)
}

// stepValues is one step's values for keys k0..k(n-1), each the step plus
// the key's index.
func stepValues(step int64, keys int) map[string]float64 {
	m := make(map[string]float64, keys)
	for i := range keys {
		m[fmt.Sprintf("k%d", i)] = float64(step) + float64(i)
	}
	return m
}

func TestAValueSentAgainForItsStepIsOnlyPostedWhenItChanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		newest int64 // the newest step marked sent after the step tested
		again  map[string]float64
		want   map[string]float64
	}{
		{"the same value of the newest step is skipped", 10, map[string]float64{"loss": 1}, map[string]float64{}},
		{"a changed value of the newest step is unsent", 10, map[string]float64{"loss": 2}, map[string]float64{"loss": 2}},
		{"a new key of a sent step is unsent", 10, map[string]float64{"loss": 1, "lr": 3}, map[string]float64{"lr": 3}},
		{"a changed value inside the window is unsent", 10 + sentWindowSteps - 1, map[string]float64{"loss": 2}, map[string]float64{"loss": 2}},
		{"the same value inside the window is skipped", 10 + sentWindowSteps - 1, map[string]float64{"loss": 1}, map[string]float64{}},
		{"the same value below the window is skipped", 10 + sentWindowSteps, map[string]float64{"loss": 1}, map[string]float64{}},
		{"a changed value below the window is skipped: its step was sent", 10 + sentWindowSteps, map[string]float64{"loss": 2}, map[string]float64{}},
		{"a key never sent for a step below the window is unsent", 10 + sentWindowSteps, map[string]float64{"loss": 1, "lr": 3}, map[string]float64{"lr": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSentValues()
			first := map[string]float64{"loss": 1}
			assert.Equal(t, first, s.unsent(10, first), "nothing is sent yet")
			s.markSent(10, first)
			if tc.newest != 10 {
				s.markSent(tc.newest, map[string]float64{"loss": 5})
			}
			assert.Equal(t, tc.want, s.unsent(10, tc.again))
		})
	}
}

func TestAnOldStepRepeatedByACumulativeExportIsNotPostedAgain(t *testing.T) {
	const steps, keys = 10_000, 20
	s := newSentValues()
	for step := range int64(steps) {
		// A cumulative export repeats every step so far; only the newest
		// is new. Re-presenting the older ones each time would be
		// quadratic here, so every 1,000th step re-presents them all.
		v := stepValues(step, keys)
		require.Len(t, s.unsent(step, v), keys, "step %d is new", step)
		s.markSent(step, v)
		if step%1000 == 999 {
			for old := range step + 1 {
				require.Empty(t, s.unsent(old, stepValues(old, keys)), "step %d repeated at step %d", old, step)
			}
		}
	}
	for old := range int64(steps) {
		require.Empty(t, s.unsent(old, stepValues(old, keys)), "step %d repeated at the end", old)
	}

	assert.LessOrEqual(t, exactValues(s), sentWindowSteps*keys, "exact values are kept for the window only")
	assert.Equal(t, sentWindowSteps*keys, exactValues(s), "and for all of it")
	for i := range keys {
		assert.Equal(t, []stepRange{{0, steps - sentWindowSteps - 1}}, rangesOf(s, fmt.Sprintf("k%d", i)),
			"contiguous steps below the window are one range")
	}
	assert.Equal(t, steps*keys, s.total())
}

func TestAStragglerForAStepBelowTheWindowIsPostedOnceThenSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  string
	}{
		{"a key the run never sent", "eval/score"},
		{"a key the run sends but not for that step", "loss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSentValues()
			for step := int64(100); step < 100+2*sentWindowSteps; step++ {
				s.markSent(step, map[string]float64{"loss": float64(step)})
			}
			late := map[string]float64{tc.key: 0.5}
			for _, step := range []int64{3, 99} { // below everything sent; right below it
				require.Equal(t, late, s.unsent(step, late), "step %d has never had %s", step, tc.key)
				s.markSent(step, late)
				assert.Empty(t, s.unsent(step, late), "a repeat of the straggler of step %d", step)
				assert.Empty(t, s.unsent(step, map[string]float64{tc.key: 0.7}), "a change of it, below the window")
			}
			assert.Equal(t, map[string]float64{tc.key: 1}, s.unsent(50, map[string]float64{tc.key: 1}), "another old step is still unsent")
		})
	}
}

func TestGapsInAKeysOldStepsAreSeparateRangesThatMergeWhenFilled(t *testing.T) {
	var r sentRanges
	for _, step := range []int64{1, 2, 3, 7, 8, 12, 20} {
		r.add(step)
	}
	assert.Equal(t, sentRanges{{1, 3}, {7, 8}, {12, 12}, {20, 20}}, r)
	for _, step := range []int64{0, 4, 5, 6, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19} {
		require.False(t, r.has(step), "step %d", step)
	}
	for _, tc := range []struct {
		name string
		add  []int64
		want sentRanges
	}{
		{"a step already in a range changes nothing", []int64{2, 7, 20}, sentRanges{{1, 3}, {7, 8}, {12, 12}, {20, 20}}},
		{"a step right after a range extends it", []int64{9}, sentRanges{{1, 3}, {7, 9}, {12, 12}, {20, 20}}},
		{"a step right before a range extends it", []int64{11, 0}, sentRanges{{0, 3}, {7, 8}, {11, 12}, {20, 20}}},
		{"a step in no range and next to none is a range of its own", []int64{5, -4, 30}, sentRanges{{-4, -4}, {1, 3}, {5, 5}, {7, 8}, {12, 12}, {20, 20}, {30, 30}}},
		{"a step filling a gap merges its two ranges", []int64{4, 5, 6}, sentRanges{{1, 8}, {12, 12}, {20, 20}}},
		{"filling every gap leaves one range", []int64{13, 14, 15, 16, 17, 18, 19, 9, 11, 10, 4, 6, 5}, sentRanges{{1, 20}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := append(sentRanges(nil), r...)
			for _, step := range tc.add {
				got.add(step)
			}
			assert.Equal(t, tc.want, got)
			for _, rg := range tc.want {
				assert.True(t, got.has(rg.lo) && got.has(rg.hi), "%v is in the set", rg)
			}
		})
	}
}

func TestTheRangesOfAKeySentOnlyEveryFewStepsStayBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every int64
	}{
		{"every other step", 2},
		{"every 10th step", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSentValues()
			const steps = 20_000
			for step := range int64(steps) {
				v := map[string]float64{"loss": 1}
				if step%tc.every == 0 {
					v["eval/score"] = 2
				}
				s.markSent(step, v)
			}
			got := rangesOf(s, "eval/score")
			assert.Len(t, got, maxSentRangesPerKey, "the oldest gaps are filled")
			assert.Equal(t, int64(0), got[0].lo, "the oldest step sent is kept")
			last := got[len(got)-1]
			assert.True(t, last.lo == last.hi && last.lo%tc.every == 0, "the newest steps are exact: %v", last)
			assert.Equal(t, []stepRange{{0, steps - sentWindowSteps - 1}}, rangesOf(s, "loss"))
			assert.Equal(t, map[string]float64{"eval/score": 2}, s.unsent(last.lo+1, map[string]float64{"eval/score": 2}),
				"a step in a kept gap is still unsent")
		})
	}
}

func TestResetForgetsEverySentValueButNotTheCount(t *testing.T) {
	for _, tc := range []struct {
		name string
		step int64
	}{
		{"a step in the window", 2000},
		{"a step below the window", 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSentValues()
			for step := range int64(2001) {
				s.markSent(step, map[string]float64{"loss": 1, "step": float64(step)})
			}
			require.Empty(t, s.unsent(tc.step, map[string]float64{"loss": 1}))
			s.reset()
			assert.Equal(t, map[string]float64{"loss": 1}, s.unsent(tc.step, map[string]float64{"loss": 1}))
			assert.Equal(t, 0, exactValues(s))
			assert.Nil(t, rangesOf(s, "loss"))
			assert.Equal(t, 2*2001, s.total(), "the count covers the whole run")
			s.markSent(tc.step, map[string]float64{"loss": 1})
			assert.Empty(t, s.unsent(tc.step, map[string]float64{"loss": 1}), "a reset run remembers again")
		})
	}
}

func TestTheStepEntryOfAPostIsCountedButNotStored(t *testing.T) {
	s := newSentValues()
	s.markSent(1, map[string]float64{"loss": 1, "step": 1})
	assert.Equal(t, 1, exactValues(s))
	assert.Equal(t, 2, s.total(), "total counts what was posted, as before")
}

func TestAStoredKeyDoesNotShareTheCallersString(t *testing.T) {
	buf := []byte("xloss")
	key := string(buf[1:]) // a key that, like pdata's, is part of a larger string
	s := newSentValues()
	s.markSent(600, map[string]float64{key: 1})
	s.markSent(600+sentWindowSteps, map[string]float64{key: 1})
	s.mu.Lock()
	h := s.st.keys["loss"]
	s.mu.Unlock()
	require.NotNil(t, h)
	assert.NotSame(t, unsafe.StringData(key), unsafe.StringData(h.name), "the key is a copy")
	assert.Equal(t, []stepRange{{600, 600}}, rangesOf(s, "loss"))
}

func TestStepsNearTheEndsOfInt64DoNotOverflow(t *testing.T) {
	s := newSentValues()
	s.markSent(math.MinInt64, map[string]float64{"loss": 1})
	s.markSent(math.MinInt64+1, map[string]float64{"loss": 1})
	assert.Empty(t, s.unsent(math.MinInt64, map[string]float64{"loss": 1}))
	s.markSent(-5, map[string]float64{"loss": 1})
	assert.Empty(t, s.unsent(math.MinInt64, map[string]float64{"loss": 1}), "below the window now")
	assert.Equal(t, []stepRange{{math.MinInt64, math.MinInt64 + 1}}, rangesOf(s, "loss"))
	s.markSent(math.MaxInt64, map[string]float64{"loss": 1})
	assert.Empty(t, s.unsent(-5, map[string]float64{"loss": 1}))
	assert.Empty(t, s.unsent(math.MaxInt64, map[string]float64{"loss": 1}))
	assert.Equal(t, map[string]float64{"loss": 1}, s.unsent(math.MaxInt64-1, map[string]float64{"loss": 1}))
	assert.Equal(t, 1, exactValues(s))

	r := sentRanges{{5, math.MaxInt64}}
	r.add(math.MinInt64)
	assert.Equal(t, sentRanges{{math.MinInt64, math.MinInt64}, {5, math.MaxInt64}}, r)
	r.add(math.MaxInt64)
	assert.Equal(t, sentRanges{{math.MinInt64, math.MinInt64}, {5, math.MaxInt64}}, r)
	r.add(4)
	assert.Equal(t, sentRanges{{math.MinInt64, math.MinInt64}, {4, math.MaxInt64}}, r)
}

func TestConcurrentPostsOfOneRunAreRaceFree(t *testing.T) {
	s := newSentValues()
	const workers, steps, keys = 4, 2000, 5
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for step := range int64(steps) {
				step := step + int64(w)*7 // workers overlap and interleave their steps
				v := stepValues(step, keys)
				if u := s.unsent(step, v); len(u) > 0 {
					s.markSent(step, u)
				}
				s.unsent(step/2, stepValues(step/2, keys))
				if step%100 == 0 && w == 0 {
					_ = s.total()
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			_ = s.total()
		}
	})
	wg.Wait()
	newest := int64(steps - 1 + (workers-1)*7)
	for step := range newest + 1 {
		require.Empty(t, s.unsent(step, stepValues(step, keys)), "step %d", step)
	}
	assert.LessOrEqual(t, exactValues(s), sentWindowSteps*keys)

	// A run closing (reset) while its last posts are in flight.
	for w := range workers {
		wg.Go(func() {
			for step := range int64(steps) {
				v := stepValues(step, keys)
				s.markSent(step, s.unsent(step, v))
				if step%500 == int64(w) {
					s.reset()
				}
			}
		})
	}
	wg.Wait()
}

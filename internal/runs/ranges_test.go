package runs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestALongRunKeepsTheCountersOfItsNewestStepsOnly(t *testing.T) {
	s := newSampleRanges(true)
	for step := range int64(maxRangeSteps + 100) {
		require.Equal(t, int64(0), s.take(step), "step %d's first range", step)
	}
	assert.Len(t, s.next, maxRangeSteps, "the record a run saves with each object stays bounded")
	assert.Equal(t, int64(100), s.floor)

	newest := int64(maxRangeSteps + 99)
	assert.Equal(t, int64(1), s.take(newest), "a kept step counts on")
	late := s.take(5) // an off-policy object of a forgotten step
	assert.GreaterOrEqual(t, late, int64(fallbackRangeLow), "above every counted range")
	assert.Less(t, late, int64(randomRangeHigh))
	assert.NotEqual(t, late, s.take(5), "two late objects of one step take two ranges")

	restored := newSampleRanges(true)
	restored.restore(s.snapshot())
	assert.Equal(t, s.floor, restored.floor, "a restart keeps the floor")
	assert.Equal(t, int64(2), restored.take(newest))
	assert.GreaterOrEqual(t, restored.take(50), int64(fallbackRangeLow), "a step below the floor stays forgotten after a restart")
}

func TestAnAttachedRunsRandomRangesAreRememberedForItsNewestStepsOnly(t *testing.T) {
	s := newSampleRanges(false)
	for step := range int64(maxRangeSteps + 10) {
		r := s.take(step)
		require.GreaterOrEqual(t, r, int64(randomRangeLow))
	}
	assert.Len(t, s.used, maxRangeSteps)
}

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
	assert.Len(t, s.next, maxRangeSteps, "what a run keeps in memory stays bounded")
	assert.Equal(t, int64(100), s.floor)

	newest := int64(maxRangeSteps + 99)
	assert.Equal(t, int64(1), s.take(newest), "a kept step counts on")
	late := s.take(5) // an off-policy object of a forgotten step
	assert.GreaterOrEqual(t, late, int64(fallbackRangeLow), "above every counted range")
	assert.Less(t, late, int64(randomRangeHigh))
	assert.NotEqual(t, late, s.take(5), "two late objects of one step take two ranges")
}

func TestARestartCountsEveryStepInTheBandAboveTheOneItsRecordHeld(t *testing.T) {
	before := newSampleRanges(true)
	require.Equal(t, int64(0), before.take(7))
	require.Equal(t, int64(rangesBand), before.band(), "a created run's record holds the end of its first band")

	restored := newSampleRanges(true)
	restored.restoreBand(before.band())
	assert.Equal(t, int64(rangesBand), restored.take(7), "a step the run had counted")
	assert.Equal(t, int64(rangesBand), restored.take(8), "a step it had not")
	assert.Equal(t, int64(rangesBand+1), restored.take(7))
	assert.Equal(t, int64(2*rangesBand), restored.band(), "what the restored run's record holds from now on")
}

func TestAStepThatOutgrowsItsBandDrawsRandomRanges(t *testing.T) {
	s := newSampleRanges(true)
	for i := range int64(rangesBand) {
		require.Equal(t, i, s.take(3))
	}
	r := s.take(3)
	assert.GreaterOrEqual(t, r, int64(fallbackRangeLow), "above every counted range")
	assert.Less(t, r, int64(randomRangeHigh))
}

func TestAnAttachedRunsRandomRangesAreRememberedForItsNewestStepsOnly(t *testing.T) {
	s := newSampleRanges(false)
	for step := range int64(maxRangeSteps + 10) {
		r := s.take(step)
		require.GreaterOrEqual(t, r, int64(randomRangeLow))
	}
	assert.Len(t, s.used, maxRangeSteps)
}

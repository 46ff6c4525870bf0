package runstore

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAStepIndexChunkAndHeaderReadBackAsWrittenAndAChunkRefusesAnyDamage(t *testing.T) {
	x := newDeliveredIndex([]stepPart{
		{step: legacyStep, part: 0, n: 8192}, {step: legacyStep, part: 1, n: 3},
		{step: math.MinInt64 + 1, part: 0, n: 1}, {step: -5, part: 0, n: 7}, {step: 0, part: 0, n: 1},
		{step: 1 << 40, part: 0, n: 100}, {step: math.MaxInt64, part: 2, n: 5},
	})
	raw := x.encode()
	back, damage := decodeStepIndex(raw)
	require.Empty(t, damage)
	assert.Equal(t, x, back)
	chunks := []int64{-1 << 55, -3, 0, 1, 1 << 40}
	back2, damage := decodeHeader(encodeHeader(chunks))
	require.Empty(t, damage)
	assert.Equal(t, chunks, back2, "a header")
	for i := range raw {
		for _, bit := range []byte{1, 0x80} {
			bad := append([]byte(nil), raw...)
			bad[i] ^= bit
			_, damage := decodeStepIndex(bad)
			assert.NotEmpty(t, damage, "byte %d flipped", i)
		}
		_, damage := decodeStepIndex(raw[:i])
		assert.NotEmpty(t, damage, "cut at %d", i)
	}
}

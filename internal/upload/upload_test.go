package upload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

func sized(sizes ...int) []episode {
	out := make([]episode, len(sizes))
	for i, s := range sizes {
		out[i] = episode{ep: sampletable.Episode{Size: s}, loc: Loc{Record: i}}
	}
	return out
}

func partSizes(parts [][]episode) [][]int {
	var out [][]int
	for _, p := range parts {
		var sizes []int
		for _, e := range p {
			sizes = append(sizes, e.ep.Size)
		}
		out = append(out, sizes)
	}
	return out
}

func TestAStepIsCutIntoObjectsOfAtMostMaxBytesEachHoldingAtLeastOneEpisode(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
		max   int64
		want  [][]int
	}{
		{"nothing makes no object", nil, 10, nil},
		{"everything fits in one", []int{3, 3, 4}, 10, [][]int{{3, 3, 4}}},
		{"a cut where the next would not fit", []int{4, 4, 4, 4}, 10, [][]int{{4, 4}, {4, 4}}},
		{"an episode larger than max stands alone", []int{2, 30, 2}, 10, [][]int{{2}, {30}, {2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, partSizes(splitBySize(sized(tt.sizes...), tt.max)))
		})
	}
}

func TestAnEpisodesFingerprintIsItsContentSoAReplayFindsIt(t *testing.T) {
	prompt := "q"
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := sampletable.Episode{Step: 10, Prompt: prompt, CreatedAt: at}
	same := sampletable.Episode{Step: 10, Prompt: prompt, CreatedAt: at}
	later := sampletable.Episode{Step: 10, Prompt: prompt, CreatedAt: at.Add(time.Microsecond)}
	other := sampletable.Episode{Step: 20, Prompt: prompt, CreatedAt: at}
	assert.Equal(t, episodeFingerprint(a), episodeFingerprint(same))
	assert.NotEqual(t, episodeFingerprint(a), episodeFingerprint(later))
	assert.NotEqual(t, episodeFingerprint(a), episodeFingerprint(other))

	// The rows of an oversized document can be alike but for their part.
	second, third := a, a
	second.Part, third.Part = 1, 2
	assert.NotEqual(t, episodeFingerprint(a), episodeFingerprint(second))
	assert.NotEqual(t, episodeFingerprint(second), episodeFingerprint(third))
	assert.Equal(t, episodeFingerprint(second), episodeFingerprint(second))
}

// Fingerprints are kept by the run's store: a row without a part keeps
// the fingerprint it had before parts existed, so that a replay across an
// upgrade still finds what was delivered.
func TestAFingerprintWithoutAPartIsTheOneBeforeParts(t *testing.T) {
	info := "q"
	ep := sampletable.Episode{Step: 10, Prompt: "q", Trajectory: "[{}]", Info: &info, CreatedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	assert.Equal(t, uint64(0xe9186ef14a8c7ce1), episodeFingerprint(ep))

	part := []episode{{fp: 1}, {fp: 2}}
	assert.Equal(t, objectFingerprint(10, part), objectFingerprint(10, []episode{{fp: 1}, {fp: 2}}))
	assert.NotEqual(t, objectFingerprint(10, part), objectFingerprint(20, part), "the step is part of it")
	assert.NotEqual(t, objectFingerprint(10, part), objectFingerprint(10, part[:1]))
}

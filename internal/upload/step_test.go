package upload

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform/platformtest"
)

// episodesAnObject is an uploader whose objects hold n of the tests'
// episodes each (all of one size).
func episodesAnObject(t *testing.T, l *fakeLedger, n int) *Uploader {
	warn := logonce.New(zap.NewNop(), 16)
	probe := New(Config{StepInterval: 10, MaxEpisodeBytes: 1 << 20, MaxObjectBytes: 1}, NewObjects(l, l, warn), &countingTel{}, warn)
	rec := probe.Accept(probe.NewBatch(l, l, 0), episodeAt(10, "a"), Loc{})
	require.Len(t, rec.Rows, 1)
	return New(Config{StepInterval: 10, MaxEpisodeBytes: 1 << 20, MaxObjectBytes: int64(n * rec.Rows[0].Size)}, NewObjects(l, l, warn), &countingTel{}, warn)
}

func TestAStepsObjectsCostTheStoreOneReadUnlessItsEpisodesAreCutAnew(t *testing.T) {
	a, b, c, d := episodeAt(10, "a"), episodeAt(10, "b"), episodeAt(10, "c"), episodeAt(10, "d")
	tests := []struct {
		name        string
		perObject   int
		delivered   []plog.LogRecord // confirmed by an earlier push
		objectReads int              // objects read outside their step's Resume
		objects     int              // the push's objects
	}{
		{name: "a step of two objects is one Resume", perObject: 2, objects: 2},
		{name: "a step cut anew after a delivered episode reads its new objects alone", perObject: 2, delivered: []plog.LogRecord{a}, objectReads: 2, objects: 2},
		{name: "objects of one episode are the same after a delivered one, and Resume read them", perObject: 1, delivered: []plog.LogRecord{a}, objects: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newFakeLedger()
			l.sink = &platformtest.Sink{}
			u := episodesAnObject(t, l, tt.perObject)
			if len(tt.delivered) > 0 {
				_, err := push(u, l, tt.delivered...)
				require.NoError(t, err)
			}
			objects0 := l.counts["sample_objects"]
			l.objectReads = 0
			l.journal.take()
			_, err := push(u, l, a, b, c, d)
			require.NoError(t, err)
			resumes := 0
			for _, line := range l.journal.take() {
				if line == "delivered? 4" {
					resumes++
				}
			}
			assert.Equal(t, 1, resumes, "one Resume for the step")
			assert.Equal(t, tt.objectReads, l.objectReads)
			assert.Equal(t, int64(tt.objects), l.counts["sample_objects"]-objects0)
		})
	}
}

func TestAPushWithThePlatformDownMapsItsRecordsAndHandsThemAllBackUnsent(t *testing.T) {
	l := newFakeLedger()
	var requests []string
	l.sink = &platformtest.Sink{Note: func(r string) { requests = append(requests, r) }}
	u := newTestUploader(&countingTel{}, l)
	items := []Item{{Record: episodeAt(10, "a"), Loc: Loc{Record: 0}}, {Record: episodeAt(15, "off cadence"), Loc: Loc{Record: 1}}}
	retry, err := u.Push(context.Background(), l, l, items, true)
	require.NoError(t, err)
	assert.Equal(t, map[Loc]bool{{Record: 0}: true}, retry, "the off-cadence record has nowhere to go, and is not handed back")
	assert.Empty(t, requests, "nothing is sent")
	assert.Empty(t, l.journal.take(), "nor read")
}

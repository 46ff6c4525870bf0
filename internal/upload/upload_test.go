package upload

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform/platformtest"
	"github.com/primeintellect/primeexporter/internal/sampletable"
	"github.com/primeintellect/primeexporter/rft"
)

func sized(sizes ...int) []episode {
	out := make([]episode, len(sizes))
	for i, s := range sizes {
		out[i] = episode{ep: &sampletable.Episode{Size: s}, loc: Loc{Record: i}}
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
	assert.Equal(t, episodeFingerprint(&a), episodeFingerprint(&same))
	assert.NotEqual(t, episodeFingerprint(&a), episodeFingerprint(&later))
	assert.NotEqual(t, episodeFingerprint(&a), episodeFingerprint(&other))

	// The rows of an oversized document can be alike but for their part.
	second, third := a, a
	second.Part, third.Part = 1, 2
	assert.NotEqual(t, episodeFingerprint(&a), episodeFingerprint(&second))
	assert.NotEqual(t, episodeFingerprint(&second), episodeFingerprint(&third))
	assert.Equal(t, episodeFingerprint(&second), episodeFingerprint(&second))
}

// Fingerprints are kept by the run's store: a row without a part keeps
// the fingerprint it had before parts existed, so that a replay across an
// upgrade still finds what was delivered.
func TestAFingerprintWithoutAPartIsTheOneBeforeParts(t *testing.T) {
	info := "q"
	ep := sampletable.Episode{Step: 10, Prompt: "q", Trajectory: "[{}]", Info: &info, CreatedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	assert.Equal(t, uint64(0xe9186ef14a8c7ce1), episodeFingerprint(&ep))

	part := []episode{{fp: 1}, {fp: 2}}
	assert.Equal(t, objectFingerprint(10, part), objectFingerprint(10, []episode{{fp: 1}, {fp: 2}}))
	assert.NotEqual(t, objectFingerprint(10, part), objectFingerprint(20, part), "the step is part of it")
	assert.NotEqual(t, objectFingerprint(10, part), objectFingerprint(10, part[:1]))
}

// Platform errors, as the rft client returns them.
var (
	unavailable = &rft.Error{Op: "put object", StatusCode: 503, Class: rft.ClassThrottled}
	serverError = &rft.Error{Op: "confirm", StatusCode: 500, Class: rft.ClassGateway}
	badRequest  = &rft.Error{Op: "put object", StatusCode: 400, Class: rft.ClassRejected}
)

// episodeAt is a prime.episode record of step whose answer is answer; its
// timestamp is fixed, so that the record sent again is the same episode.
func episodeAt(step int64, answer string) plog.LogRecord {
	lr := record(`{"prompt":"q","answer":"`+answer+`","trajectory":[{"messages":[]}]}`, "prime.work.step", step)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)))
	return lr
}

// push accepts the records into a batch, each at its own Loc, and uploads
// it.
func push(u *Uploader, l *fakeLedger, recs ...plog.LogRecord) (map[Loc]bool, error) {
	b := u.NewBatch(l, l, 0)
	for i, lr := range recs {
		u.Accept(b, lr, Loc{Record: i})
	}
	return u.Upload(context.Background(), b)
}

func newTestUploader(tel *countingTel) *Uploader {
	return New(Config{StepInterval: 10, MaxEpisodeBytes: 1 << 20, MaxObjectBytes: 1 << 20}, tel, logonce.New(zap.NewNop(), 16))
}

func TestAnObjectsUploadIsRecordedInTheLedgerAroundEachStep(t *testing.T) {
	a, b := episodeAt(10, "a"), episodeAt(10, "b")
	tests := []struct {
		name      string
		delivered []plog.LogRecord // confirmed by an earlier push
		records   []plog.LogRecord
		fail      map[string][]error
		journal   []string
		retry     map[Loc]bool
		pending   []string // the progress of each upload left pending
		counts    map[string]int
	}{
		{
			name: "an object is saved before its upload and done after its confirm", records: []plog.LogRecord{a, b},
			journal: []string{"delivered? 2", "object of step 10: new, range 0, saved", "presign", "save: presigned", "put", "save: put", "confirm", "done: 2 episodes delivered"},
			counts:  map[string]int{"rows": 2},
		},
		{
			name: "a delivered episode is left out", delivered: []plog.LogRecord{a}, records: []plog.LogRecord{a, b},
			journal: []string{"delivered? 2", "object of step 10: new, range 1, saved", "presign", "save: presigned", "put", "save: put", "confirm", "done: 1 episodes delivered"},
			counts:  map[string]int{"skip already_delivered": 1, "rows": 1},
		},
		{
			name: "a step delivered whole makes no object", delivered: []plog.LogRecord{a, b}, records: []plog.LogRecord{a, b},
			journal: []string{"delivered? 2"},
			counts:  map[string]int{"skip already_delivered": 2},
		},
		{
			name: "a failed PUT leaves the object pending with its URL", records: []plog.LogRecord{a, b},
			fail:    map[string][]error{"put": {unavailable}},
			journal: []string{"delivered? 2", "object of step 10: new, range 0, saved", "presign", "save: presigned", "put"},
			retry:   map[Loc]bool{{Record: 0}: true, {Record: 1}: true},
			pending: []string{"presigned"},
		},
		{
			name: "a failed confirm leaves the object pending as put", records: []plog.LogRecord{a, b},
			fail:    map[string][]error{"confirm": {serverError}},
			journal: []string{"delivered? 2", "object of step 10: new, range 0, saved", "presign", "save: presigned", "put", "save: put", "confirm"},
			retry:   map[Loc]bool{{Record: 0}: true, {Record: 1}: true},
			pending: []string{"put"},
		},
		{
			name: "an object the platform refuses for good is dropped and not retried", records: []plog.LogRecord{a, b},
			fail:    map[string][]error{"put": {badRequest}},
			journal: []string{"delivered? 2", "object of step 10: new, range 0, saved", "presign", "save: presigned", "put"},
			pending: []string{"presigned"},
			counts:  map[string]int{"reject upload_rejected": 2},
		},
		{
			name: "once the platform is down the later steps go back unasked", records: []plog.LogRecord{a, episodeAt(20, "c")},
			fail:    map[string][]error{"put": {unavailable}},
			journal: []string{"delivered? 1", "object of step 10: new, range 0, saved", "presign", "save: presigned", "put"},
			retry:   map[Loc]bool{{Record: 0}: true, {Record: 1}: true},
			pending: []string{"presigned"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newFakeLedger()
			l.sink = &platformtest.Sink{Note: func(r string) { l.journal.add("%s", r) }, Fail: tt.fail}
			if len(tt.delivered) > 0 {
				_, err := push(newTestUploader(&countingTel{}), l, tt.delivered...)
				require.NoError(t, err)
				l.journal.take()
			}
			tel := &countingTel{}
			retry, err := push(newTestUploader(tel), l, tt.records...)
			assert.Equal(t, tt.journal, l.journal.take())
			assert.Equal(t, tt.retry, retry, "the records handed back")
			if tt.retry == nil {
				assert.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.False(t, consumererror.IsPermanent(err), "retryable")
			}
			var pending []string
			for _, obj := range l.pendingObjects() {
				pending = append(pending, progress(obj))
			}
			assert.Equal(t, tt.pending, pending)
			assert.Equal(t, tt.counts, tel.counts())
		})
	}
}

func TestTheRetryOfAFailedUploadResumesItsObjectFromWhereItStopped(t *testing.T) {
	tests := []struct {
		name    string
		fail    map[string][]error
		journal []string // the retry's
	}{
		{"a failed PUT is put again with its URL and range, not presigned again", map[string][]error{"put": {unavailable}},
			[]string{"delivered? 1", "object of step 10: resumed, range 0", "put", "save: put", "confirm", "done: 1 episodes delivered"}},
		{"a failed confirm is only confirmed again", map[string][]error{"confirm": {serverError}},
			[]string{"delivered? 1", "object of step 10: resumed, range 0", "confirm", "done: 1 episodes delivered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newFakeLedger()
			l.sink = &platformtest.Sink{Note: func(r string) { l.journal.add("%s", r) }, Fail: tt.fail}
			u := newTestUploader(&countingTel{})
			retry, err := push(u, l, episodeAt(10, "a"))
			require.Error(t, err)
			require.Equal(t, map[Loc]bool{{Record: 0}: true}, retry)
			l.journal.take()

			retry, err = push(u, l, episodeAt(10, "a"))
			require.NoError(t, err)
			assert.Nil(t, retry)
			assert.Equal(t, tt.journal, l.journal.take())
			assert.Empty(t, l.pendingObjects())
		})
	}
}

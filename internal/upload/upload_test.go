package upload

import (
	"context"
	"fmt"
	"maps"
	"strings"
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
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
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

// push hands the records to the uploader as the root does, in one Push,
// each at its own Loc.
func push(u *Uploader, l *fakeLedger, recs ...plog.LogRecord) (map[Loc]bool, error) {
	items := make([]Item, len(recs))
	for i, lr := range recs {
		items[i] = Item{Record: lr, Loc: Loc{Record: i}}
	}
	return u.Push(context.Background(), l, l, items, false)
}

// newTestUploader is an uploader whose objects go through l, its store
// and its sink, with a memory of objects in flight of its own: a new one
// is a new process.
func newTestUploader(tel *countingTel, l *fakeLedger) *Uploader {
	warn := logonce.New(zap.NewNop(), 16)
	return New(Config{StepInterval: 10, MaxEpisodeBytes: 1 << 20, MaxObjectBytes: 1 << 20}, NewObjects(l, l, warn), tel, warn)
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
			name: "an object is saved once PUT and done after its confirm", records: []plog.LogRecord{a, b},
			journal: []string{"delivered? 2", "object of step 10: new, range 0", "presign", "put", "save: put", "confirm", "done: 2 episodes delivered"},
			counts:  map[string]int{"rows": 2},
		},
		{
			name: "a delivered episode is left out", delivered: []plog.LogRecord{a}, records: []plog.LogRecord{a, b},
			journal: []string{"delivered? 2", "object of step 10: new, range 1", "presign", "put", "save: put", "confirm", "done: 1 episodes delivered"},
			counts:  map[string]int{"skip already_delivered": 1, "rows": 1},
		},
		{
			name: "a step delivered whole makes no object", delivered: []plog.LogRecord{a, b}, records: []plog.LogRecord{a, b},
			journal: []string{"delivered? 2"},
			counts:  map[string]int{"skip already_delivered": 2},
		},
		{
			name: "a failed PUT saves nothing: only the process keeps its URL", records: []plog.LogRecord{a, b},
			fail:    map[string][]error{"put": {unavailable}},
			journal: []string{"delivered? 2", "object of step 10: new, range 0", "presign", "put"},
			retry:   map[Loc]bool{{Record: 0}: true, {Record: 1}: true},
		},
		{
			name: "a failed confirm leaves the object pending as put", records: []plog.LogRecord{a, b},
			fail:    map[string][]error{"confirm": {serverError}},
			journal: []string{"delivered? 2", "object of step 10: new, range 0", "presign", "put", "save: put", "confirm"},
			retry:   map[Loc]bool{{Record: 0}: true, {Record: 1}: true},
			pending: []string{"put"},
		},
		{
			name: "an object the platform refuses for good is dropped and not retried", records: []plog.LogRecord{a, b},
			fail:    map[string][]error{"put": {badRequest}},
			journal: []string{"delivered? 2", "object of step 10: new, range 0", "presign", "put", "forgotten"},
			counts:  map[string]int{"reject upload_rejected": 2},
		},
		{
			name: "once the platform is down the later steps go back unasked", records: []plog.LogRecord{a, episodeAt(20, "c")},
			fail:    map[string][]error{"put": {unavailable}},
			journal: []string{"delivered? 1", "object of step 10: new, range 0", "presign", "put"},
			retry:   map[Loc]bool{{Record: 0}: true, {Record: 1}: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newFakeLedger()
			l.sink = &platformtest.Sink{Note: func(r string) { l.journal.add("%s", r) }, Fail: tt.fail}
			if len(tt.delivered) > 0 {
				_, err := push(newTestUploader(&countingTel{}, l), l, tt.delivered...)
				require.NoError(t, err)
				l.journal.take()
			}
			tel := &countingTel{}
			retry, err := push(newTestUploader(tel, l), l, tt.records...)
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
		name      string
		fail      map[string][]error
		journal   []string // the retry's in the same process
		restarted []string
	}{
		{"a failed PUT is put again with its URL and range, and presigned again only after a restart", map[string][]error{"put": {unavailable}},
			[]string{"delivered? 1", "put", "save: put", "confirm", "done: 1 episodes delivered"},
			[]string{"delivered? 1", "object of step 10: new, range 1", "presign", "put", "save: put", "confirm", "done: 1 episodes delivered"}},
		{"a failed confirm is only confirmed again, before a restart or after", map[string][]error{"confirm": {serverError}},
			[]string{"delivered? 1", "object of step 10: resumed, range 0", "confirm", "done: 1 episodes delivered"},
			[]string{"delivered? 1", "object of step 10: resumed, range 0", "confirm", "done: 1 episodes delivered"}},
	}
	for _, tt := range tests {
		for _, restart := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s (restart: %v)", tt.name, restart), func(t *testing.T) {
				l := newFakeLedger()
				l.sink = &platformtest.Sink{Note: func(r string) { l.journal.add("%s", r) }, Fail: maps.Clone(tt.fail)}
				u := newTestUploader(&countingTel{}, l)
				retry, err := push(u, l, episodeAt(10, "a"))
				require.Error(t, err)
				require.Equal(t, map[Loc]bool{{Record: 0}: true}, retry)
				l.journal.take()

				want := tt.journal
				if restart {
					// A new process knows the object from the store alone.
					u = newTestUploader(&countingTel{}, l)
					want = tt.restarted
				}
				retry, err = push(u, l, episodeAt(10, "a"))
				require.NoError(t, err)
				assert.Nil(t, retry)
				assert.Equal(t, want, l.journal.take())
				assert.Empty(t, l.pendingObjects())
			})
		}
	}
}

// --- over real HTTP: a run's lease and the fake platform ---

// stepEpisode is a trainer's prime.episode record dispatched at step: the
// prompt "q-"+text and one branch whose assistant message is text. Its
// timestamp is fixed by its step, so that the record sent again is the
// same episode.
func stepEpisode(step int64, text string) plog.LogRecord {
	lr := record(`{"prompt":"q-`+text+`","reward":1,"trajectory":[{"messages":[{"role":"assistant","content":"`+text+`"}],`+
		`"num_input_tokens":10,"num_output_tokens":20}]}`, "prime.work.step", step)
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(step) * time.Second)))
	return lr
}

// evalWork marks lr as evaluation work.
func evalWork(lr plog.LogRecord) plog.LogRecord {
	lr.Attributes().PutStr("prime.work.type", "eval")
	return lr
}

func TestOnlyStepsOnTheCadenceAreUploadedAndTheRestAreCountedApart(t *testing.T) {
	r := newLiveRun(t, fleettest.NewPlatform(t), testConfig())
	_, err := r.push(stepEpisode(10, "a"), stepEpisode(10, "b"), stepEpisode(11, "c"), stepEpisode(20, "d"), evalWork(stepEpisode(20, "e")))
	require.NoError(t, err)
	assert.Equal(t, []string{"step 10: q-a#0:0 q-b#0:1", "step 20: q-d#0:0"}, r.objects())
	assert.Equal(t, map[string]int{"skip off_cadence": 1, "skip eval": 1, "rows": 3}, r.tel.counts(), "skipping is not a loss: nothing rejected")
}

func TestAStepWithNoRowsMakesNoRequest(t *testing.T) {
	srv := fleettest.NewPlatform(t)
	r := newLiveRun(t, srv, testConfig())
	empty := record(`{"trajectory":[]}`, "prime.work.step", int64(10))
	_, err := r.push(empty, stepEpisode(30, "x"), evalWork(stepEpisode(40, "y")))
	require.NoError(t, err)
	assert.Equal(t, []string{"step 30: q-x#0:0"}, r.objects())
	assert.Equal(t, []rfttest.Route{rfttest.RouteCreate, rfttest.RoutePresign, rfttest.RoutePut, rfttest.RouteConfirm}, fleettest.Routes(srv))
	assert.Equal(t, map[string]int{"skip empty_trajectory": 1, "skip eval": 1, "rows": 1}, r.tel.counts())
}

func TestAnOffPolicyStragglerLandsInASecondObjectOfItsStepWithItsOwnRange(t *testing.T) {
	r := newLiveRun(t, fleettest.NewPlatform(t), testConfig())
	_, err := r.push(stepEpisode(10, "a"), stepEpisode(10, "b"))
	require.NoError(t, err)
	// Dispatched at 10, it arrives with step 20's batch.
	_, err = r.push(stepEpisode(20, "c"), stepEpisode(10, "straggler"))
	require.NoError(t, err)
	assert.Equal(t, []string{
		"step 10: q-a#0:0 q-b#0:1",
		"step 10: q-straggler#1:0",
		"step 20: q-c#0:0",
	}, r.objects())
}

func TestBadEpisodesAreRejectedOneByOneAndTheRestLand(t *testing.T) {
	r := newLiveRun(t, fleettest.NewPlatform(t), testConfig())
	badReward := stepEpisode(10, "bad")
	badReward.Body().SetStr(strings.Replace(badReward.Body().Str(), `"reward":1`, `"reward":{}`, 1))
	stringStep := stepEpisode(10, "bad2")
	stringStep.Attributes().PutStr("prime.work.step", "ten")
	_, err := r.push(badReward, stepEpisode(10, "good"), stringStep)
	require.NoError(t, err)
	assert.Equal(t, []string{"step 10: q-good#0:0"}, r.objects())
	assert.Equal(t, map[string]int{"reject bad_value": 1, "reject bad_step": 1, "rows": 1}, r.tel.counts())
	text := r.logText()
	assert.Contains(t, text, "reward")
	assert.Contains(t, text, "prime.work.step")
}

func TestWhatThePlatformAnswersAnObjectsRequestsDecidesWhetherItsStepLands(t *testing.T) {
	tests := []struct {
		name    string
		route   rfttest.Route
		faults  []rfttest.Fault
		records []plog.LogRecord
		objects []string
		routes  []rfttest.Route // after the run's create
		counts  map[string]int
		logged  string // in a warning
	}{
		{
			name: "a failed presign loses only that step", route: rfttest.RoutePresign, faults: []rfttest.Fault{{Status: 400}},
			records: []plog.LogRecord{stepEpisode(10, "lost"), stepEpisode(20, "kept")},
			objects: []string{"step 20: q-kept#0:0"},
			routes:  []rfttest.Route{rfttest.RoutePresign, rfttest.RoutePresign, rfttest.RoutePut, rfttest.RouteConfirm},
			counts:  map[string]int{"reject upload_rejected": 1, "rows": 1},
		},
		{
			name: "a presign without URL is an error naming the keys that came back", route: rfttest.RoutePresign,
			faults:  []rfttest.Fault{{Status: 200, Body: `{"data":{"s3Key":"k.parquet"}}`}},
			records: []plog.LogRecord{stepEpisode(10, "x")},
			routes:  []rfttest.Route{rfttest.RoutePresign},
			counts:  map[string]int{"reject upload_rejected": 1},
			logged:  "s3Key",
		},
		{
			name: "a PUT answered with 503 is retried and lands once", route: rfttest.RoutePut, faults: []rfttest.Fault{{Status: 503}},
			records: []plog.LogRecord{stepEpisode(10, "x")},
			objects: []string{"step 10: q-x#0:0"},
			routes:  []rfttest.Route{rfttest.RoutePresign, rfttest.RoutePut, rfttest.RoutePut, rfttest.RouteConfirm},
			counts:  map[string]int{"rows": 1},
		},
		{
			name: "a PUT answered with 403 is final", route: rfttest.RoutePut, faults: []rfttest.Fault{{Status: 403}},
			records: []plog.LogRecord{stepEpisode(10, "x")},
			routes:  []rfttest.Route{rfttest.RoutePresign, rfttest.RoutePut},
			counts:  map[string]int{"reject upload_rejected": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fleettest.NewPlatform(t)
			srv.Inject(tt.route, tt.faults...)
			r := newLiveRun(t, srv, testConfig())
			retry, err := r.push(tt.records...)
			require.NoError(t, err, "a refusal for good is not retried")
			assert.Nil(t, retry)
			assert.Equal(t, tt.objects, r.objects())
			assert.Len(t, r.run().Objects, len(tt.objects), "nothing uploaded but the confirmed objects")
			assert.Equal(t, append([]rfttest.Route{rfttest.RouteCreate}, tt.routes...), fleettest.Routes(srv))
			assert.Equal(t, tt.counts, r.tel.counts())
			assert.Contains(t, r.logText(), tt.logged)
		})
	}
}

func TestAFailedConfirmIsRetriedWithoutUploadingAgain(t *testing.T) {
	srv := fleettest.NewPlatform(t)
	r := newLiveRun(t, srv, testConfig())
	// Both in-place attempts fail: the records go back to the collector.
	// A 500 is about this request, so step 20 still goes (after a 503 the
	// platform is down and it would go back unsent).
	srv.Inject(rfttest.RouteConfirm, rfttest.Fault{Status: 500}, rfttest.Fault{Status: 500})
	recs := []plog.LogRecord{stepEpisode(10, "x"), stepEpisode(20, "y")}
	retry, err := r.push(recs...)
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "retryable")
	assert.Equal(t, map[Loc]bool{{Record: 0}: true}, retry, "only step 10's record comes back")

	_, err = r.push(retried(recs, retry)...)
	require.NoError(t, err)
	assert.Equal(t, []string{"step 20: q-y#0:0", "step 10: q-x#0:0"}, r.objects())
	assert.Equal(t, []rfttest.Route{rfttest.RouteCreate,
		rfttest.RoutePresign, rfttest.RoutePut, rfttest.RouteConfirm, rfttest.RouteConfirm,
		rfttest.RoutePresign, rfttest.RoutePut, rfttest.RouteConfirm,
		rfttest.RouteConfirm,
	}, fleettest.Routes(srv), "step 10: presign, put, two failed confirms; step 20 in full; then step 10's confirm alone")
}

func TestARetryNeverReuploadsAStepThatWasConfirmed(t *testing.T) {
	srv := fleettest.NewPlatform(t)
	r := newLiveRun(t, srv, testConfig())
	// Step 10 goes; step 20's presign finds the platform down twice.
	srv.Inject(rfttest.RoutePresign, rfttest.Fault{}, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	recs := []plog.LogRecord{stepEpisode(10, "x"), stepEpisode(20, "y")}
	retry, err := r.push(recs...)
	require.Error(t, err)
	assert.Equal(t, map[Loc]bool{{Record: 1}: true}, retry, "only step 20's record comes back")

	_, err = r.push(retried(recs, retry)...)
	require.NoError(t, err)
	assert.Equal(t, []string{"step 10: q-x#0:0", "step 20: q-y#0:0"}, r.objects())
	assert.Equal(t, 2, fleettest.Requests(srv, rfttest.RouteConfirm), "one confirm per object")
}

func TestAnEpisodeLargerThanTheLimitIsRejectedOnItsOwn(t *testing.T) {
	r := newLiveRun(t, fleettest.NewPlatform(t), testConfig(func(c *Config) { c.MaxEpisodeBytes = 2000 }))
	_, err := r.push(stepEpisode(10, strings.Repeat("x", 5000)), stepEpisode(10, "small"))
	require.NoError(t, err)
	assert.Equal(t, []string{"step 10: q-small#0:0"}, r.objects())
	assert.Equal(t, map[string]int{"reject episode_too_large": 1, "rows": 1}, r.tel.counts())
	assert.Contains(t, r.logText(), "max_episode_bytes")
}

func TestAStepLargerThanTheObjectLimitIsSplitWithARangePerPart(t *testing.T) {
	r := newLiveRun(t, fleettest.NewPlatform(t), testConfig(func(c *Config) { c.MaxEpisodeBytes, c.MaxObjectBytes = 4000, 4000 }))
	text := strings.Repeat("t", 1000)
	_, err := r.push(stepEpisode(10, text), stepEpisode(10, text), stepEpisode(10, text))
	require.NoError(t, err)
	assert.Equal(t, []string{"step 10: q-" + text + "#0:0", "step 10: q-" + text + "#1:0", "step 10: q-" + text + "#2:0"}, r.objects())
}

func TestAnAttachedRunDrawsItsRangesFromTheUpperHalf(t *testing.T) {
	srv := fleettest.NewPlatform(t)
	srv.AddRun("run-att")
	res := pcommon.NewResource()
	res.Attributes().PutStr("prime.run.id", "run-att")
	r := newLiveRunOf(t, srv, res, testConfig())
	_, err := r.push(stepEpisode(10, "a"), stepEpisode(10, "b"))
	require.NoError(t, err)
	run, _ := srv.Run("run-att")
	require.Len(t, run.Objects, 1)
	rows := platformtest.Rows(t, run.Objects[0].Body)
	require.Len(t, rows, 2)
	for _, row := range rows {
		rng := row.SampleID >> 32
		assert.GreaterOrEqual(t, rng, int64(1<<20))
		assert.Less(t, rng, int64(1<<21))
		assert.Less(t, row.SampleID, int64(1<<53))
	}
}

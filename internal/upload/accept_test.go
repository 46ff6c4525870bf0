package upload

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/reject"
)

// countingTel counts what the uploader reports, by kind
// and reason ("skip eval").
type countingTel struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingTel) add(key string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key] += n
}

func (c *countingTel) Reject(_ string, r reject.Reason, n int) { c.add("reject "+string(r), n) }
func (c *countingTel) Skip(_ string, r reject.Reason, n int)   { c.add("skip "+string(r), n) }
func (c *countingTel) Coerce(_ string, r reject.Reason, n int) { c.add("coerce "+string(r), n) }
func (c *countingTel) SamplesUploaded(rows, _, _ int)          { c.add("rows", rows) }
func (c *countingTel) TracesUploaded(batches, docs int) {
	c.add("trace batches", batches)
	c.add("documents", docs)
}

func (c *countingTel) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// testLease is a run's ledger, and the telemetry the uploader counts into.
func testLease(t *testing.T) (*fakeLedger, *countingTel) {
	t.Helper()
	return newFakeLedger(), &countingTel{}
}

// record is a prime.episode record with a JSON body and attributes kv.
func record(body string, kv ...any) plog.LogRecord {
	lr := plog.NewLogRecord()
	lr.Body().SetStr(body)
	for i := 0; i < len(kv); i += 2 {
		if err := lr.Attributes().PutEmpty(kv[i].(string)).FromRaw(kv[i+1]); err != nil {
			panic(err)
		}
	}
	return lr
}

// nativeDoc is a verifiers document of dispatch step 20 whose traces have
// the given answers, the last trace trainable.
func nativeDoc(answers ...string) string {
	traces := make([]string, len(answers))
	for i, a := range answers {
		trainable := "false"
		if i == len(answers)-1 {
			trainable = "true"
		}
		traces[i] = `{"agent":{"name":"solver","trainable":` + trainable + `},` +
			`"nodes":[{"message":{"role":"assistant","content":"` + a + `"}}],"info":{"advantage":0.5}}`
	}
	return `{"id":"ep","run":{"type":"train","id":"prl","work":{"type":"train","step":20}},"traces":[` + strings.Join(traces, ",") + `]}`
}

func TestAcceptPutsEveryRowInTheBatchAndCountsWhatHasNone(t *testing.T) {
	const traj = `"trajectory":[{"messages":[]}]`
	tests := []struct {
		name     string
		lr       plog.LogRecord
		episodes int
		document bool
		counts   map[string]int
	}{
		{"a column-keyed episode", record(`{`+traj+`}`, "prime.work.step", int64(10)), 1, false, nil},
		{"a native document", record(nativeDoc("42"), "prime.work.step", int64(10)), 1, true, nil},
		{"a native document's own step", record(nativeDoc("42")), 1, true, nil},
		{"eval work", record(nativeDoc("42"), "prime.work.type", "eval"), 0, true, map[string]int{"skip eval": 1}},
		{"a step off the cadence", record(`{`+traj+`}`, "prime.work.step", int64(11)), 0, false, map[string]int{"skip off_cadence": 1}},
		{"an empty trajectory", record(`{"trajectory":[]}`, "prime.work.step", int64(10)), 0, false, map[string]int{"skip empty_trajectory": 1}},
		{"a document without branches", record(`{"traces":[]}`, "prime.work.step", int64(10)), 0, true, map[string]int{"skip empty_trajectory": 1}},
		{"an episode larger than max_episode_bytes", record(`{"prompt":"`+strings.Repeat("x", 5000)+`",`+traj+`}`, "prime.work.step", int64(10)), 0, false,
			map[string]int{"reject episode_too_large": 1}},
		{"a record that does not fit", record(`{"reward":"high"}`, "prime.work.step", int64(10)), 0, false, map[string]int{"reject bad_value": 1}},
		{"values a Python user sends", record(`{"prompt":[{"role":"user"}],"answer":42,`+traj+`}`, "prime.work.step", "10"), 1, false,
			map[string]int{"coerce number_string": 1, "coerce json_text": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, tel := testLease(t)
			u := New(Config{StepInterval: 10, MaxEpisodeBytes: 4096, MaxObjectBytes: 1 << 20}, nil, tel, logonce.New(zap.NewNop(), 16))
			b := u.NewBatch(l, l, 0)
			rec := u.Accept(b, tt.lr, Loc{Record: 3})
			n := 0
			for step, eps := range b.steps {
				for _, e := range eps {
					assert.Equal(t, step, e.ep.Step)
					assert.Equal(t, Loc{Record: 3}, e.loc)
				}
				n += len(eps)
			}
			assert.Equal(t, tt.episodes, n, "episodes in the batch")
			assert.Equal(t, tt.document, rec.Document != nil, "a document")
			b.Release() // a batch's coercions are counted once, as the push ends
			assert.Equal(t, tt.counts, tel.counts())
		})
	}
}

func TestEveryRowOfAnOversizedDocumentIsItsOwnEpisode(t *testing.T) {
	// 9 MiB of answer makes a sample of 27 MiB: one row per trace, of
	// which the long one is too large for the uploader and the short ones,
	// alike to the byte but for their part, go in.
	long := strings.Repeat("x", 9<<20)
	l, tel := testLease(t)
	u := New(Config{StepInterval: 10, MaxEpisodeBytes: 1 << 20, MaxObjectBytes: 1 << 20}, nil, tel, logonce.New(zap.NewNop(), 16))
	b := u.NewBatch(l, l, 0)
	rec := u.Accept(b, record(nativeDoc("42", "42", long)), Loc{})
	require.Len(t, rec.Rows, 3)
	require.Len(t, b.steps[20], 2)
	assert.Equal(t, map[string]int{"reject episode_too_large": 1}, tel.counts())
	assert.NotEqual(t, episodeFingerprint(b.steps[20][0].ep), episodeFingerprint(b.steps[20][1].ep))
}

func TestABatchsCoercionsAreCountedTogetherOnceItsPushEnds(t *testing.T) {
	const traj = `"trajectory":[{"messages":[]}]`
	l, tel := testLease(t)
	u := New(Config{StepInterval: 10, MaxEpisodeBytes: 4096, MaxObjectBytes: 1 << 20}, nil, tel, logonce.New(zap.NewNop(), 16))
	b := u.NewBatch(l, l, 0)
	for i := range 3 {
		u.Accept(b, record(`{"prompt":[{"role":"user"}],`+traj+`}`, "prime.work.step", "10"), Loc{Record: i})
	}
	assert.Empty(t, tel.counts(), "nothing is counted a record at a time")
	b.Release()
	assert.Equal(t, map[string]int{"coerce json_text": 3, "coerce number_string": 3}, tel.counts())
	assert.Equal(t, int64(6), l.counts["values_coerced"], "the run's close-out line counts every value")
}

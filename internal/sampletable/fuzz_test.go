package sampletable

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/reject"
)

// FuzzFromRecord feeds arbitrary bodies and trajectory attributes through
// the mapping: it must not panic, must reject only with a *reject.Rejection of a
// known reason, and every row it maps must hold valid JSON and UTF-8 and
// encode to an object parquet-go reads back.
func FuzzFromRecord(f *testing.F) {
	f.Add(episodeJSON, "", uint8(0))
	f.Add(episodeJSON, "", uint8(1))
	f.Add(`{"reward":1,"trajectory":[{"advantage":2,"advantage":3}]}`, `[{"messages":"x"}]`, uint8(2))
	f.Add(`{"trajectory":"[{\"a\":1}]","metrics":"{\"m\":1}"}`, "", uint8(8))
	f.Add(`{"reward":"x"}`, "[", uint8(2))
	f.Add(`{"tag":"\ud800","prompt":"\u0000","trajectory":[{"num_input_tokens":1e400}]}`, "", uint8(0))
	f.Add("{\"answer\":\"\xff\"}", "[{\"m\":\"\xfe\"}]", uint8(3))
	f.Add(`{"trajectory":[[]]}`, "", uint8(4))
	f.Add(`[1]`, "  [ ]", uint8(2))
	f.Add(strings.Repeat("[", 20000), "", uint8(0))
	f.Add(`{"trajectory":`+strings.Repeat("[", 20000)+`}`, strings.Repeat("[{\"a\":", 100), uint8(2))
	f.Fuzz(func(t *testing.T, body, traj string, kind uint8) {
		a := pcommon.NewMap()
		if kind&8 != 0 {
			a.PutDouble(attrWorkStep, 5)
		} else {
			a.PutInt(attrWorkStep, 5)
		}
		if kind&2 != 0 {
			a.PutStr(attrPrefix+colTrajectory, traj)
		}
		if kind&4 != 0 {
			a.PutStr(attrWorkType, "eval")
		}
		b := pcommon.NewValueStr(body)
		var raw map[string]any
		if kind&1 != 0 && json.Unmarshal([]byte(body), &raw) == nil {
			b = pcommon.NewValueEmpty()
			if err := b.SetEmptyMap().FromRaw(raw); err != nil {
				return
			}
		}

		rec, err := FromRecord(a, b, 0, 0, testNow())
		if err != nil {
			rej, ok := errors.AsType[*reject.Rejection](err)
			if !ok || !strings.HasPrefix(err.Error(), "prime.episode: ") || rej.Field == "" {
				t.Fatalf("error %v is not a proper rejection", err)
			}
			switch rej.Reason {
			case reject.BadBody, reject.BadValue:
			default:
				t.Fatalf("unexpected reason %q: %v", rej.Reason, err)
			}
			return
		}
		if rec.Step != 5 || rec.Eval != (kind&4 != 0) {
			t.Fatalf("step %d eval %v for kind %d", rec.Step, rec.Eval, kind)
		}
		if rec.Eval && len(rec.Rows) != 0 {
			t.Fatalf("eval work has %d rows", len(rec.Rows))
		}
		checkRecord(t, rec)
	})
}

// checkRecord holds a document to valid JSON, and every row to checkRow.
func checkRecord(t *testing.T, rec Record) {
	t.Helper()
	if rec.Document != nil && !json.Valid(rec.Document) {
		t.Fatalf("the document is not valid JSON: %q", rec.Document)
	}
	parts := map[int]bool{}
	for _, ep := range rec.Rows {
		if ep.Step != rec.Step || parts[ep.Part] {
			t.Fatalf("a row of step %d, part %d, in a record of step %d with parts %v", ep.Step, ep.Part, rec.Step, parts)
		}
		parts[ep.Part] = true
		checkRow(t, ep)
	}
}

func checkRow(t *testing.T, ep Episode) {
	t.Helper()
	var branches []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(ep.Trajectory), &branches); err != nil || len(branches) == 0 {
		t.Fatalf("trajectory %q is not a non-empty array of objects: %v", ep.Trajectory, err)
	}
	for i, b := range branches {
		if adv, ok := b["advantage"]; !ok || (ep.Advantage == nil && string(adv) != "null") {
			t.Fatalf("branch %d of %q lacks the episode's advantage", i, ep.Trajectory)
		}
	}
	for _, s := range []*string{&ep.Trajectory, ep.Completion, ep.Task, ep.Info, ep.Metrics, ep.Timing} {
		if s != nil && !json.Valid([]byte(*s)) {
			t.Fatalf("JSON column holds invalid JSON %q", *s)
		}
	}
	for _, s := range []*string{&ep.Tag, &ep.Prompt, &ep.Answer, &ep.Trajectory, ep.EnvName, ep.Completion, ep.Task, ep.Info, ep.Metrics, ep.Timing} {
		if s != nil && !utf8.ValidString(*s) {
			t.Fatalf("text column holds invalid UTF-8 %q", *s)
		}
	}
	if ep.Size != ep.size() {
		t.Fatalf("size %d, want %d", ep.Size, ep.size())
	}
	var buf bytes.Buffer
	if err := NewEncoder().Encode(&buf, "run", ep.Step, 0, []Episode{ep}); err != nil {
		t.Fatalf("encoding: %v", err)
	}
	rows := cells(t, openParquet(t, buf.Bytes()))
	if len(rows) != 1 || rows[0]["trajectory"] != ep.Trajectory || rows[0]["prompt"] != ep.Prompt {
		t.Fatalf("read back %v", rows)
	}
}

// FuzzDocument feeds native documents through the mapping, as a map body
// or JSON text, with the step as an attribute or from the body, at the
// real sample limit or one that forces a row per trace. It must not panic,
// must reject only with a *reject.Rejection of a reason a document can
// have, and every record it maps must carry its document as valid JSON
// and rows that checkRecord passes.
func FuzzDocument(f *testing.F) {
	fixture := fixtureText(f)
	for _, kind := range []uint8{0, 1, 2, 4, 5, 12, 16, 20} {
		f.Add(fixture, kind)
	}
	f.Add(fallbackDoc(), uint8(16))
	f.Add(fallbackDoc(), uint8(20))
	f.Add(nativeDoc(nativeTrace(`"nodes":[{"parent":1},{"parent":0},{"parent":0}]`)), uint8(0))
	f.Add(nativeDoc(nativeTrace(`"nodes":[{"parent":2,"message":"c"},{"parent":2,"message":null},{"message":"a"}],`+
		`"calls":[{"node":0,"usage":{"prompt_tokens":1e2,"completion_tokens":-3,"cached_input_tokens":null}},{"node":9}]`)), uint8(4))
	f.Add(nativeDoc(nativeTrace(chain(2)+`,"rewards":{"a":{"score":NaN},"b":null},"info":{"native_wrapper":1,"advantage":-Infinity}`)), uint8(0))
	f.Add(`{"run":{"work":{"step":"7","type":"eval"}},"traces":[1]}`, uint8(1))
	f.Add(`{"traces":[{"nodes":[{"message":"\ud800\u0000","parent":0.0}],"info":null}]}`+" ", uint8(12))
	f.Add("{\"traces\":[{\"nodes\":[{\"message\":\"\xff\"}]}]}", uint8(16))
	f.Fuzz(func(t *testing.T, text string, kind uint8) {
		a := pcommon.NewMap()
		if kind&1 == 0 {
			a.PutInt(attrWorkStep, 5)
		}
		if kind&2 != 0 {
			a.PutStr(attrWorkType, "eval")
		}
		body := pcommon.NewValueStr(text)
		if kind&4 != 0 {
			v, err := decodeValue(text)
			if err != nil {
				return
			}
			if kind&8 != 0 {
				nullsToNaN(v)
			}
			body = v
		}
		limit := maxSampleBytes
		if kind&16 != 0 {
			limit = 0
		}

		rec, err := mapRecord(nil, a, body, testCreatedAt(), limit)
		if err != nil {
			rej, ok := errors.AsType[*reject.Rejection](err)
			if !ok || !strings.HasPrefix(err.Error(), "prime.episode: ") || rej.Field == "" {
				t.Fatalf("error %v is not a proper rejection", err)
			}
			switch rej.Reason {
			case reject.BadBody, reject.BadValue, reject.BadStep, reject.NoStep:
			default:
				t.Fatalf("unexpected reason %q: %v", rej.Reason, err)
			}
			return
		}
		if kind&1 == 0 && rec.Step != 5 {
			t.Fatalf("step %d, want the attribute's 5", rec.Step)
		}
		if kind&2 != 0 && !rec.Eval {
			t.Fatal("eval work taken as train")
		}
		if b := readBody(body, nil, nil); b.err == nil && b.isDocument() && rec.Document == nil {
			t.Fatal("a document without Document")
		}
		checkRecord(t, rec)
	})
}

// nullsToNaN turns every empty value (JSON null) inside v into NaN, as an
// OTLP map carries a Python float('nan').
func nullsToNaN(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeEmpty:
		v.SetDouble(math.NaN())
	case pcommon.ValueTypeMap:
		v.Map().Range(func(_ string, mv pcommon.Value) bool {
			nullsToNaN(mv)
			return true
		})
	case pcommon.ValueTypeSlice:
		for i := 0; i < v.Slice().Len(); i++ {
			nullsToNaN(v.Slice().At(i))
		}
	}
}

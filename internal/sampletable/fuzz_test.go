package sampletable

import (
	"bytes"
	"encoding/json"
	"errors"
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

		ep, err := FromRecord(a, b, 0, 0, testNow())
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
		if ep.Step != 5 || ep.Eval != (kind&4 != 0) {
			t.Fatalf("step %d eval %v for kind %d", ep.Step, ep.Eval, kind)
		}
		if ep.Eval || ep.EmptyTrajectory {
			return
		}
		checkRow(t, ep)
	})
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

// FuzzJSONScannerAgreesWithEncodingJSON: the in-place scanner accepts
// exactly what encoding/json accepts and walks an object's keys in document
// order.
func FuzzJSONScannerAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		episodeJSON, `{}`, `[]`, ` [1, -0.5e+3, "a\"b", true, false, null, {"k":[{}]}] `,
		`{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `1e`, `"\u12"`, `"\x"`, "\"\x01\"", `{"a" 1}`, `{1:2}`,
		`"\ud800"`, "\"\xff\"", "\"\x1f\"", "\"\x7f\x20\"", `{"adv\u0061ntage":1,"b":2}`, `tru`, `nul`, `null`, ` [[], {}] `, `[1 2]`, `{"a":1}x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validJSON(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", s, got, want)
		}
		// Bodies are made valid UTF-8 before they are walked (newSource).
		if valid := strings.ToValidUTF8(s, "\uFFFD"); firstNonSpace(valid) == '{' && json.Valid([]byte(valid)) {
			var keys []string
			if err := eachMember(valid, func(k, _ string) error { keys = append(keys, unquote(k)); return nil }); err != nil {
				t.Fatalf("eachMember(%q): %v", valid, err)
			}
			if want := topLevelKeys(t, valid); strings.Join(keys, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("keys of %q: %q, want %q", valid, keys, want)
			}
		}
		var elems []json.RawMessage
		n := 0
		err := eachElement(s, func(_, start int) (int, error) {
			n++
			end, ok := scanValue(s, start, 1)
			if !ok {
				return end, &syntaxError{end}
			}
			return end, nil
		})
		isArray := firstNonSpace(s) == '[' && json.Unmarshal([]byte(s), &elems) == nil
		if (err == nil) != isArray || (err == nil && n != len(elems)) {
			t.Fatalf("eachElement(%q): %d elements, %v; encoding/json: %d", s, n, err, len(elems))
		}
	})
}

func topLevelKeys(t *testing.T, s string) []string {
	dec := json.NewDecoder(strings.NewReader(s))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

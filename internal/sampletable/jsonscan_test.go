package sampletable

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzScannerAgreesWithEncodingJSON: the scanner accepts
// exactly what encoding/json accepts, walks an object's keys in document
// order, and compacts text as encoding/json does.
func FuzzScannerAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"tag":"rollout","reward":1,"trajectory":[{"messages":[{"role":"user","content":"2+2?"}]}]}`,
		`{}`, `[]`, ` [1, -0.5e+3, "a\"b", true, false, null, {"k":[{}]}] `,
		`{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `1e`, `"\u12"`, `"\x"`, "\"\x01\"", `{"a" 1}`, `{1:2}`,
		`[1,-2,0.5,-0.25e-3,1E+9,0]`, `[1,01]`, `[1,-]`, `[1,2,]`, `[1,,2]`, `[1,2 ,3]`, `[1,[2]]`, `[-1,"a"]`, `[0,-0,1.]`, `[1e5,2e]`, `[3,4`, `[5,`,
		`"\ud800"`, "\"\xff\"", "\"\x1f\"", "\"\x7f\x20\"", `{"adv\u0061ntage":1,"b":2}`, `tru`, `nul`, `null`, ` [[], {}] `, `[1 2]`, `{"a":1}x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validJSON(s), json.Valid([]byte(s)); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json says %v", s, got, want)
		}
		// A document's text is compacted as encoding/json compacts it.
		if json.Valid([]byte(s)) {
			var want bytes.Buffer
			_ = json.Compact(&want, []byte(s))
			if got, _ := RewriteJSON(s, true, false); got != want.String() {
				t.Fatalf("RewriteJSON(%q) = %q, encoding/json compacts it to %q", s, got, want.String())
			}
		}
		// Callers make text valid UTF-8 before they walk it.
		if valid := strings.ToValidUTF8(s, "\uFFFD"); firstNonSpace(valid) == '{' && json.Valid([]byte(valid)) {
			var keys []string
			compact, err := scanMembers(valid, func(k, _ string) error { keys = append(keys, unquote(k)); return nil })
			if err != nil {
				t.Fatalf("scanMembers(%q): %v", valid, err)
			}
			// Compact text is what compacting leaves as it is.
			if _, changed := RewriteJSON(valid, true, false); compact == changed {
				t.Fatalf("scanMembers(%q) says compact %v, but RewriteJSON changed it: %v", valid, compact, changed)
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
				return end, &syntaxError{Offset: end}
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

func TestRewriteCompactsAndNullsPythonsNonFiniteNumbers(t *testing.T) {
	tests := []struct {
		name, in        string
		compact, python bool
		want            string
		changed         bool
	}{
		{"compact text is returned as it is", `{"a":[1,"b c"]}`, true, true, `{"a":[1,"b c"]}`, false},
		{"whitespace between tokens goes, inside strings stays", " {\"a\" :\n[1, \"b c\\\" d\"]}\t", true, false, `{"a":[1,"b c\" d"]}`, true},
		{"NaN and infinities become null outside strings", `[NaN,Infinity,-Infinity,"NaN"]`, false, true, `[null,null,null,"NaN"]`, true},
		{"only what is asked for", `[ NaN ]`, false, true, `[ null ]`, true},
		{"an unterminated string stops the rewrite", `[ "a`, true, true, `[ "a`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := RewriteJSON(tt.in, tt.compact, tt.python)
			if got != tt.want || changed != tt.changed {
				t.Fatalf("got %q %v, want %q %v", got, changed, tt.want, tt.changed)
			}
			var want bytes.Buffer
			if tt.compact && tt.changed && (json.Compact(&want, []byte(tt.in)) != nil || got != want.String()) {
				t.Fatalf("%q differs from encoding/json's compaction %q", got, want.String())
			}
		})
	}
}

func TestEachMemberTellsCompactTextFromTextWithWhitespaceBetweenTokens(t *testing.T) {
	tests := []struct {
		in      string
		compact bool
	}{
		{`{"a":1}`, true},
		{`{}`, true},
		{`{"a":"x y\n","b":[1,{"c":"\" "}]}`, true},
		{`{"a": 1}`, false},
		{` {"a":1}`, false},
		{`{"a":1} `, false},
		{"{\n\"a\":1}", false},
		{`{"a" :1}`, false},
		{`{"a":1 ,"b":2}`, false},
		{`{"a":[1, 2]}`, false},
		{`{"a":[ ]}`, false},
		{`{"a":{ }}`, false},
		{"{\"a\":{\"b\":[[1],[2]\t]}}", false},
	}
	for _, tt := range tests {
		compact, err := scanMembers(tt.in, func(string, string) error { return nil })
		if err != nil || compact != tt.compact {
			t.Errorf("scanMembers(%q): compact %v, %v; want %v", tt.in, compact, err, tt.compact)
		}
	}
}

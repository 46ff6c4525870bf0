package sampletable

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// FuzzIndexAgreesWithTheScanner: the index accepts exactly what the
// scanner accepts (which is what encoding/json accepts), tells compact
// text as the scanner does, holds every string and container where the
// scanner finds it, and its walks give an object's members and an
// array's elements as the scanner's do.
func FuzzIndexAgreesWithTheScanner(f *testing.F) { fuzzCases(f, indexCases(), checkIndex) }

func TestTheIndexAgreesWithTheScannerOnTextsAcrossBlocks(t *testing.T) {
	atEveryOffset(t, indexCases(), func(s string, n int) []string {
		return []string{strings.Repeat(" ", n) + s, `{"p":"` + strings.Repeat("x", n) + `","v":` + s + `}`, `[` + strings.Repeat("1,", n) + s + `]`}
	}, checkIndex)
}

// fuzzCases fuzzes check from cases.
func fuzzCases(f *testing.F, cases []string, check func(testing.TB, string)) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

// atEveryOffset checks every case, and every text wrap makes of it after
// n bytes, for n from 1 to 69: each of its strings, escapes and numbers
// lies across a block's edge somewhere.
func atEveryOffset(t *testing.T, cases []string, wrap func(s string, n int) []string, check func(testing.TB, string)) {
	for _, s := range cases {
		check(t, s)
		for n := 1; n < 70; n++ {
			for _, w := range wrap(s, n) {
				check(t, w)
			}
		}
	}
}

func indexCases() []string {
	return []string{
		`{"tag":"rollout","reward":1,"trajectory":[{"messages":[{"role":"user","content":"2+2?\n\"four\""}]}]}`,
		`{}`, `[]`, `{ }`, `[ ]`, ` [1, -0.5e+3, "a\"b", true, false, null, {"k":[{}]}] `, `"\\"`, `"\\\""`, `"a\\\\"`,
		`{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `1e`, `"\u12"`, `"\u12g4"`, `"\u1234"`, `"\x"`, "\"\x01\"", "\"a\tb\"", `{"a" 1}`, `{1:2}`,
		`[1,-2,0.5,-0.25e-3,1E+9,0]`, `[1,01]`, `[1,-]`, `[1,2,]`, `[1,,2]`, `[1,2 ,3]`, `[1,[2]]`, `[-1,"a"]`, `[0,-0,1.]`, `[1e5,2e]`, `[3,4`, `[5,`,
		`"\ud800"`, "\"\xff\"", "\"\x1f\"", "\"\x7f\x20\"", `{"adv\u0061ntage":1,"b":2}`, `tru`, `nul`, `null`, `true`, `false`, ` [[], {}] `, `[1 2]`, `{"a":1}x`,
		`{"a":1}{}`, `{"a":"b"`, `{"a":"b\"}`, `{"a":[1,2,3],"b":{"c":"d"},"e":-1.5e-7,"f":"\\\\\""}`, `[1,2,3]x`, `[1,2,3x]`, `[true1]`, `[1"a"]`,
		`["a"1]`, `["a":1]`, `{"a":1:2}`, `{"a",1}`, `[}`, `{]`, `[[[[]]]]`, `{"a":{"b":{"c":[]}}}`, `\"a"`, `[\"a"]`, `["a"\]`, `{"a"\:1}`,
		"[1,\n2]", "{\"a\"\t:\r\n1}", `[1,-]`, `[-1,-0.0,-0e1]`, `["\/\b\f\n\r\t"]`, `[1.5,`, "[1,2\x00]", "[\x80]", "{\"a\":\"\xc3\xa9\"}",
	}
}

func checkIndex(t testing.TB, s string) {
	t.Helper()
	var ix jsonIndex
	compact, ascii, ok := ix.build(s)
	if want := validJSON(s); ok != want {
		t.Fatalf("the index of %q: ok %v, the scanner says %v", s, ok, want)
	}
	if want := !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 }); ascii != want && ok {
		t.Fatalf("the index of %q: ascii %v, want %v", s, ascii, want)
	}
	if !ok {
		return
	}
	if firstNonSpace(s) == '{' {
		var keys, values []string
		wantCompact, _ := scanMembers(s, func(k, v string) error {
			keys, values = append(keys, k), append(values, v)
			return nil
		})
		if compact != wantCompact {
			t.Fatalf("the index of %q: compact %v, the scanner says %v", s, compact, wantCompact)
		}
		var gotKeys, gotValues []string
		_ = ix.members(0, func(k string, v value) error {
			gotKeys, gotValues = append(gotKeys, k), append(gotValues, v.raw)
			return nil
		})
		if strings.Join(gotKeys, "\x00") != strings.Join(keys, "\x00") || strings.Join(gotValues, "\x00") != strings.Join(values, "\x00") {
			t.Fatalf("the members of %q: %q %q, the scanner's %q %q", s, gotKeys, gotValues, keys, values)
		}
	}
	// Every entry is a string or container that the scanner ends where
	// the entry does, and every walk gives what scanning gives.
	for at, e := range ix.entries {
		end, ok := scanValue(s, int(e.start), 1)
		if !ok || uint32(end) != e.end {
			t.Fatalf("entry %d of %q: %d to %d, the scanner ends it at %d (%v)", at, s, e.start, e.end, end, ok)
		}
		v := ix.indexed(uint32(at))
		var got, want []string
		switch s[e.start] {
		case '{':
			_ = ix.members(uint32(at), func(k string, v value) error { got = append(got, k, v.raw); return nil })
			_, _ = scanObject(s, int(e.start), 1, func(k, v string) error { want = append(want, k, v); return nil })
		case '[':
			_ = ix.elements(uint32(at), func(_ int, v value) error { got = append(got, v.raw); return nil })
			_ = eachElement(v.raw, func(_, start int) (int, error) {
				end, _ := scanValue(v.raw, start, 1)
				want = append(want, v.raw[start:end])
				return end, nil
			})
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("the walk of %q: %q, the scanner's %q", v.raw, got, want)
		}
	}
}

// TestTheVectorFirstStageIsTheWordOne puts every byte at every position of
// the middle of three blocks of JSON-like text, over many texts, and runs
// the first stage with the vector scan and with Go: both give the same
// marks, carries and flags.
func TestTheVectorFirstStageIsTheWordOne(t *testing.T) {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasPCLMULQDQ {
		t.Skip("no vector scan on this CPU")
	}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "\"\"\\\\ab u0123,:[]{} \t\n\x01\x80\xff/nrtbf"
	for text := range 24 {
		block := make([]byte, 64*3)
		for i := range block {
			block[i] = alphabet[r.IntN(len(alphabet))]
		}
		for p := range 64 {
			for c := range 256 {
				b := append([]byte(nil), block...)
				b[64+p] = byte(c)
				var vecState, goState stage1State
				var vec, words [3]blockMarks
				stage1(string(b), &vecState, vec[:])
				stage1Words(string(b), &goState, words[:])
				if vec != words || vecState != goState {
					t.Fatalf("text %d, byte %#x at %d: vector %+v %+v, Go %+v %+v", text, c, p, vec, vecState, words, goState)
				}
			}
		}
	}
}

// TestEscapedBytesAreThoseAfterOddRunsOfBackslashes holds escapedBy to a
// byte loop over random runs of backslashes across three blocks.
func TestEscapedBytesAreThoseAfterOddRunsOfBackslashes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var words [3]uint64
		for i := range words {
			words[i] = r.Uint64() & r.Uint64() // runs of several
		}
		var want [3]uint64
		escaping := false
		for i := range 192 {
			if escaping {
				want[i/64] |= 1 << (i % 64)
				escaping = false
			} else if words[i/64]>>(i%64)&1 == 1 {
				escaping = true
			}
		}
		var carry uint64
		for i, w := range words {
			if got := escapedBy(w, &carry); got != want[i] {
				t.Fatalf("backslashes %064b (block %d): escaped %064b, want %064b", w, i, got, want[i])
			}
		}
	}
}

func TestTheIndexWithoutTheVectorScansAgreesWithTheScanner(t *testing.T) {
	saved := cpu.X86.HasAVX2
	defer func() { cpu.X86.HasAVX2 = saved }()
	cpu.X86.HasAVX2 = false
	TestTheIndexAgreesWithTheScannerOnTextsAcrossBlocks(t)
	TestNumberRunsAgreeWithEncodingJSONAcrossBlocks(t)
	TestLongArraysOfNumbersAreIndexedAsTheScannerReadsThem(t)
}

// TestPickAgreesWithTheWalk holds the index's pick, which compares raw keys
// and reads only the value it returns, to picking through the walk of
// every member: the last of duplicates, escaped keys, values of each kind.
func TestPickAgreesWithTheWalk(t *testing.T) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":1,"a":"two"}`, `{"adv\u0061ntage":0.5,"b":[1,{"a":2}],"a":{"x":"y"}}`,
		`{"b":"a","c":{"a":1},"d":[{"a":2}],"a":null}`, `{ "a" : [ ] , "b" : true }`, `{"ab":1,"a\\b":2,"a\"":3}`,
		`{"a":"\u0061","x":-1.5e3,"a":false}`, `{"\u0061b":1,"a\u0062c":2,"abx":3}`, `{"abc":1,"ab\n":2}`,
	} {
		var ix jsonIndex
		if _, _, ok := ix.build(s); !ok {
			t.Fatalf("%s is not JSON", s)
		}
		doc := optValue{value{raw: s, ix: &ix}, true}
		walked := optValue{value{raw: s}, true} // no index: the walk of every member
		for _, key := range []string{"a", "b", "x", "advantage", "ab", "abc", "zz"} {
			got, want := doc.pick(key), walked.pick(key)
			if got.ok != want.ok || got.raw != want.raw {
				t.Errorf("%s: pick(%q) = %q %v, the walk gives %q %v", s, key, got.raw, got.ok, want.raw, want.ok)
			}
		}
	}
}

// FuzzPickedAgreesWithTheWalk holds forPicked on indexed text, which reads
// each element's picked members from the index (pickInto), to forPicked on
// the same text without an index, which walks every member.
func FuzzPickedAgreesWithTheWalk(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{}]`, `[{"parent":0,"message":{"role":"user"}},{"parent":null},1,{"a":[1,{"parent":2}],"parent":3}]`,
		`[{"parent":"x","p\u0061rent":1,"message":"m"},{"message":null,"message":[]}]`, ` [ { "parent" : 1 } , "s" ] `, `{"parent":1}`,
	} {
		f.Add(s)
	}
	keys := []string{"parent", "message", "a"}
	f.Fuzz(func(t *testing.T, s string) {
		var ix jsonIndex
		if _, _, ok := ix.build(s); !ok || len(ix.entries) == 0 || s[ix.entries[0].start] != '[' && s[ix.entries[0].start] != '{' {
			return
		}
		raw := s[ix.entries[0].start:ix.entries[0].end]
		walk := func(o optValue) string {
			var sb strings.Builder
			picked := make([]optValue, len(keys))
			isList, err := o.forPicked(keys, picked, func(i int) error {
				for _, p := range picked {
					fmt.Fprintf(&sb, "%d %v %q;", i, p.ok, p.raw)
				}
				return nil
			}, func(i int, v value) error {
				fmt.Fprintf(&sb, "%d not a map %q;", i, v.raw)
				return nil
			})
			fmt.Fprintf(&sb, "%v %v", isList, err)
			return sb.String()
		}
		got, want := walk(optValue{value{raw: raw, ix: &ix}, true}), walk(optValue{value{raw: raw}, true})
		if got != want {
			t.Fatalf("%s: picked from the index\n%s\nfrom the walk\n%s", s, got, want)
		}
	})
}

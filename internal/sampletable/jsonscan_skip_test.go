package sampletable

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// skipCases are values whose ends hide behind what skipValue passes over
// unchecked: brackets and escaped quotes in strings, the bytes its bracket
// test also stops at (Y, _, y, DEL), whitespace, nesting, and arrays long
// enough for whole eight-byte words.
func skipCases() []string {
	return []string{
		`{"a":"]}","b":[1,2,{"c":"[\"{"}],"d":-0.5e+3}`,
		` [ 1 , "Y_y\u007f" , true , false , null , [ ] , { } ] `,
		`[151000,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20]`,
		`[-0.12345678901234567,-1.5e-07,true,false,null,"\\",""]`,
		`{"YY":{"__":{"yy":[["Yes"],{"_":"\u005d"}]}},"z":"}"}`,
		`"a \"quoted\" ] word"`, `12345678901234567890`, `-0`, `true`, `null`,
		"{\"x\":\"\x7f\x7fY\",\"k\":[\n1,\n2\n]\r\n}",
	}
}

func TestSkipEndsEveryValueWhereValueDoes(t *testing.T) {
	for _, s := range skipCases() {
		checkSkip(t, s)
	}
}

// checkSkip holds skipValue to scanValue at every value s holds,
// walkMembers to scanObject at every object, and both to staying within
// the text when it is not JSON.
func checkSkip(t *testing.T, s string) {
	t.Helper()
	if !json.Valid([]byte(s)) {
		for i := range s {
			if end := skipValue(s, i); end < i || end > len(s) {
				t.Fatalf("skipValue(%q, %d) = %d, outside the text", s, i, end)
			}
			if s[i] == '{' {
				if end, _ := walkMembers(s, i, func(k, v string) error { return nil }); end < i || end > len(s) {
					t.Fatalf("walkMembers(%q, %d) = %d, outside the text", s, i, end)
				}
			}
		}
		return
	}
	i := skipSpace(s, 0)
	end, _ := scanValue(s, i, 0)
	for _, v := range values(s[i:end]) {
		at := int(uintptr(unsafe.Pointer(unsafe.StringData(v))) - uintptr(unsafe.Pointer(unsafe.StringData(s))))
		if got := skipValue(s, at); got != at+len(v) {
			t.Fatalf("skipValue(%q, %d) = %d, scanValue ends it at %d", s, at, got, at+len(v))
		}
		if v[0] != '{' {
			continue
		}
		var want, got []string
		wantEnd, _ := scanObject(s, at, 0, func(k, v string) error { want = append(want, k, v); return nil })
		gotEnd, err := walkMembers(s, at, func(k, v string) error { got = append(got, k, v); return nil })
		if err != nil || gotEnd != wantEnd || strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("walkMembers(%q, %d) = %q, %d, %v; scanObject gives %q, %d", s, at, got, gotEnd, err, want, wantEnd)
		}
	}
}

// values is v and every value inside it, as the validating walkers find
// them: slices of v's text.
func values(v string) []string {
	out := []string{v}
	switch v[0] {
	case '{':
		_, _ = scanObject(v, 0, 0, func(_, mv string) error { out = append(out, values(mv)...); return nil })
	case '[':
		_ = eachElement(v, func(_, start int) (int, error) {
			end, _ := scanValue(v, start, 1)
			out = append(out, values(v[start:end])...)
			return end, nil
		})
	}
	return out
}

func FuzzSkipAgreesWithValue(f *testing.F) {
	for _, s := range skipCases() {
		f.Add(s)
	}
	f.Add(`[1,]`)
	f.Add(`{"a":"`)
	f.Fuzz(checkSkip)
}

// TestTheVectorScansStopWhereTheWordLoopsDo puts every byte each scan
// stops at, and plain bytes beside them, at every position of texts up to
// four vector blocks and a bit, and runs each scan with the vector scan
// and without it: both find the first stop.
func TestTheVectorScansStopWhereTheWordLoopsDo(t *testing.T) {
	scans := []struct {
		name  string
		index func(string) int
		stops string
	}{
		{"indexBracketOrQuote", indexBracketOrQuote, "\"[]{}Y_y\x7f"},
		{"indexQuoteOrSpace", indexQuoteOrSpace, "\" \t\n\r\x00\x1f"},
	}
	plains := "0123456789-.,:eEtrufalsn\x80\xff!#"
	filler := strings.Repeat("12345,-0.5e+3,true,false,null:", 6)
	saved := cpu.X86.HasAVX2
	defer func() { cpu.X86.HasAVX2 = saved }()
	for _, scan := range scans {
		for _, vector := range []bool{saved, false} {
			cpu.X86.HasAVX2 = vector
			for n := 0; n <= 140; n++ {
				if got := scan.index(filler[:n]); got != n {
					t.Fatalf("%s (vector %v) of %d plain bytes = %d, want %d", scan.name, vector, n, got, n)
				}
				for p := 0; p < n; p++ {
					for _, c := range []byte(scan.stops + plains) {
						b := []byte(filler[:n])
						b[p] = c
						want := n
						if strings.IndexByte(scan.stops, c) >= 0 {
							want = p
						}
						// A NUL may stop the bracket scan early, which its
						// caller passes over.
						if got := scan.index(string(b)); got != want && (c != 0 || got != p) {
							t.Fatalf("%s (vector %v) with %#x at %d of %d bytes = %d, want %d", scan.name, vector, c, p, n, got, want)
						}
					}
				}
			}
		}
	}
}

package pjson

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// nested is a map whose keys are not in byte order, holding every type.
func nested() pcommon.Value {
	v := pcommon.NewValueMap()
	m := v.Map()
	m.PutStr("z", "<é>")
	l := m.PutEmptySlice("b")
	l.AppendEmpty().SetInt(-3)
	l.AppendEmpty().SetDouble(0.5)
	l.AppendEmpty().SetBool(false)
	l.AppendEmpty()
	inner := l.AppendEmpty().SetEmptyMap()
	inner.PutInt("y", 1)
	inner.PutInt("x", 2)
	m.PutEmptyBytes("a").FromRaw([]byte{0xff, 0x00})
	return v
}

func TestWriteFollowsThePackageRules(t *testing.T) {
	tests := []struct {
		name  string
		value func() pcommon.Value
		want  string
	}{
		{"a map keeps its stored key order", nested,
			`{"z":"<é>","b":[-3,0.5,false,null,{"y":1,"x":2}],"a":"/wA="}`},
		{"NaN is null", func() pcommon.Value { return pcommon.NewValueDouble(math.NaN()) }, `null`},
		{"+Inf and -Inf inside a list are null", func() pcommon.Value {
			v := pcommon.NewValueSlice()
			v.Slice().AppendEmpty().SetDouble(math.Inf(1))
			v.Slice().AppendEmpty().SetDouble(math.Inf(-1))
			return v
		}, `[null,null]`},
		{"an empty value is null", pcommon.NewValueEmpty, `null`},
		{"an empty map and list", func() pcommon.Value {
			v := pcommon.NewValueMap()
			v.Map().PutEmptySlice("l")
			return v
		}, `{"l":[]}`},
		{"control characters, quotes and line separators are escaped; HTML and other text is kept",
			func() pcommon.Value { return pcommon.NewValueStr("a\nb\t\"q\\\" <&> é \u2028\u2029\x01\b\f\r\x7f") },
			`"a\nb\t\"q\\\" <&> é \u2028\u2029\u0001\b\f\r` + "\x7f" + `"`},
		{"invalid UTF-8 becomes U+FFFD", func() pcommon.Value { return pcommon.NewValueStr("a\xffb\xc3") }, `"a\ufffdb\ufffd"`},
		{"a long plain string crosses the eight-byte skips intact",
			func() pcommon.Value { return pcommon.NewValueStr(strings.Repeat("abcdefg", 5) + `"`) },
			`"` + strings.Repeat("abcdefg", 5) + `\""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Encode(tt.value()); got != tt.want {
				t.Fatalf("Encode = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestWriteSortedSortsEveryMapAndOnlyMaps(t *testing.T) {
	var sb Buffer
	WriteSorted(&sb, nested())
	if want := `{"a":"/wA=","b":[-3,0.5,false,null,{"x":2,"y":1}],"z":"<é>"}`; sb.String() != want {
		t.Fatalf("WriteSorted = %s, want %s", sb.String(), want)
	}
}

func TestAppendFloatFormatsAsEncodingJSONDoes(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "-0"}, {1, "1"}, {-2.5, "-2.5"}, {0.1, "0.1"},
		{1e-6, "0.000001"}, {1e-7, "1e-7"}, {123456789e-15, "1.23456789e-7"},
		{1e20, "100000000000000000000"}, {1e21, "1e+21"}, {-1.5e300, "-1.5e+300"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {math.SmallestNonzeroFloat64, "5e-324"},
		{math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"},
		// Whole numbers take the integer path below 2^53 and the float
		// path from there on; both must write what encoding/json writes.
		{-7, "-7"}, {1 << 53, "9007199254740992"}, {1<<53 - 1, "9007199254740991"},
		{-(1<<53 - 1), "-9007199254740991"}, {1 << 60, "1152921504606847000"}, {123456789012, "123456789012"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := string(AppendFloat(nil, tt.f)); got != tt.want {
				t.Fatalf("AppendFloat(%g) = %s, want %s", tt.f, got, tt.want)
			}
			if math.IsNaN(tt.f) || math.IsInf(tt.f, 0) {
				return
			}
			if std, _ := json.Marshal(tt.f); string(std) != tt.want {
				t.Fatalf("encoding/json writes %s, the table says %s", std, tt.want)
			}
		})
	}
}

func TestSizeCoversTextWithoutEscapes(t *testing.T) {
	tests := []struct {
		name  string
		value func() pcommon.Value
	}{
		{"a nested map", nested},
		{"a list of long strings", func() pcommon.Value {
			v := pcommon.NewValueSlice()
			for range 10 {
				v.Slice().AppendEmpty().SetStr(strings.Repeat("chat ", 200))
			}
			return v
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.value()
			if n, size := len(Encode(v)), Size(v); size < n {
				t.Fatalf("Size = %d, under the %d bytes written", size, n)
			}
		})
	}
}

func TestIndexSpecialFindsTheFirstByteAJSONStringMustEscape(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{
		{"", -1},
		{"plain text é, no specials at all", -1},
		{`"`, 0},
		{"0123456789abcdef\\", 16},
		{"0123456\x1f", 7},
		{"01234567\x00", 8},
		{"é\x7f\xff ok \"", 8},
	}
	for _, tt := range tests {
		if got := IndexSpecial(tt.s); got != tt.want {
			t.Errorf("IndexSpecial(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

// FuzzWriteAgreesWithEncodingJSON: for any JSON document, WriteSorted of
// its pdata value is byte for byte what encoding/json writes for the value
// (which sorts map keys) without HTML escaping, Write's text is valid JSON
// holding the same value, a string written by WriteString decodes to what
// encoding/json's does, and IndexSpecial agrees with a byte loop.
func FuzzWriteAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,-0.5e+3,"a\"b",true,false,null,{"k":[{}]}],"a":1e-7}`, `"\u2028<&>"`, `[1e21, 0.000001]`,
		"\"\xff\x01\"", `{"z":{"y":{"x":[]}}}`, `"é\ud800"`, `12345678901234567890`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkString(t, s)
		var raw any
		if json.Unmarshal([]byte(s), &raw) != nil {
			return
		}
		v := pcommon.NewValueEmpty()
		if err := v.FromRaw(raw); err != nil {
			return
		}
		var sorted Buffer
		WriteSorted(&sorted, v)
		var std bytes.Buffer
		enc := json.NewEncoder(&std)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v.AsRaw()); err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(std.String(), "\n"); sorted.String() != want {
			t.Fatalf("WriteSorted(%s) = %s, encoding/json writes %s", s, sorted.String(), want)
		}
		var back any
		if err := json.Unmarshal([]byte(Encode(v)), &back); err != nil {
			t.Fatalf("Encode(%s) = %s, not JSON: %v", s, Encode(v), err)
		}
	})
}

func checkString(t *testing.T, s string) {
	t.Helper()
	var sb Buffer
	WriteString(&sb, s)
	var got, want string
	if err := json.Unmarshal([]byte(sb.String()), &got); err != nil {
		t.Fatalf("WriteString(%q) = %s, not a JSON string: %v", s, sb.String(), err)
	}
	std, _ := json.Marshal(s)
	if err := json.Unmarshal(std, &want); err != nil || got != want {
		t.Fatalf("WriteString(%q) decodes to %q, encoding/json's to %q", s, got, want)
	}
	want0 := -1
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == '"' || s[i] == '\\' {
			want0 = i
			break
		}
	}
	if got := IndexSpecial(s); got != want0 {
		t.Fatalf("IndexSpecial(%q) = %d, want %d", s, got, want0)
	}
}

func TestWriteRepeatsWritesWhatWriteWrites(t *testing.T) {
	long := strings.Repeat("a \"quoted\" line\n\u2028", 20) + "\xff"
	other := strings.Repeat("b", len(long)) // the same length, other text
	v := pcommon.NewValueSlice()
	for _, branch := range [][]string{{long}, {long, other}, {long, other, long, "short"}} {
		msgs := v.Slice().AppendEmpty().SetEmptyMap().PutEmptySlice("messages")
		for _, s := range branch {
			msgs.AppendEmpty().SetEmptyMap().PutStr("content", s)
		}
	}
	var sb Buffer
	sb.WriteString("prefix:")
	var r Repeats
	WriteRepeats(&sb, v, &r)
	sb.WriteByte(',')
	WriteRepeats(&sb, v, &r) // every long string a repeat now
	if want := "prefix:" + Encode(v) + "," + Encode(v); sb.String() != want {
		t.Fatalf("WriteRepeats wrote\n%s\nwant\n%s", sb.String(), want)
	}
	if n := len(r.seen); n != 2 {
		t.Errorf("%d strings remembered, want the 2 distinct long ones", n)
	}
	r.Reset()
	sb = Buffer{}
	WriteRepeats(&sb, v, &r)
	if want := Encode(v); sb.String() != want {
		t.Fatalf("after Reset, WriteRepeats wrote\n%s\nwant\n%s", sb.String(), want)
	}
}

// Package pjson writes pdata values as JSON. It is the exporter's one JSON
// writer for pdata: sample table columns (sampletable) and map or list
// attribute values folded into metric keys (stepmetrics) go through it, so
// a value reads the same wherever it ends up.
//
// The rules, and why:
//
//   - NaN and ±Inf are written as null. JSON has no number for them;
//     JavaScript's JSON.stringify writes null too, so the viewer reads what
//     a JS producer would have sent, and the episode or metric holding one
//     odd value is not lost over it. (Quoting them as "NaN" would turn a
//     number into a string, which a reader cannot tell from a trainer's.)
//
//   - Numbers are formatted as encoding/json formats them: ints in decimal,
//     doubles in shortest round-trip form, with an exponent only below 1e-6
//     or from 1e21 up.
//
//   - Map keys keep their stored order (the trainer's insertion order, as
//     Python's json.dumps keeps a dict's), except in WriteSorted, for text
//     that must not depend on insertion order.
//
//   - Strings are UTF-8 as is, not HTML-escaped (the viewer is not a
//     browser page, and \u-escaping every non-ASCII character would bloat
//     non-English chats). Otherwise strings are escaped exactly as
//     encoding/json escapes them: quotes, backslashes and control
//     characters, invalid UTF-8 as U+FFFD, and U+2028 and U+2029, so the
//     text is valid JSON and valid JavaScript.
//
//   - Bytes are standard base64 strings (what encoding/json gives []byte);
//     an empty value is null.
//
// It is written by hand rather than through encoding/json because episodes
// carry megabytes of chat: going through AsRaw and reflection would copy
// every string and sort every map, where this writes each byte once into a
// builder sized up front (Size). IndexSpecial shares its eight-bytes-at-a-
// time test of plain string text with the sample table's JSON scanner
// (internal/sampletable/jsonscan.go).
//
// Finding where a string's plain text ends is most of writing a
// trajectory, so on amd64 with AVX2 WriteString finds it 32 bytes an
// instruction, in assembly (plain_amd64.s), and elsewhere eight bytes at a
// time in Go; so does IndexSpecial, what a scanner of JSON text spends its
// time in, with a scan that does not stop at UTF-8. Both stop at the same
// bytes as their Go loops: the tests check the vector scan
// against every position of every byte kind it stops at, and WriteString's
// output with it and without it. The assembly is VEX-encoded throughout:
// one legacy SSE instruction among the AVX2 ones cost a transition penalty
// that made the scan slower than the Go loop.
package pjson

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Encode is v's JSON, written into a builder sized once.
func Encode(v pcommon.Value) string {
	var sb Buffer
	if t := v.Type(); t == pcommon.ValueTypeMap || t == pcommon.ValueTypeSlice {
		sb.Grow(Size(v))
	}
	Write(&sb, v)
	return sb.String()
}

// Write writes v as JSON, map keys in their stored order.
func Write(sb *Buffer, v pcommon.Value) {
	write(sb, v, false, nil)
}

// Repeats remembers where long strings went into one builder, so that a
// string written there again is copied from its first JSON instead of
// escaped anew: a trajectory's branches each repeat the conversation
// before them, so most of a multi-turn trajectory's text is a repeat. It
// is for one builder only, which must only be appended to while it is in
// use; the zero value is ready.
type Repeats struct {
	// A trajectory has a few dozen long strings at most: a list checked by
	// length first costs less than a map's allocations.
	seen []written
}

type written struct {
	s          string
	start, end int
}

// repeatMin is the shortest string Repeats remembers: below it, escaping
// costs about what the lookup does.
const repeatMin = 128

// Reset forgets every string, keeping the list's room, so that one
// Repeats serves builder after builder without allocating.
func (r *Repeats) Reset() {
	clear(r.seen) // the strings are the caller's: do not keep them alive
	r.seen = r.seen[:0]
}

// WriteRepeats is Write, taking strings written into sb before through r
// from their first JSON.
func WriteRepeats(sb *Buffer, v pcommon.Value, r *Repeats) {
	write(sb, v, false, r)
}

func (r *Repeats) writeString(sb *Buffer, s string) {
	for _, w := range r.seen {
		if len(w.s) == len(s) && w.s == s {
			// The builder's text up to its length never changes: String
			// shares it, and the span is the same JSON as escaping s.
			sb.WriteString(sb.String()[w.start:w.end])
			return
		}
	}
	start := sb.Len()
	WriteString(sb, s)
	r.seen = append(r.seen, written{s, start, sb.Len()})
}

// WriteSorted writes v as JSON with every map's keys in byte order, so
// equal maps give equal text whatever order their keys were put in. The
// sort is stable: a map holding one key twice (pdata does not forbid it)
// keeps both, in their stored order.
func WriteSorted(sb *Buffer, v pcommon.Value) {
	write(sb, v, true, nil)
}

func write(sb *Buffer, v pcommon.Value, sorted bool, r *Repeats) {
	var scratch [32]byte
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if s := v.Str(); r != nil && len(s) >= repeatMin {
			r.writeString(sb, s)
		} else {
			WriteString(sb, s)
		}
	case pcommon.ValueTypeInt:
		sb.Write(strconv.AppendInt(scratch[:0], v.Int(), 10))
	case pcommon.ValueTypeDouble:
		sb.Write(AppendFloat(scratch[:0], v.Double()))
	case pcommon.ValueTypeBool:
		sb.WriteString(strconv.FormatBool(v.Bool()))
	case pcommon.ValueTypeMap:
		if sorted {
			writeSortedMap(sb, v.Map())
			return
		}
		sb.WriteByte('{')
		first := true
		for k, mv := range v.Map().All() {
			if !first {
				sb.WriteByte(',')
			}
			first = false
			writeMember(sb, k, mv, false, r)
		}
		sb.WriteByte('}')
	case pcommon.ValueTypeSlice:
		sb.WriteByte('[')
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			write(sb, sl.At(i), sorted, r)
		}
		sb.WriteByte(']')
	case pcommon.ValueTypeBytes:
		sb.WriteByte('"')
		sb.WriteString(base64.StdEncoding.EncodeToString(v.Bytes().AsRaw()))
		sb.WriteByte('"')
	default:
		sb.WriteString("null")
	}
}

func writeMember(sb *Buffer, k string, v pcommon.Value, sorted bool, r *Repeats) {
	WriteString(sb, k)
	sb.WriteByte(':')
	write(sb, v, sorted, r)
}

func writeSortedMap(sb *Buffer, m pcommon.Map) {
	type member struct {
		k string
		v pcommon.Value
	}
	members := make([]member, 0, m.Len())
	m.Range(func(k string, v pcommon.Value) bool {
		members = append(members, member{k, v})
		return true
	})
	slices.SortStableFunc(members, func(a, b member) int { return cmp.Compare(a.k, b.k) })
	sb.WriteByte('{')
	for i, mb := range members {
		if i > 0 {
			sb.WriteByte(',')
		}
		writeMember(sb, mb.k, mb.v, true, nil)
	}
	sb.WriteByte('}')
}

// Size estimates the length of v's JSON, so a builder can be sized once
// instead of doubling (and copying) its way through megabytes of chat.
// Escapes are not counted, they are allowed for: a sixteenth of a string's
// length covers chat text's newlines (one every few dozen bytes), where an
// exact fit would overflow by them and double the builder, copying and
// allocating the whole text again.
func Size(v pcommon.Value) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return len(v.Str()) + len(v.Str())/16 + 2
	case pcommon.ValueTypeMap:
		n := 2
		for k, mv := range v.Map().All() {
			n += len(k) + 4 + Size(mv)
		}
		return n
	case pcommon.ValueTypeSlice:
		n := 2
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			n += 1 + Size(sl.At(i))
		}
		return n
	case pcommon.ValueTypeBytes:
		return base64.StdEncoding.EncodedLen(v.Bytes().Len()) + 2
	}
	return 24
}

// AppendFloat appends f as encoding/json formats it; NaN and ±Inf as null.
func AppendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	// Rewards, flags and counts are mostly whole numbers. Below 2^53 every
	// integer is a float64, so its shortest round-tripping form is its
	// digits: strconv's integer path writes them several times faster than
	// the shortest-float search. -0 keeps its sign through the float path.
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 && (f != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(b, int64(f), 10)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 → 1e-7, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// SWAR masks: one byte value repeated in every byte of a word.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainASCII8 tells whether the eight bytes of x are all ASCII that a JSON
// string carries unescaped: no byte ≥ 0x80, < 0x20, '"' or '\\'.
func plainASCII8(x uint64) bool {
	return x&highs == 0 && plainText8(x)
}

// plainText8 tells whether none of the eight bytes of x is < 0x20, '"' or
// '\\'. (Each test is the classic "has a byte less than n" bit trick; it is
// exact for "any byte". Bytes ≥ 0x80 never trigger it.)
func plainText8(x uint64) bool {
	hasZero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	below20 := (x - ones*0x20) &^ x & highs
	return below20|hasZero(x^(ones*'"'))|hasZero(x^(ones*'\\')) == 0
}

// IndexSpecial is the index of the first byte of s that cannot stand in a
// JSON string as it is ('"', '\\' or a control character), or -1. It is
// what a scanner of JSON strings spends its time on, so it skips plain text
// eight bytes at a time, as WriteString does.
func IndexSpecial(s string) int {
	i := 0
	if len(s) >= 32 {
		// 32 bytes an instruction where the CPU can: a document's strings
		// are most of what a scanner of it reads.
		// It stops at whole blocks or at a special byte; without AVX2, at 0.
		if i = specialPrefix(s); i < len(s) && special(s[i]) {
			return i
		}
	}
	for i+8 <= len(s) && plainText8(load8(s, i)) {
		i += 8
	}
	for ; i < len(s); i++ {
		if special(s[i]) {
			return i
		}
	}
	return -1
}

// special tells a byte a JSON string cannot carry as it is.
func special(c byte) bool { return c < 0x20 || c == '"' || c == '\\' }

// load8 reads s[i:i+8] as a little-endian word.
func load8(s string, i int) uint64 {
	return binary.LittleEndian.Uint64([]byte(s[i : i+8]))
}

// WriteString writes s as a JSON string (see the package rules).
func WriteString(sb *Buffer, s string) {
	sb.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		// Chat text is mostly plain ASCII: skip it 32 bytes at a time
		// where the CPU can, then eight at a time.
		if len(s)-i >= 32 {
			i += plainPrefix(s[i:])
		}
		for i+8 <= len(s) && plainASCII8(load8(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			sb.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				sb.WriteByte('\\')
				sb.WriteByte(c)
			case '\n':
				sb.WriteString(`\n`)
			case '\r':
				sb.WriteString(`\r`)
			case '\t':
				sb.WriteString(`\t`)
			case '\b':
				sb.WriteString(`\b`)
			case '\f':
				sb.WriteString(`\f`)
			default:
				sb.WriteString(`\u00`)
				sb.WriteByte(hexDigits[c>>4])
				sb.WriteByte(hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			sb.WriteString(s[start:i])
			sb.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			sb.WriteString(s[start:i])
			sb.WriteString(`\u202`)
			sb.WriteByte(hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	sb.WriteString(s[start:])
	sb.WriteByte('"')
}

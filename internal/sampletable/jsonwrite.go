package sampletable

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// writeJSON writes v as JSON: a map as an object in its stored key order
// (the order the trainer inserted them, as Python's json.dumps keeps a
// dict's), a list as an array, a string as a JSON string, bytes as a base64
// string (what JSON gives bytes), an empty value as null. JSON has no NaN
// or ±Inf: they are written as null, as JavaScript's JSON.stringify does,
// rather than rejecting a whole episode over one metric.
func writeJSON(sb *strings.Builder, v pcommon.Value) {
	var scratch [32]byte
	switch v.Type() {
	case pcommon.ValueTypeStr:
		writeString(sb, v.Str())
	case pcommon.ValueTypeInt:
		sb.Write(strconv.AppendInt(scratch[:0], v.Int(), 10))
	case pcommon.ValueTypeDouble:
		sb.Write(appendFloat(scratch[:0], v.Double()))
	case pcommon.ValueTypeBool:
		sb.WriteString(strconv.FormatBool(v.Bool()))
	case pcommon.ValueTypeMap:
		sb.WriteByte('{')
		first := true
		v.Map().Range(func(k string, mv pcommon.Value) bool {
			if !first {
				sb.WriteByte(',')
			}
			first = false
			writeString(sb, k)
			sb.WriteByte(':')
			writeJSON(sb, mv)
			return true
		})
		sb.WriteByte('}')
	case pcommon.ValueTypeSlice:
		sb.WriteByte('[')
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			writeJSON(sb, sl.At(i))
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

// jsonSize estimates the length of v's JSON, so a builder can be sized once
// instead of doubling (and copying) its way through megabytes of chat.
// Escapes are not counted: chat text has few.
func jsonSize(v pcommon.Value) int {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return len(v.Str()) + 2
	case pcommon.ValueTypeMap:
		n := 2
		v.Map().Range(func(k string, mv pcommon.Value) bool {
			n += len(k) + 4 + jsonSize(mv)
			return true
		})
		return n
	case pcommon.ValueTypeSlice:
		n := 2
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			n += 1 + jsonSize(sl.At(i))
		}
		return n
	case pcommon.ValueTypeBytes:
		return base64.StdEncoding.EncodedLen(v.Bytes().Len()) + 2
	}
	return 24
}

// appendFloat formats f as encoding/json does (shortest round trip, exponent
// only for very small or large magnitudes); non-finite values become null.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
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
// '\\': the bytes a JSON string's scanner must look at. (Each test is the
// classic "has a byte less than n" bit trick; it is exact for "any byte".
// Bytes ≥ 0x80 never trigger it.)
func plainText8(x uint64) bool {
	hasZero := func(v uint64) uint64 { return (v - ones) &^ v & highs }
	below20 := (x - ones*0x20) &^ x & highs
	return below20|hasZero(x^(ones*'"'))|hasZero(x^(ones*'\\')) == 0
}

// load8 reads s[i:i+8] as a little-endian word.
func load8(s string, i int) uint64 {
	return binary.LittleEndian.Uint64([]byte(s[i : i+8]))
}

// writeString writes s as a JSON string. Text other than quotes, backslashes
// and control characters goes out as UTF-8 unchanged (no HTML escaping: the
// viewer is not a browser page, and \u-escaping every non-ASCII character
// would bloat non-English chats); invalid UTF-8 becomes U+FFFD, and U+2028
// and U+2029 are escaped, as encoding/json does, so the text stays valid
// JSON and valid JavaScript.
func writeString(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		// Chat text is mostly plain ASCII: skip it eight bytes at a time.
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

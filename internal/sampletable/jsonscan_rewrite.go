package sampletable

import (
	"encoding/binary"
	"math/bits"
	"strings"
)

// RewriteJSON rewrites JSON text between its string literals: compact
// drops the whitespace, python turns NaN, Infinity and -Infinity (what
// Python's json.dumps writes for non-finite floats) into null. It returns
// s itself, uncopied, when nothing changes, and changed false then or when
// a string literal does not end. Only compact text that was valid JSON
// stays valid: whitespace also separates tokens in text that is not.
func RewriteJSON(s string, compact, python bool) (out string, changed bool) {
	var sb strings.Builder
	start := 0 // s[start:i] is yet to be copied
	replace := func(i, n int, with string) {
		if !changed {
			sb.Grow(len(s))
			changed = true
		}
		sb.WriteString(s[start:i])
		sb.WriteString(with)
		start = i + n
	}
	for i := 0; i < len(s); {
		if !python {
			// Between strings, compact text is numbers, literals and
			// punctuation: passed over eight bytes a step up to the next
			// quote or whitespace (or control byte, which ends no skip
			// wrongly: the byte loop below looks at it).
			i += indexQuoteOrSpace(s[i:])
			if i >= len(s) {
				break
			}
		}
		c := s[i]
		switch {
		case c == '"':
			end, ok := scanString(s, i)
			if !ok {
				return s, false
			}
			i = end
			continue
		case compact && isSpace(c):
			replace(i, 1, "")
		case python && c == 'N' && strings.HasPrefix(s[i:], "NaN"):
			replace(i, len("NaN"), "null")
		case python && c == 'I' && strings.HasPrefix(s[i:], "Infinity"):
			replace(i, len("Infinity"), "null")
		case python && c == '-' && strings.HasPrefix(s[i:], "-Infinity"):
			replace(i, len("-Infinity"), "null")
		}
		if start > i {
			i = start
		} else {
			i++
		}
	}
	if !changed {
		return s, false
	}
	sb.WriteString(s[start:])
	return sb.String(), true
}

// indexQuoteOrSpace is the index of the first '"' or byte ≤ ' ' of s (JSON
// whitespace is ' ', '\t', '\n' and '\r'), or len(s): 32 bytes an
// instruction where the CPU can, else eight a step.
func indexQuoteOrSpace(s string) int {
	i := stopPrefix(s, 0, '"', '"', ' ')
	if i < len(s) && (s[i] <= ' ' || s[i] == '"') {
		return i
	}
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		if m := (x-ones*0x21)&^x&highs | zeroBytes(x^ones*'"'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '"' {
			return i
		}
	}
	return i
}

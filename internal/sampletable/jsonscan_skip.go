package sampletable

import (
	"encoding/binary"
	"math/bits"
	"strings"
)

// Text the scanner has accepted once need not be checked again. A native
// document is read level by level, after its body was scanned whole: its
// traces, then each trace's nodes, then each node's members, and token-id
// and logprob arrays are most of such a document's bytes. Checking every
// number of those arrays again at every level cost more than all the rest
// of the mapping; skipValue finds where a value ends by its brackets and
// quotes alone, eight bytes a step between them.

// skipValue returns the index just after the JSON value that starts at s[i]
// (whitespace before it not allowed), for text that scanValue accepted: it
// checks nothing. On other text its answer lies in [i, len(s)] and means
// nothing.
func skipValue(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	switch s[i] {
	case '"':
		return stringEnd(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			// A chat's strings are a byte apart (`":"`, `","`): that byte
			// is looked at here, the search called only past it.
			if !bracketOrQuote(s[j]) {
				if j+1 < len(s) && bracketOrQuote(s[j+1]) {
					j++
				} else if j += indexBracketOrQuote(s[j:]); j >= len(s) {
					break
				}
			}
			switch s[j] {
			case '"':
				j = stringEnd(s, j) - 1 // the end is past j, so the walk moves on
			case '[', '{':
				depth++
			case ']', '}':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	j := i
	for j < len(s) && !endsScalar(s[j]) {
		j++
	}
	return j
}

// stringEnd is the index just after the string literal at s[i], for text
// scanValue accepted: its first quote that no backslash escapes. Checking a
// string stops at each escape, and a chat's text has one (\n) every line
// or so; a walk of checked text looks for quotes alone. On other text its
// answer lies in (i, len(s)].
func stringEnd(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		k := strings.IndexByte(s[j:], '"')
		if k < 0 {
			break
		}
		j += k
		// A quote ends the string unless an odd run of backslashes ends
		// just before it.
		b := j - 1
		for b > i && s[b] == '\\' {
			b--
		}
		if (j-b)%2 == 1 {
			return j + 1
		}
	}
	return len(s)
}

// bracketOrQuote tells '"', '[', ']', '{' and '}' (and 'Y', '_', 'y' and
// DEL, which share c|0x26 == 0x7f and which skipValue passes over).
func bracketOrQuote(c byte) bool { return c == '"' || c|0x26 == 0x7f }

// endsScalar tells a byte that can follow a number or literal.
func endsScalar(c byte) bool { return c == ',' || c == ']' || c == '}' || isSpace(c) }

// walkMembers is scanObject for text scanValue accepted: it calls fn with
// each member's raw key and value text of the object at s[i] ('{') and
// returns the index just after it, checking nothing (skipValue). Its only
// errors are fn's. On other text it stays within s and means nothing.
func walkMembers(s string, i int, fn func(key, value string) error) (int, error) {
	i = skipSpace(s, min(i+1, len(s)))
	if i < len(s) && s[i] == '}' {
		return i + 1, nil
	}
	for i < len(s) {
		k1 := stringEnd(s, i)
		v0 := skipSpace(s, min(skipSpace(s, k1)+1, len(s))) // past the colon
		v1 := skipValue(s, v0)
		if err := fn(s[i:k1], s[v0:v1]); err != nil {
			return v1, err
		}
		if i = skipSpace(s, v1); i >= len(s) || s[i] == '}' {
			return min(i+1, len(s)), nil
		}
		i = skipSpace(s, i+1) // past the comma
	}
	return len(s), nil
}

// SWAR masks: one byte value repeated in every byte of a word.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// indexBracketOrQuote is the index of the first '"', '[', ']', '{' or '}'
// of s, or len(s); it may stop early at 'Y', '_', 'y', DEL or NUL, which
// the caller passes over. The four brackets are the bytes c with c|0x26 ==
// 0x7f (with those four others): 32 bytes an instruction where the CPU
// can, else eight a step with two zero-byte tests, whose lowest flag is
// always a true one.
func indexBracketOrQuote(s string) int {
	// Between a chat's strings the gap is a byte or two (`":"`, `","`,
	// `"},{"`): one word is looked at before the vector scan, whose setup
	// cost more than such a gap.
	i := 0
	if len(s) >= 8 {
		x := binary.LittleEndian.Uint64([]byte(s[:8]))
		if m := zeroBytes((x|ones*0x26)^ones*0x7f) | zeroBytes(x^ones*'"'); m != 0 {
			return bits.TrailingZeros64(m) / 8
		}
		i = 8
	}
	i += stopPrefix(s[i:], 0x26, 0x7f, '"', 0)
	if i < len(s) && bracketOrQuote(s[i]) {
		return i
	}
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		if m := zeroBytes((x|ones*0x26)^ones*0x7f) | zeroBytes(x^ones*'"'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(s); i++ {
		if bracketOrQuote(s[i]) {
			return i
		}
	}
	return i
}

// zeroBytes flags the zero bytes of v in their high bits; a flag above a
// zero byte may be false, the lowest never is.
func zeroBytes(v uint64) uint64 { return (v - ones) &^ v & highs }

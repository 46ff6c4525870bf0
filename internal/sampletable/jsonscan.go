package sampletable

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"strings"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

// maxDepth bounds nesting as encoding/json does, so a hostile record cannot
// exhaust the stack.
const maxDepth = 10000

// syntaxError says where text stops being JSON.
type syntaxError struct{ Offset int }

func (e *syntaxError) Error() string { return fmt.Sprintf("invalid JSON at offset %d", e.Offset) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// firstNonSpace is the first character of s that is not JSON whitespace,
// or 0.
func firstNonSpace(s string) byte {
	if i := skipSpace(s, 0); i < len(s) {
		return s[i]
	}
	return 0
}

// validJSON tells whether s is exactly one JSON value (surrounding whitespace
// allowed), like json.Valid.
func validJSON(s string) bool {
	end, ok := scanValue(s, skipSpace(s, 0), 0)
	return ok && skipSpace(s, end) == len(s)
}

// holdsContainer tells whether s holds exactly one JSON object or array.
func holdsContainer(s string) bool {
	c := firstNonSpace(s)
	return (c == '{' || c == '[') && validJSON(s)
}

// scanValue scans the JSON value starting at s[i] and returns the index just
// after it, false if no valid value starts there. depth is the value's
// nesting (0 at the top); values nested deeper than encoding/json takes
// are refused.
func scanValue(s string, i, depth int) (int, bool) {
	var sc scanner
	return sc.value(s, i, depth)
}

// scanner is the checking scan. It notes whether the text it accepted had
// whitespace outside its strings, which only it passes over: a native
// document must be compact, and a second pass over the whole text to find
// out was a fifth of mapping one at 2 KB. A container keeps its note in a
// local and hands it on when it closes: a store through sc at every
// element cost a compact number array 3 %.
type scanner struct{ spaced uint8 }

// skip is skipSpace, saying 1 when there was whitespace to skip.
func skip(s string, i int) (int, uint8) {
	if i < len(s) && isSpace(s[i]) {
		return skipSpace(s, i), 1
	}
	return i, 0
}

// skipNoted is skip noting whitespace in sc at once: for the top-level
// object whose members fn gets (scanMembers, scanObject), few beside the
// elements a container's loop passes.
func (sc *scanner) skipNoted(s string, i int) int {
	i, w := skip(s, i)
	sc.spaced |= w
	return i
}

func (sc *scanner) value(s string, i, depth int) (int, bool) {
	if i >= len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == '{':
		return sc.container(s, i, depth, '}')
	case c == '[':
		return sc.container(s, i, depth, ']')
	case c == '"':
		return scanString(s, i)
	case c == 't':
		return scanLiteral(s, i, "true")
	case c == 'f':
		return scanLiteral(s, i, "false")
	case c == 'n':
		return scanLiteral(s, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(s, i)
	}
	return i, false
}

// container scans an object (closing '}') or array (closing ']').
func (sc *scanner) container(s string, i, depth int, closing byte) (int, bool) {
	if depth >= maxDepth {
		return i, false
	}
	i, sp := skip(s, i+1)
	var w uint8
	if i < len(s) && s[i] == closing {
		sc.spaced |= sp
		return i + 1, true
	}
	for {
		var ok bool
		if closing == '}' {
			if i >= len(s) || s[i] != '"' {
				return i, false
			}
			if i, ok = scanString(s, i); !ok {
				return i, false
			}
			i, w = skip(s, i)
			sp |= w
			if i >= len(s) || s[i] != ':' {
				return i, false
			}
			i, w = skip(s, i+1)
			sp |= w
		}
		if i >= len(s) {
			return i, false
		}
		// Numbers and booleans straight away: token-id, mask and logprob
		// arrays are most of a native document's elements.
		switch c := s[i]; {
		case c == '-' || c-'0' <= 9:
			if closing == ']' {
				i, ok = numberRun(s, i)
			} else {
				i, ok = scanNumber(s, i)
			}
		case c == 't' && strings.HasPrefix(s[i:], "true"):
			i, ok = i+4, true
		case c == 'f' && strings.HasPrefix(s[i:], "false"):
			i, ok = i+5, true
		default:
			i, ok = sc.value(s, i, depth+1)
		}
		if !ok {
			return i, false
		}
		i, w = skip(s, i)
		sp |= w
		if i >= len(s) {
			return i, false
		}
		switch s[i] {
		case ',':
			i, w = skip(s, i+1)
			sp |= w
		case closing:
			sc.spaced |= sp
			return i + 1, true
		default:
			return i, false
		}
	}
}

func scanString(s string, i int) (int, bool) {
	for j := i + 1; j < len(s); j++ {
		k := pjson.IndexSpecial(s[j:])
		if k < 0 {
			break
		}
		j += k
		switch c := s[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			j++
			if j >= len(s) {
				return j, false
			}
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s) {
					return j, false
				}
				for k := j + 1; k <= j+4; k++ {
					if !isHex(s[k]) {
						return k, false
					}
				}
				j += 4
			default:
				return j, false
			}
		case c < 0x20:
			return j, false
		}
	}
	return len(s), false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func scanLiteral(s string, i int, lit string) (int, bool) {
	if strings.HasPrefix(s[i:], lit) {
		return i + len(lit), true
	}
	return i, false
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(s string, i int) (int, bool) { return scanNumbers(s, i, 0) }

// numberRun scans the numbers from s[i] on while each is followed by a
// comma and another number, and returns the index just after the last:
// a token-id or logprob array's elements in one loop, where a call and the
// container's checks for each cost a third of checking such an array.
// What follows the last number is the container's to check.
func numberRun(s string, i int) (int, bool) { return scanNumbers(s, i, len(s)) }

// scanNumbers scans a number, and the numbers after it while each is
// followed by a comma and another and the last ended before limit.
func scanNumbers(s string, i, limit int) (int, bool) {
	for {
		if s[i] == '-' {
			i++
		}
		switch {
		case i < len(s) && s[i] == '0':
			i++
		case i < len(s) && s[i] >= '1' && s[i] <= '9':
			i = scanDigits(s, i)
		default:
			return i, false
		}
		if i < len(s) && s[i] == '.' {
			j := scanDigits(s, i+1)
			if j == i+1 {
				return j, false
			}
			i = j
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '-') {
				i++
			}
			j := scanDigits(s, i)
			if j == i {
				return j, false
			}
			i = j
		}
		if i >= limit || i+1 >= len(s) || s[i] != ',' {
			return i, true
		}
		if c := s[i+1]; c != '-' && c-'0' > 9 {
			return i, true
		}
		i++
	}
}

// scanDigits is the index of the first byte from s[i] on that is not a
// digit, or len(s): eight bytes a step, for a logprob's seventeen digits.
func scanDigits(s string, i int) int {
	for ; i+8 <= len(s); i += 8 {
		x := binary.LittleEndian.Uint64([]byte(s[i : i+8]))
		// Bytes below '0', and bytes above '9' (0x3a + 0x46 reaches the
		// high bit, and bytes ≥ 0x80 have it): the lowest flag is exact.
		below := (x - ones*'0') &^ x & highs
		above := ((x &^ highs) + ones*0x46 | x) & highs
		if m := below | above; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for i < len(s) && s[i]-'0' <= 9 {
		i++
	}
	return i
}

// scanMembers calls fn with the raw key (quotes included) and the value
// text of every member of the JSON object s, in document order. s is one
// object, surrounding whitespace allowed; anything else is an error.
// compact tells whether the text has no whitespace outside its strings,
// so that compacting it (RewriteJSON) would leave it as it is.
func scanMembers(s string, fn func(key, value string) error) (compact bool, err error) {
	var sc scanner
	i := sc.skipNoted(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false, &syntaxError{Offset: i}
	}
	end, err := sc.object(s, i, 0, fn)
	if err != nil {
		return false, err
	}
	if err := trailing(s, end); err != nil {
		return false, err
	}
	return sc.spaced == 0 && end == len(s), nil
}

// scanObject walks the object that starts at s[i] ('{') at nesting depth,
// calling fn with each member's raw key and value text, and returns the
// index just after it.
func scanObject(s string, i, depth int, fn func(key, value string) error) (int, error) {
	var sc scanner
	return sc.object(s, i, depth, fn)
}

func (sc *scanner) object(s string, i, depth int, fn func(key, value string) error) (int, error) {
	if depth >= maxDepth {
		return i, &syntaxError{Offset: i}
	}
	i = sc.skipNoted(s, i+1)
	if i < len(s) && s[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(s) || s[i] != '"' {
			return i, &syntaxError{Offset: i}
		}
		k0 := i
		k1, ok := scanString(s, i)
		if !ok {
			return k1, &syntaxError{Offset: k1}
		}
		i = sc.skipNoted(s, k1)
		if i >= len(s) || s[i] != ':' {
			return i, &syntaxError{Offset: i}
		}
		v0 := sc.skipNoted(s, i+1)
		v1, ok := sc.value(s, v0, depth+1)
		if !ok {
			return v1, &syntaxError{Offset: v1}
		}
		if err := fn(s[k0:k1], s[v0:v1]); err != nil {
			return v1, err
		}
		i = sc.skipNoted(s, v1)
		if i >= len(s) {
			return i, &syntaxError{Offset: i}
		}
		switch s[i] {
		case ',':
			i = sc.skipNoted(s, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, &syntaxError{Offset: i}
		}
	}
}

// eachElement walks the JSON array s (one array, surrounding whitespace
// allowed). For each element it calls fn with the element's index n and its
// start in s; fn scans the element itself (so a caller that walks elements
// further reads them once) and returns the index just after it.
func eachElement(s string, fn func(n, start int) (end int, err error)) error {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '[' {
		return &syntaxError{Offset: i}
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == ']' {
		return trailing(s, i+1)
	}
	for n := 0; ; n++ {
		if i >= len(s) {
			return &syntaxError{Offset: i}
		}
		end, err := fn(n, i)
		if err != nil {
			return err
		}
		i = skipSpace(s, end)
		if i >= len(s) {
			return &syntaxError{Offset: i}
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case ']':
			return trailing(s, i+1)
		default:
			return &syntaxError{Offset: i}
		}
	}
}

func trailing(s string, i int) error {
	if i = skipSpace(s, i); i != len(s) {
		return &syntaxError{Offset: i}
	}
	return nil
}

// unquote decodes a JSON string literal (quotes included) that the scanner
// accepted. Most keys and values have no escapes and are sliced, not copied.
func unquote(lit string) string {
	inner := lit[1 : len(lit)-1]
	if strings.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var out string
	if err := json.Unmarshal([]byte(lit), &out); err != nil {
		return inner // unreachable for scanned literals; keep the text rather than lose it
	}
	return out
}

// jsonKind names the type of a JSON value's text the way pvalue.TypeName
// names pdata types (map, list, string, bool, null, double, int), for
// error messages.
func jsonKind(v string) string {
	switch c := firstNonSpace(v); {
	case c == '{':
		return "map"
	case c == '[':
		return "list"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "bool"
	case c == 'n':
		return "null"
	case strings.ContainsAny(v, ".eE"):
		return "double"
	}
	return "int"
}

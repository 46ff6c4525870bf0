package sampletable

import (
	"math"
	"math/bits"
	"strings"
	"unsafe"
)

// jsonIndex is the structural index of a JSON text, built by the text's
// one checking pass (build) and read by every walk of it after (members,
// elements in jsonindex_walk.go): each string and container of the text,
// in text order, with where it ends and, for a container, which entry
// follows its last member. A walk reads a level's keys and values from
// the index and passes over a container in one step, where skipValue
// reads every byte of it: a native document is walked level by level
// (traces, then nodes, then messages), and those walks read the whole
// document two or three times over.
//
// The pass looks at 64 bytes at a time. A vector scan sorts the block's
// bytes into classes (classify: quotes, backslashes, control characters,
// whitespace, brackets and punctuation); word arithmetic finds which
// bytes are inside strings (jsonindex_bits.go); then only the bytes that
// matter to the grammar are visited: brackets outside strings, quotes,
// and the first byte of each number or literal. A string costs its two
// quotes and the escapes in it, not a byte-by-byte scan; a compact member
// ("key":value) and the comma after it cost one turn of the loop; a run
// of numbers in an array is checked in one loop (numberRun).
//
// It accepts exactly what the scanner (jsonscan.go) accepts, which is what
// encoding/json accepts; FuzzIndexAgreesWithTheScanner holds it to that.
// It says only whether the text is JSON: the caller asks the scanner where
// text it refused goes wrong, so that a rejection names the same offset
// whichever found it.
type jsonIndex struct {
	text    string
	entries []indexEntry
	// stack holds the entries of the containers open while building, each
	// shifted left one with the low bit set for an array; kept, like
	// entries, for the next text.
	stack []uint32
}

// indexEntry is one string or container of the text: its offsets, and
// the entry after all of its own (the next one for a string).
type indexEntry struct {
	start, end, next uint32
}

// classChunk is how many blocks are classified at a time: a call of the
// vector scan per kilobyte, into memory on the stack.
const classChunk = 16

// The grammar's states between the bytes the pass visits. Colons and
// commas are not visited: the bytes between two visited ones (the gap)
// must be whitespace around the one separator the state expects, which
// in compact text is one comparison. Chat JSON is dense with them, one a
// member, and every byte visited costs a turn of the loop.
const (
	stTop     = iota // before the text's value
	stOpenObj        // after '{': a key or '}'
	stOpenArr        // after '[': a value or ']'
	stKey            // inside a key: its closing quote
	stColon          // after a key: ':', then a value
	stString         // inside a string value: its closing quote
	stNext           // after a value in a container: ',' and the next, or the close
	stDone           // after the text's value: nothing more
)

// build indexes text as exactly one JSON value, surrounding whitespace
// allowed; ok is false for anything else. compact tells whether it has no
// whitespace outside its strings, and ascii whether it has no byte ≥ 0x80.
//
// It is one loop over the blocks and, in each, over the bytes it visits,
// with its state in locals: a method call a byte visited took twice the
// time of the checking scan it replaces on chat JSON, whose tokens are
// a few bytes apart.
func (ix *jsonIndex) build(text string) (compact, ascii, ok bool) {
	ix.text = text
	s := text
	if len(s) >= math.MaxUint32 {
		return false, false, false
	}
	entries, stack := ix.entries[:0], ix.stack[:0]
	defer func() { ix.entries, ix.stack = entries, stack }()
	st, last, str, skipUntil := stTop, 0, 0, 0
	var first stage1State
	var marks [classChunk]blockMarks
	full, blocks := len(s)/64, (len(s)+63)/64
	for at := 0; at < blocks; {
		n := min(classChunk, blocks-at)
		if at+n <= full {
			stage1(s[at*64:], &first, marks[:n])
		} else {
			// The last bytes, padded with a letter: no whitespace, no
			// string, nothing an error is made of, and the bytes it would
			// visit past the text are masked out.
			stage1(s[at*64:], &first, marks[:n-1])
			var tail [64]byte
			for i := copy(tail[:], s[full*64:]); i < len(tail); i++ {
				tail[i] = 'x'
			}
			stage1(unsafe.String(&tail[0], len(tail)), &first, marks[n-1:n])
			marks[n-1].visit &= below(len(s) - full*64)
		}
		if first.bad != 0 {
			return false, false, false
		}
		for bi := range n {
			base := (at + bi) * 64
			for u := marks[bi].uesc; u != 0; u &= u - 1 {
				if !validEscape(s, base+bits.TrailingZeros64(u)) {
					return false, false, false
				}
			}
			// Inside a run of scalars checked whole, nothing is visited.
			visit := marks[bi].visit &^ below(skipUntil-base)
		visits:
			for visit != 0 {
				t := base + bits.TrailingZeros64(visit)
				visit &= visit - 1
				b := s[t]
				isKey := false
				switch st {
				case stKey, stString:
					// Nothing inside a string is visited but its closing
					// quote.
					entries[str].end = uint32(t + 1)
					last, st = t+1, afterString(st, len(stack))
					continue
				case stColon:
					if !(t == last+1 && s[last] == ':') && !separated(s, last, t, ':') {
						return false, false, false
					}
				case stNext:
					top := stack[len(stack)-1]
					if b == ']' || b == '}' {
						if (b == ']') != (top&1 == 1) || (t != last && !spaceOnly(s, last, t)) {
							return false, false, false
						}
						stack = closeContainer(entries, stack, t)
						last, st = t+1, afterValue(len(stack))
						continue
					}
					if !(t == last+1 && s[last] == ',') && !separated(s, last, t, ',') {
						return false, false, false
					}
					isKey = top&1 == 0
				case stOpenObj, stOpenArr:
					if t != last && !spaceOnly(s, last, t) {
						return false, false, false
					}
					if b == '}' && st == stOpenObj || b == ']' && st == stOpenArr {
						stack = closeContainer(entries, stack, t)
						last, st = t+1, afterValue(len(stack))
						continue
					}
					isKey = st == stOpenObj
				case stTop:
					if t != 0 && !spaceOnly(s, 0, t) {
						return false, false, false
					}
				default: // stDone: something after the text's value
					return false, false, false
				}
				// t starts a value, or a key when isKey. Each token after it
				// that follows with no whitespace and lies in this block is
				// taken in this turn too (chain), where the state switch
				// above would take a turn and a dispatch on st for it: a
				// compact member, "key":value, is one turn, and chat JSON
				// is mostly such members.
				for {
					switch {
					case isKey && b != '"':
						return false, false, false // an object's member starts with its key
					case b == '{' || b == '[':
						if len(stack) >= maxDepth {
							return false, false, false
						}
						array, next := 0, stOpenObj
						if b == '[' {
							array, next = 1, stOpenArr
						}
						stack = append(stack, uint32(len(entries))<<1|uint32(array))
						entries = append(entries, indexEntry{start: uint32(t)})
						last, st = t+1, next
						// Its first member or element, not its close,
						// which the state switch checks.
						if visit == 0 || base+bits.TrailingZeros64(visit) != last || s[last] == ']' || s[last] == '}' {
							continue visits
						}
						isKey = b == '{'
					case b == '}' || b == ']':
						return false, false, false
					case b != '"':
						end, ok := scalar(s, t, st == stOpenArr || (st == stNext && stack[len(stack)-1]&1 == 1))
						if !ok {
							return false, false, false
						}
						// The bytes the pass would visit inside a run of
						// scalars checked in one loop are passed over.
						skipUntil = end
						visit &^= below(end - base)
						last, st = end, afterValue(len(stack))
						if !chainsComma(s, st, last, base, visit) {
							continue visits
						}
						isKey = stack[len(stack)-1]&1 == 0
					default:
						// A string, a key when isKey. Nothing inside it is
						// visited, so the next byte visited is its closing
						// quote.
						str = len(entries)
						entries = append(entries, indexEntry{start: uint32(t), next: uint32(str + 1)})
						st = stString
						if isKey {
							st = stKey
						}
						if visit == 0 {
							continue visits
						}
						t = base + bits.TrailingZeros64(visit)
						visit &= visit - 1
						entries[str].end = uint32(t + 1)
						last = t + 1
						if !isKey {
							st = afterValue(len(stack))
							if !chainsComma(s, st, last, base, visit) {
								continue visits
							}
							isKey = stack[len(stack)-1]&1 == 0
							break
						}
						st = stColon
						if visit == 0 || s[last] != ':' || base+bits.TrailingZeros64(visit) != last+1 {
							continue visits
						}
						isKey = false
					}
					t = base + bits.TrailingZeros64(visit)
					visit &= visit - 1
					b = s[t]
				}
			}
		}
		at += n
		if next := skipUntil / 64; next > at {
			// A run of scalars went on past the blocks classified: the
			// first stage goes on from the block it ended in, outside any
			// string, after a byte of a number or literal or a comma.
			at = next
			first.escaped, first.inString, first.other = 0, 0, 0
			if s[at*64-1] != ',' {
				first.other = 1
			}
		}
	}
	if st != stDone || (last != len(s) && !spaceOnly(s, last, len(s))) {
		return false, false, false
	}
	return first.spaced == 0, first.high == 0, true
}

// scalar checks the number or literal that starts at s[t] and returns the
// index just after it. In an array (inArray) it goes on over each comma
// followed by another number or literal, so that an array of token ids,
// logprobs or mask flags is checked in one loop (numberRun for a run of
// numbers), not a turn of the pass's loop each. Each must be all of the
// bytes that run on from its first.
func scalar(s string, t int, inArray bool) (int, bool) {
	for {
		var end int
		ok := true
		switch c := s[t]; {
		case c == '-' || c-'0' <= 9:
			if inArray {
				end, ok = numbers(s, t)
			} else {
				end, ok = scanNumber(s, t)
			}
		case c == 't' && strings.HasPrefix(s[t:], "true"):
			end = t + 4
		case c == 'f' && strings.HasPrefix(s[t:], "false"):
			end = t + 5
		case c == 'n' && strings.HasPrefix(s[t:], "null"):
			end = t + 4
		default:
			return t, false
		}
		if !ok || end == len(s) {
			return end, ok
		}
		if !inArray || s[end] != ',' || end+1 == len(s) || !startsScalar(s[end+1]) {
			return end, endsToken(s[end])
		}
		t = end + 1
	}
}

// chainsComma tells whether, after a value that ends at last, the next
// byte visited, in this block, follows a comma just after it: the next
// member or element of compact text.
func chainsComma(s string, st, last, base int, visit uint64) bool {
	return st == stNext && visit != 0 && base+bits.TrailingZeros64(visit) == last+1 && s[last] == ','
}

// startsScalar tells a byte a number or literal may start with.
func startsScalar(c byte) bool { return c == '-' || c-'0' <= 9 || c == 't' || c == 'f' || c == 'n' }

// closeContainer ends the innermost open container at t.
func closeContainer(entries []indexEntry, stack []uint32, t int) []uint32 {
	e := stack[len(stack)-1] >> 1
	entries[e].end, entries[e].next = uint32(t+1), uint32(len(entries))
	return stack[:len(stack)-1]
}

// afterValue is the state after a value, depth containers deep.
func afterValue(depth int) int {
	if depth == 0 {
		return stDone
	}
	return stNext
}

// afterString is the state after the closing quote of a key (st stKey)
// or string value.
func afterString(st, depth int) int {
	if st == stKey {
		return stColon
	}
	return afterValue(depth)
}

// separated tells whether s[from:to] is one sep with only whitespace
// around it.
func separated(s string, from, to int, sep byte) bool {
	i := skipSpace(s, from)
	return i < to && s[i] == sep && skipSpace(s, i+1) == to
}

// spaceOnly tells whether s[from:to] is whitespace.
func spaceOnly(s string, from, to int) bool { return skipSpace(s, from) >= to }

// validEscape tells whether the byte at p, which a backslash escapes, is
// one JSON allows there.
func validEscape(s string, p int) bool {
	switch s[p] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return true
	case 'u':
		return p+4 < len(s) && isHex(s[p+1]) && isHex(s[p+2]) && isHex(s[p+3]) && isHex(s[p+4])
	}
	return false
}

// endsToken tells a byte that a number or literal may stop at: whitespace,
// punctuation or a quote (which the grammar then refuses where it is).
func endsToken(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '[', ']', '{', '}', '"':
		return true
	}
	return false
}

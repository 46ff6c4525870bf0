package sampletable

import "math/bits"

// The first stage of the index's pass (jsonindex.go): a 64-byte block is a
// word per class of byte, and strings are found in it with a few word
// operations rather than byte by byte, as simdjson's first stage finds
// them (Langdale and Lemire, "Parsing Gigabytes of JSON per Second",
// 2019). The vector scan (jsonindex_stage1_amd64.s) does all of it; the
// Go here is its reference and its stand-in.

// blockClasses are the bytes of one 64-byte block by class, a bit a byte,
// the lowest bit the block's first byte. The vector scan
// (jsonindex_stage1_amd64.s) lays them out in this order.
type blockClasses struct {
	quote, backslash uint64
	space            uint64 // ' ', '\t', '\n', '\r'
	bracket          uint64 // '{', '}', '[', ']'
	punct            uint64 // ':', ','
	ctrl             uint64 // ≤ 0x1f
	high             uint64 // ≥ 0x80
	notEscape        uint64 // not a byte a backslash may escape: '"', '\\', '/', 'b', 'f', 'n', 'r', 't', 'u'
	u                uint64 // 'u', whose escape four hex digits follow
}

// classifyWords is the classes of the 64 bytes of block, a byte at a
// time: the vector scan's reference, and its stand-in where there is none.
func classifyWords(block string, c *blockClasses) {
	*c = blockClasses{}
	for i, x := range []byte(block[:64]) {
		bit := uint64(1) << i
		switch x {
		case '"':
			c.quote |= bit
		case '\\':
			c.backslash |= bit
		case ' ', '\t', '\n', '\r':
			c.space |= bit
		case '{', '}', '[', ']':
			c.bracket |= bit
		case ':', ',':
			c.punct |= bit
		}
		if x <= 0x1f {
			c.ctrl |= bit
		}
		if x >= 0x80 {
			c.high |= bit
		}
		switch x {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			c.u |= bit
		default:
			c.notEscape |= bit
		}
	}
}

// stage1State is what the first stage carries from block to block, and
// what it gathers: whether the next block's first byte is escaped, starts
// inside a string (all ones) or inside a number or literal; whitespace
// outside strings, bytes ≥ 0x80, and errors (a control character or an
// escape JSON does not allow inside a string). The vector scan lays it out
// in this order.
type stage1State struct {
	escaped, inString, other uint64
	spaced, high, bad        uint64
}

// blockMarks is what the first stage gives the second of a block: the
// bytes to visit (brackets outside strings, quotes, the first byte of each
// number or literal) and the 'u' escapes inside strings, whose hex digits
// it did not check.
type blockMarks struct{ visit, uesc uint64 }

// stage1Block is the first stage of one block: the vector scan's
// reference, and its stand-in.
func stage1Block(c *blockClasses, st *stage1State) blockMarks {
	escaped := escapedBy(c.backslash, &st.escaped)
	quote := c.quote &^ escaped
	in := prefixXor(quote) ^ st.inString
	st.inString = uint64(int64(in) >> 63)
	st.bad |= c.ctrl & in
	esc := escaped & in
	st.bad |= esc & c.notEscape
	outside := ^in
	st.spaced |= c.space & outside
	st.high |= c.high
	other := ^(c.space | c.bracket | c.punct | c.quote) & outside
	starts := other &^ (other<<1 | st.other)
	st.other = other >> 63
	return blockMarks{visit: c.bracket&outside | quote | starts, uesc: esc & c.u}
}

// stage1Words is the first stage of len(out) blocks of s in Go.
func stage1Words(s string, st *stage1State, out []blockMarks) {
	var c blockClasses
	for i := range out {
		classifyWords(s[i*64:], &c)
		out[i] = stage1Block(&c, st)
	}
}

// evenBits are the block's even bytes.
const evenBits = 0x5555555555555555

// escapedBy gives the bytes a backslash escapes: the byte after each odd
// run of backslashes. carry is 1 when the block's first byte is escaped by
// the block before, and is set for the next block. Runs are told odd from
// even by adding their starts on odd bytes to them: the carry of each run
// flips the parity of the bytes after it.
func escapedBy(backslash uint64, carry *uint64) uint64 {
	backslash &^= *carry
	follows := backslash<<1 | *carry
	oddStarts := backslash &^ evenBits &^ follows
	evenRuns, c := bits.Add64(oddStarts, backslash, 0)
	*carry = c
	return (evenBits ^ evenRuns<<1) & follows
}

// prefixXor gives each bit the parity of the bits up to it, itself
// included: over a block's unescaped quotes, the bytes inside strings
// (each string's opening quote in, its closing quote out).
func prefixXor(x uint64) uint64 {
	x ^= x << 1
	x ^= x << 2
	x ^= x << 4
	x ^= x << 8
	x ^= x << 16
	x ^= x << 32
	return x
}

// below is the mask of a block's bytes before offset n: none for n ≤ 0,
// all for n ≥ 64.
func below(n int) uint64 {
	switch {
	case n <= 0:
		return 0
	case n >= 64:
		return ^uint64(0)
	}
	return 1<<n - 1
}

package sampletable

import (
	"math/bits"
	"unsafe"
)

// A long run of numbers (an array of token ids, logprobs or advantages,
// most of a native document's bytes when it carries them) is checked 64
// bytes at a time: each byte's class as a bit of a word (numberClasses),
// then the number grammar as a few rules on those words, where checking
// the numbers one by one cost a branch a digit run and half of mapping
// such a document. Every rule is about neighbours, but for one: a number
// has at most one fraction and one exponent, in that order. That one is
// told by adding where each digit run starts to the digits: the carry of
// each run lands on the byte after it, which must be what may follow that
// kind of run.

// numberClasses are a block's bytes that numbers are made of, a bit a
// byte. The vector scan (jsonnumbers_amd64.s) lays them out in this order.
type numberClasses struct {
	digit, zero, minus, plus, dot, exp, comma uint64
}

// classifyNumberWords is numberClasses a byte at a time: the vector scan's
// reference, and its stand-in.
func classifyNumberWords(block string, c *numberClasses) {
	*c = numberClasses{}
	for i, x := range []byte(block[:64]) {
		bit := uint64(1) << i
		switch x {
		case '0':
			c.zero |= bit
			c.digit |= bit
		case '1', '2', '3', '4', '5', '6', '7', '8', '9':
			c.digit |= bit
		case '-':
			c.minus |= bit
		case '+':
			c.plus |= bit
		case '.':
			c.dot |= bit
		case 'e', 'E':
			c.exp |= bit
		case ',':
			c.comma |= bit
		}
	}
}

// vectorRunAfter is how far into a run of numbers they are checked one by
// one before the rest goes 64 bytes at a time: an array of a few numbers
// is over before the words would pay for themselves.
const vectorRunAfter = 32

// numbers checks the run of numbers that starts at s[t] in an array, as
// numberRun does: one by one to vectorRunAfter, 64 bytes at a time from
// there (numbersFrom).
func numbers(s string, t int) (int, bool) {
	end, ok := scanNumbers(s, t, t+vectorRunAfter)
	if !ok || end+1 >= len(s) || s[end] != ',' || (s[end+1] != '-' && s[end+1]-'0' > 9) {
		return end, ok
	}
	return numbersFrom(s, end+1)
}

// numberCarries are the bits that cross from a block into the next: the
// last byte's classes for the rules about neighbours, and the carries of
// the three additions that find where digit runs end.
type numberCarries struct {
	digit, exp, comma, dot, sign, startMinus, intZero uint64
	intRun, fracRun, expRun                           uint64
}

// numbersFrom checks the run of numbers that starts at s[t] in an array,
// each followed by a comma and another, 64 bytes at a time, and returns
// the index just after its last number, as numberRun does: the run is the
// bytes that numbers and commas are made of, less a comma that ends it.
// ok is false when a number of it is not one JSON allows, which in an
// array is never valid JSON. s[t] is '-' or a digit.
func numbersFrom(s string, t int) (end int, ok bool) {
	var cs [numberChunk]numberClasses
	var carry numberCarries
	// The first block is classified alone: most runs in a small document
	// (a node's dozen token ids) end in it, and classifying numberChunk
	// blocks for them cost more than checking the run.
	chunk := 1
	for base := t &^ 63; ; chunk = numberChunk {
		k := min(chunk, (len(s)-base)/64)
		if k > 0 {
			numberBlocks(s[base:], cs[:k])
		} else {
			// Past the text, spaces: no byte of a number.
			var tail [64]byte
			for i := copy(tail[:], s[base:]); i < len(tail); i++ {
				tail[i] = ' '
			}
			numberBlocks(unsafe.String(&tail[0], len(tail)), cs[:1])
			k = 1
		}
		for i := range k {
			c := &cs[i]
			run := ^uint64(0)
			var start uint64
			if base <= t {
				run, start = ^below(t-base), 1<<(t-base)
			}
			var stop uint64 // the first byte past the run, if in this block
			if past := ^(c.digit | c.minus | c.plus | c.dot | c.exp | c.comma) & run; past != 0 {
				stop = past & -past
				run &= stop - 1
			}
			ok := false
			if start|stop == 0 && c.minus|c.plus|c.dot|c.exp == 0 && carry.exp|carry.dot|carry.sign|carry.startMinus == 0 {
				ok = integerBlock(c, &carry)
			} else {
				ok = numberBlock(c, &carry, run, start, stop)
			}
			if !ok {
				return 0, false
			}
			if stop != 0 {
				end = base + bits.TrailingZeros64(stop)
				if s[end-1] == ',' {
					end--
				}
				return end, true
			}
			base += 64
		}
	}
}

// numberChunk is how many blocks are classified at a time: a run is
// seldom much shorter, and a call of the vector scan a block cost a third
// of checking one.
const numberChunk = 8

// numberBlock applies the number grammar to one block's bytes of a run
// (run; start the run's first byte, stop the byte after its last, when
// they lie in this block) and carries what the next block needs.
func numberBlock(c *numberClasses, cr *numberCarries, run, start, stop uint64) bool {
	d, z, m, p, a := c.digit&run, c.zero&run, c.minus&run, c.dot&run, c.plus&run
	e, comma := c.exp&run, c.comma&run
	ends := run | stop // a byte of the run, or the one after it
	// Each number starts after a comma, or where the run does.
	starts := (comma<<1|cr.comma)&run | start
	afterDigit := d<<1 | cr.digit
	afterExp := e<<1 | cr.exp
	sign := (m | a) & afterExp
	startMinus := starts & m
	intStarts := starts&d | (startMinus<<1|cr.startMinus)&run
	intZero := intStarts & z
	fracStarts := (p<<1 | cr.dot) & d
	expStarts := (afterExp | sign<<1 | cr.sign) & d

	bad := starts &^ (m | d) // a number starts with '-' or a digit
	bad |= m &^ (starts | afterExp)
	bad |= a &^ afterExp
	bad |= (startMinus<<1 | cr.startMinus) & ends &^ d // '-' then a digit
	bad |= (intZero<<1 | cr.intZero) & d               // no digit after a leading 0
	bad |= p &^ afterDigit
	bad |= (p<<1 | cr.dot) & ends &^ d // '.' then a digit
	bad |= e &^ afterDigit
	bad |= afterExp & ends &^ (d | m | a)
	bad |= (sign<<1 | cr.sign) & ends &^ d
	bad |= comma &^ afterDigit
	bad |= stop &^ (afterDigit | comma<<1 | cr.comma) // the run ends after a digit, or a comma it leaves out
	// Where each kind of digit run ends, and what may follow it: the
	// integer part a fraction, an exponent or the number's end; the
	// fraction an exponent or the end; the exponent the end.
	var sum uint64
	sum, cr.intRun = bits.Add64(intStarts, d, cr.intRun)
	bad |= sum &^ d & ends &^ (p | e | comma | stop)
	sum, cr.fracRun = bits.Add64(fracStarts, d, cr.fracRun)
	bad |= sum &^ d & ends &^ (e | comma | stop)
	sum, cr.expRun = bits.Add64(expStarts, d, cr.expRun)
	bad |= sum &^ d & ends &^ (comma | stop)

	cr.digit, cr.exp, cr.comma, cr.dot = d>>63, e>>63, comma>>63, p>>63
	cr.sign, cr.startMinus, cr.intZero = sign>>63, startMinus>>63, intZero>>63
	return bad == 0
}

// integerBlock is numberBlock for a block inside a run that holds digits
// and commas alone (a run of token ids), after a block that leaves no
// sign, fraction or exponent pending: every number starts with a digit,
// no 0 leads a longer one, and every digit run ends at a comma, which
// each kind of run may end at; only the additions' carries are needed for
// the next block. A third of numberBlock's work, on half of a tokens
// document's number bytes.
func integerBlock(c *numberClasses, cr *numberCarries) bool {
	d, comma := c.digit, c.comma
	starts := comma<<1 | cr.comma
	intStarts := starts & d
	intZero := intStarts & c.zero
	bad := starts &^ d // a number starts with a digit, after one comma
	bad |= (intZero<<1 | cr.intZero) & d
	_, cr.intRun = bits.Add64(intStarts, d, cr.intRun)
	_, cr.fracRun = bits.Add64(0, d, cr.fracRun)
	_, cr.expRun = bits.Add64(0, d, cr.expRun)
	cr.digit, cr.comma, cr.intZero = d>>63, comma>>63, intZero>>63
	return bad == 0
}

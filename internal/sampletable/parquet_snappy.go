package sampletable

import (
	"encoding/binary"
	"unsafe"

	"github.com/klauspost/compress/s2"
)

// bigValue is the length from which a string value is compressed from
// where it lies rather than copied into the page buffer first. A value
// this long gives up only the matches it would have found in the few
// bytes before it, and its copy into the page was a pass over memory as
// long as the value (at 200 KB episodes, 3 % of the collector's CPU).
const bigValue = 64 << 10

// snappyPage compresses one page's body as it is appended. A raw Snappy
// block is its uncompressed length as a uvarint, then literal and copy
// elements, each copy reaching back into the output before it. Elements
// compressed from separate pieces therefore concatenate into one valid
// block: the page is compressed in pieces, small values gathered in buf
// and compressed together, a big value alone from its own memory.
type snappyPage struct {
	buf  []byte // body bytes not compressed yet
	comp []byte // the block so far
	size int    // the body's length, as the block's uvarint says
	done int    // body bytes compressed so far
}

// begin starts a page of size body bytes whose first bytes are in buf,
// reusing comp's memory for the block.
func (p *snappyPage) begin(buf, comp []byte, size int) {
	p.buf, p.size, p.done = buf, size, 0
	p.comp = binary.AppendUvarint(comp[:0], uint64(size))
}

// value appends a string value's bytes to the body.
func (p *snappyPage) value(s string) {
	if len(s) < bigValue {
		p.buf = append(p.buf, s...)
		return
	}
	p.flush()
	// s2 only reads its source: the string's bytes are not written.
	p.compress(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// piece appends the elements of a value of n bytes compressed before
// (a big cell kept for the cells derived from it).
func (p *snappyPage) piece(elems []byte, n int) {
	p.flush()
	p.comp = append(p.comp, elems...)
	p.done += n
}

// derive appends the elements of src[lo:hi], derived from the elements e
// of src's own block (parquet_derive.go), and tells whether it could.
func (p *snappyPage) derive(t *elemSizes, src string, e []byte, cps []checkpoint, lo, hi int) bool {
	p.flush()
	comp, ok := t.appendDerived(p.comp, src, e, cps, lo, hi, (hi-lo)/literalShare)
	if !ok {
		return false
	}
	p.comp = comp
	p.done += hi - lo
	return true
}

// flush compresses what buf holds.
func (p *snappyPage) flush() {
	if len(p.buf) > 0 {
		p.compress(p.buf)
		p.buf = p.buf[:0]
	}
}

// compress appends src's elements to the block. s2 writes a block, src's
// uvarint length then its elements; it writes it over the block's last
// bytes, as many as that uvarint takes, which are saved and put back, so
// that the elements land where they belong without being moved. The
// block always has that many bytes: a piece is never longer than the
// page, so its uvarint is never longer than the block's first.
func (p *snappyPage) compress(src []byte) {
	var saved [binary.MaxVarintLen64]byte
	hn := binary.PutUvarint(saved[:], uint64(len(src))) // only its length is wanted
	at := len(p.comp) - hn
	need := at + s2.MaxEncodedLen(len(src))
	if cap(p.comp) < need {
		grown := make([]byte, len(p.comp), max(need, 2*cap(p.comp)))
		copy(grown, p.comp)
		p.comp = grown
	}
	copy(saved[:hn], p.comp[at:])
	out := s2.EncodeSnappy(p.comp[at:need], src)
	if len(out) < hn || &out[0] != &p.comp[at] {
		// Unreachable: s2 writes into a destination of MaxEncodedLen.
		panic("sampletable: s2 did not encode in place")
	}
	p.comp = p.comp[:at+len(out)]
	copy(p.comp[at:], saved[:hn])
	p.done += len(src)
}

// finish compresses the rest and returns the block.
func (p *snappyPage) finish() []byte {
	p.flush()
	if p.done != p.size {
		// Unreachable: writePage counts the body it then appends; a
		// mismatch would be a corrupt page, never written.
		panic("sampletable: a page's body is not the length its block says")
	}
	return p.comp
}

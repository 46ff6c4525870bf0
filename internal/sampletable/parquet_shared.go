package sampletable

import (
	"encoding/binary"
	"slices"
	"strings"
	"unsafe"

	"github.com/klauspost/compress/s2"
)

// deriveMin is the shortest cell whose elements are derived from the big
// cell it lies inside (parquet_derive.go) rather than compressed. A
// shorter one is gathered with its page's other small values, where it
// finds matches in the rows before it.
const deriveMin = bigValue / 4

// maxKeptPieces bounds the compressed big cells a parquetWriter keeps
// between files, as maxKeptPage bounds its page buffers.
const maxKeptPieces = maxKeptPage

// bigCell is a big string cell that another cell of its row lies inside:
// it is compressed once, into the parquetWriter's pieces, for its own page
// and for the cells derived from it.
type bigCell struct {
	s        string
	from, to int // its elements in parquetWriter.pieces; to == 0 until compressed
}

// sharedCell is what a cell takes from a big cell: its own elements when
// it is that big cell, or a stretch [off, off+len) derived from them.
type sharedCell struct {
	big     int // index in parquetWriter.bigs
	derived bool
	off     int
}

// cellKey names a cell in parquetWriter.shared.
type cellKey struct{ col, row int }

// findShared records, for every row of t, the cells that lie inside a big
// cell of another column of the row (the sample table's completion inside
// its trajectory), and those big cells. Cells share memory only when the
// table built them so, which a pointer comparison tells.
// releaseShared, deferred by Write, leaves them empty for the next file.
func (fw *parquetWriter) findShared(t parquetTable) {
	type cand struct {
		col int
		s   string
	}
	var cells [32]cand
	for r := range t.NumRows() {
		row := cells[:0]
		hasBig := false
		for c, spec := range fw.specs {
			if spec.kind != kindString {
				continue
			}
			if s, ok := t.Str(c, r); ok && len(s) >= deriveMin {
				row = append(row, cand{c, s})
				hasBig = hasBig || len(s) >= bigValue
			}
		}
		if !hasBig {
			continue
		}
		for _, in := range row {
			for _, b := range row {
				if b.col == in.col || len(b.s) < bigValue {
					continue
				}
				off, ok := inside(in.s, b.s)
				if !ok || !worthDeriving(b.s, off, len(in.s)) {
					continue
				}
				big, seen := fw.shared[cellKey{b.col, r}]
				if !seen {
					big = sharedCell{big: len(fw.bigs)}
					fw.bigs = append(fw.bigs, bigCell{s: b.s})
					if fw.shared == nil {
						fw.shared = map[cellKey]sharedCell{}
					}
					fw.shared[cellKey{b.col, r}] = big
				}
				fw.shared[cellKey{in.col, r}] = sharedCell{big: big.big, derived: true, off: off}
				break
			}
		}
	}
}

// worthDeriving tells whether the stretch [off, off+n) of big is likely to
// derive smaller and faster than it compresses. Deriving reads big's
// elements up to the stretch's end, so the stretch must be a fair share
// of them. And its elements must mostly stay inside it: either little
// comes before it, or it starts by repeating text before it (the last
// branch of a trajectory that extends the first). Otherwise its copies
// mostly reach before it, and deriving would give up (literalShare) after
// the walk to it.
func worthDeriving(big string, off, n int) bool {
	if 8*n < off+n {
		return false
	}
	return off <= n/8 || strings.Contains(big[:off], big[off:off+min(n, resolveMin)])
}

// inside tells whether s's bytes lie within b's, and where.
func inside(s, b string) (int, bool) {
	ps, pb := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(b)))
	if ps < pb || ps+uintptr(len(s)) > pb+uintptr(len(b)) {
		return 0, false
	}
	return int(ps - pb), true
}

// sharedValue appends the value of cell (col, row) to p from the big cell
// it shares, and tells whether it did.
func (fw *parquetWriter) sharedValue(p *snappyPage, col, row int, s string) bool {
	if len(fw.shared) == 0 {
		return false
	}
	sc, ok := fw.shared[cellKey{col, row}]
	if !ok {
		return false
	}
	big := &fw.bigs[sc.big]
	if big.to == 0 {
		at, n := len(fw.pieces), s2.MaxEncodedLen(len(big.s))
		fw.pieces = slices.Grow(fw.pieces, n)[:at+n]
		// s2 only reads its source: the string's bytes are not written.
		block := s2.EncodeSnappy(fw.pieces[at:], unsafe.Slice(unsafe.StringData(big.s), len(big.s)))
		_, hn := binary.Uvarint(block)
		big.from, big.to = at+hn, at+len(block)
		fw.pieces = fw.pieces[:big.to]
	}
	elems := fw.pieces[big.from:big.to]
	if !sc.derived {
		p.piece(elems, len(s))
		return true
	}
	if fw.scanned != sc.big+1 {
		var ok bool
		if fw.cps, ok = fw.sizes.scan(fw.cps[:0], elems, len(big.s)); !ok {
			fw.scanned = 0
			return false // unreachable: s2 wrote the elements
		}
		fw.scanned = sc.big + 1
	}
	// false is unreachable: s2 wrote the elements.
	return p.derive(fw.sizes, big.s, elems, fw.cps, sc.off, sc.off+len(s))
}

// releaseShared drops the cells' strings and, past maxKeptPieces, the
// pieces' memory.
func (fw *parquetWriter) releaseShared() {
	clear(fw.shared)
	clear(fw.bigs)
	fw.bigs = fw.bigs[:0]
	fw.pieces = fw.pieces[:0]
	fw.scanned = 0
	if cap(fw.pieces) > maxKeptPieces {
		fw.pieces, fw.cps = nil, nil
	}
}

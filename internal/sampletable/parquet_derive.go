package sampletable

import (
	"encoding/binary"
	"sort"
)

// A cell whose bytes lie inside a big cell of another column of the same
// row (the sample table's completion is its trajectory's last branch) is
// not compressed a second time: its Snappy elements are derived from the
// big cell's, which were compressed once.
//
// An element of the big cell that falls inside the stretch is kept byte
// for byte when it is a literal, or a copy of bytes inside the stretch
// too. A long copy reaching back before the stretch (the last branch
// repeating the first) is replaced by the elements of the bytes it
// copies, which are the same bytes, kept by the same rule against the
// copied region, and a later copy of those bytes copies them where the
// stretch repeats them. Only what is left, copies reaching back before
// both, becomes literal bytes. The result decodes to exactly the cell's
// bytes, about as small as compressing them afresh
// (parquet_derive_test.go), for a walk over the big cell's elements
// instead of Snappy's search over the cell's bytes.

// checkpoint is where a block of checkpointEvery elements starts: its
// index in the elements and its position in the source, and the lowest
// source position its copies copy from. A walk finds the element of a
// position from the checkpoint before it, and keeps a whole block byte
// for byte, without reading its elements, when that lowest position lies
// inside the stretch it writes.
type checkpoint struct{ i, pos, lowest int }

// checkpointEvery is how many elements a checkpoint's block holds. Reading
// an element waits on the one before it (where it starts), about 4 ns on
// these machines, so a 200 KB trajectory's 14,000 elements are read once,
// by scan, and most of them are then kept by the block.
const checkpointEvery = 64

// elemSizes describes each tag byte's element: its size in the elements
// and the source bytes it makes (size 0 for a literal of more than 60
// bytes, whose length follows its tag), and how its copy offset is read
// from the four bytes after the tag. One lookup instead of branches on
// the tag's kind: the kinds come in no order a branch predictor learns,
// and deriving walks tens of thousands of elements a cell.
type elemSizes [256]struct {
	size, n uint16
	offHigh uint16 // a one-byte-offset copy's high bits, from its tag
	offMask uint32 // the bits of the next four bytes that are the offset
}

func newElemSizes() *elemSizes {
	var t elemSizes
	for tag := range 256 {
		n := tag>>2 + 1
		es := &t[tag]
		switch tag & 3 {
		case 0:
			if n <= 60 {
				es.size, es.n = uint16(1+n), uint16(n)
			}
		case 1:
			es.size, es.n = 2, uint16(4+(tag>>2&7))
			es.offHigh, es.offMask = uint16(tag&0xe0)<<3, 0xff
		case 2:
			es.size, es.n, es.offMask = 3, uint16(n), 0xffff
		case 3:
			es.size, es.n, es.offMask = 5, uint16(n), 0xffffffff
		}
	}
	return &t
}

// element decodes the element at e[i]: its size in e, the source bytes it
// makes, and for a copy how far back it copies from (0 for a literal,
// whose bytes are the last n of its size). size is 0 for an element cut
// off by the end of e.
func (t *elemSizes) element(e []byte, i int) (size, n, off int) {
	es := &t[e[i]]
	if es.size != 0 && i+5 <= len(e) {
		return int(es.size), int(es.n), int(binary.LittleEndian.Uint32(e[i+1:])&es.offMask) | int(es.offHigh)
	}
	// A long literal, or an element among the last four bytes.
	if es.size == 0 {
		extra := int(e[i]>>2) - 59
		if i+1+extra > len(e) {
			return 0, 0, 0
		}
		var b [4]byte
		copy(b[:], e[i+1:i+1+extra])
		n = int(binary.LittleEndian.Uint32(b[:])) + 1
		return 1 + extra + n, n, 0
	}
	if i+int(es.size) > len(e) {
		return 0, 0, 0
	}
	var b [4]byte
	copy(b[:], e[i+1:i+int(es.size)])
	return int(es.size), int(es.n), int(binary.LittleEndian.Uint32(b[:])&es.offMask) | int(es.offHigh)
}

// scan checks that e are the whole elements of a block of n source bytes
// and appends its checkpoints, the last one at the end of e. s2 never
// writes elements that fail; a copy's offset is checked as the walks read
// it.
func (t *elemSizes) scan(cps []checkpoint, e []byte, n int) (_ []checkpoint, ok bool) {
	pos, i, lowest := 0, 0, n
	for k := 0; i < len(e); k++ {
		if k%checkpointEvery == 0 {
			if k > 0 {
				cps[len(cps)-1].lowest = lowest
			}
			cps = append(cps, checkpoint{i: i, pos: pos})
			lowest = n
		}
		size, m, off := t.element(e, i)
		if size == 0 {
			return cps, false
		}
		from := pos - off
		if off == 0 {
			from = n
		}
		lowest = min(lowest, from)
		i += size
		pos += m
	}
	if len(cps) > 0 {
		cps[len(cps)-1].lowest = lowest
	}
	cps = append(cps, checkpoint{i: i, pos: pos, lowest: n})
	return cps, pos == n && i == len(e)
}

// deriver writes the elements of a stretch of src from src's elements.
type deriver struct {
	sizes *elemSizes
	src   string
	e     []byte
	cps   []checkpoint
	dst   []byte
	keep  int // e[keep:kept] are elements kept byte for byte, not yet written; -1: none
	kept  int
	bad   bool // an element read is not one s2 writes, or budget ran out
	// budget is the bytes of copies that may still become literals: past
	// it the stretch is compressed afresh, as it is smaller that way.
	budget int
	// mirrors are the repeats resolved so far: a later copy of their
	// bytes copies them where the stretch repeats them.
	mirrors []mirror
}

// mirror says src[from:to] equals src[from+by:to+by], which lies inside
// the stretch and is written.
type mirror struct{ from, to, by int }

// mirrored finds the mirror holding src[from:to] and how far on the
// stretch repeats it.
func (d *deriver) mirrored(from, to int) (by int, ok bool) {
	for _, mr := range d.mirrors {
		if mr.from <= from && to <= mr.to {
			return mr.by, true
		}
	}
	return 0, false
}

// resolveMin is the shortest repeat that is replaced by the elements of
// what it repeats; a shorter copy from before the stretch becomes a
// literal, which costs less than finding those elements.
const resolveMin = 64

// literalShare bounds the share of a stretch that copies turned into
// literals may take, one part in literalShare, before deriving gives up:
// then the stretch's bytes are mostly copies of text before it, which a
// fresh compression would find again within the stretch (two branches of
// one vocabulary that do not repeat each other).
const literalShare = 32

// appendDerived appends Snappy elements that decode to src[lo:hi] to dst,
// given the elements e of src's own block, which scan has checkpointed in
// cps. ok is false, and dst is to be dropped, when an element it read is
// not one s2 writes, or when more than budget bytes of copies would have
// become literals.
func (t *elemSizes) appendDerived(dst []byte, src string, e []byte, cps []checkpoint, lo, hi, budget int) (_ []byte, ok bool) {
	d := deriver{sizes: t, src: src, e: e, cps: cps, dst: dst, keep: -1, budget: budget}
	d.walk(lo, hi, 0, true)
	return d.dst, !d.bad
}

// walk writes src[a:b], the same bytes as src[a+shift:b+shift], which the
// stretch wants there. An element is kept when it is a literal or copies
// from inside [a, b), written before it; a block of them is kept without
// reading them when its checkpoint says so. A copy from before a is, at
// the top (resolve), replaced by the elements of what it copies, with the
// copies of the same offset after it: the last branch repeating the
// first. Below the top, its bytes are written as a literal.
func (d *deriver) walk(a, b, shift int, resolve bool) {
	i, pos := d.seek(a)
	k := sort.Search(len(d.cps), func(k int) bool { return d.cps[k].i >= i })
	for pos < b && !d.bad {
		if k+1 < len(d.cps) && d.cps[k].i == i {
			if cp, next := d.cps[k], d.cps[k+1]; cp.pos >= a && next.pos <= b && cp.lowest >= a {
				d.keepFrom(i, next.i-i)
				i, pos, k = next.i, next.pos, k+1
				continue
			}
			k++
		}
		size, n, off := d.next(i, pos)
		s, end := max(pos, a), min(pos+n, b)
		switch {
		case d.bad:
		case s == pos && end == pos+n && (off == 0 || pos-off >= a):
			d.keepFrom(i, size)
		case off == 0:
			d.literal(s+shift, end+shift)
		default:
			if resolve {
				for end == pos+n && end < b {
					size2, n2, off2 := d.next(i+size, pos+n)
					if d.bad || off2 != off {
						break
					}
					i, pos, size, n = i+size, pos+n, size2, n2
					end = min(pos+n, b)
				}
			}
			// Bytes from a+off on copy bytes inside [a, b).
			split := a + off
			m := min(end, split)
			by, mirrored := d.mirrored(s-off, m-off)
			switch {
			case s >= m:
			case resolve && mirrored:
				// What it copies is repeated inside the stretch already.
				d.flush()
				d.dst = appendCopy(d.dst, off-by, m-s)
			case resolve && m-s >= resolveMin:
				d.flush()
				d.walk(s-off, m-off, shift+off, false)
				d.mirrors = append(d.mirrors, mirror{s - off, m - off, off})
			default:
				d.literal(s+shift, m+shift)
				if d.budget -= m - s; d.budget < 0 {
					d.bad = true
				}
			}
			if s = max(s, split); s < end {
				d.flush()
				d.dst = appendCopy(d.dst, off, end-s)
			}
		}
		i += size
		pos += n
	}
	d.flush()
}

// next decodes the element at e[i], which makes the source bytes from pos
// on. It is bad when cut off, or a copy of nothing or of bytes before the
// source's start.
func (d *deriver) next(i, pos int) (size, n, off int) {
	if i >= len(d.e) {
		d.bad = true
		return 0, 0, 0
	}
	size, n, off = d.sizes.element(d.e, i)
	if size == 0 || i+size > len(d.e) || off > pos || (off == 0 && d.e[i]&3 != 0) {
		d.bad = true
	}
	return size, n, off
}

// seek is the element holding source position p, and where it starts.
func (d *deriver) seek(p int) (i, pos int) {
	k := sort.Search(len(d.cps), func(k int) bool { return d.cps[k].pos > p }) - 1
	if k < 0 {
		d.bad = true
		return 0, 0
	}
	i, pos = d.cps[k].i, d.cps[k].pos
	for !d.bad {
		size, n, _ := d.next(i, pos)
		if pos+n > p {
			break
		}
		i += size
		pos += n
	}
	return i, pos
}

// keepFrom keeps the element e[i:i+size] byte for byte, written with the
// kept elements before it when they are adjacent.
func (d *deriver) keepFrom(i, size int) {
	if d.keep >= 0 && d.kept != i {
		d.flush()
	}
	if d.keep < 0 {
		d.keep = i
	}
	d.kept = i + size
}

// literal writes src[from:to] as a literal element.
func (d *deriver) literal(from, to int) {
	d.flush()
	if from < to {
		d.dst = appendLiteral(d.dst, d.src[from:to])
	}
}

// flush writes the kept elements.
func (d *deriver) flush() {
	if d.keep >= 0 {
		d.dst = append(d.dst, d.e[d.keep:d.kept]...)
		d.keep = -1
	}
}

// appendLiteral appends a literal element of lit (not empty).
func appendLiteral(dst []byte, lit string) []byte {
	n := uint32(len(lit) - 1)
	switch {
	case n < 60:
		dst = append(dst, byte(n)<<2)
	case n < 1<<8:
		dst = append(dst, 60<<2, byte(n))
	case n < 1<<16:
		dst = append(dst, 61<<2, byte(n), byte(n>>8))
	case n < 1<<24:
		dst = append(dst, 62<<2, byte(n), byte(n>>8), byte(n>>16))
	default:
		dst = append(dst, 63<<2, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
	}
	return append(dst, lit...)
}

// appendCopy appends copy elements of length bytes from offset back, at
// most 64 bytes an element (the format's limit), in the shortest form the
// offset allows.
func appendCopy(dst []byte, offset, length int) []byte {
	for length > 0 {
		n := min(length, 64)
		// Keep the last element at four bytes or more, the shortest a
		// one-byte-offset copy takes.
		if length > 64 && length < 68 {
			n = 60
		}
		switch {
		case n >= 4 && n <= 11 && offset < 2048:
			dst = append(dst, byte(offset>>8)<<5|byte(n-4)<<2|1, byte(offset))
		case offset < 1<<16:
			dst = append(dst, byte(n-1)<<2|2, byte(offset), byte(offset>>8))
		default:
			dst = append(dst, byte(n-1)<<2|3, byte(offset), byte(offset>>8), byte(offset>>16), byte(offset>>24))
		}
		length -= n
	}
	return dst
}

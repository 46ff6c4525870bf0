package sampletable

import (
	"sync"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/pjson"
)

// arenaChunk is the memory an Arena carves texts from at a time; a text
// larger than a quarter of it gets memory of its own, so that a chunk is
// not left mostly unused.
const arenaChunk = 1 << 20

// Arena is memory the JSON columns of mapped rows (their trajectories
// above all) are written into (FromRecordIn), carved out of chunks that
// go back to their ArenaPool on Release, for the next push's rows. At 2 KB
// episodes a trajectory was one allocation of about 5 KB per row, most of
// what the exporter allocated; writing them into reused chunks took about
// 8 % off the collector's CPU per episode (docs/performance-history.md).
//
// Release ends the texts: the chunks are written over by later rows, so
// nothing may keep a row's text past it. In a -race build, which the test
// command runs, Release also zeroes them, so that a row kept too long
// reads as NUL bytes, which no test accepts, rather than as another row's
// text. Elsewhere the zeroing is left out: it guards against a bug the
// tests would show, and cost about 1 % of the collector's CPU per episode
// at either episode size. An Arena is not safe for concurrent use; a nil
// Arena allocates each text on its own, as a mapping without one does.
type Arena struct {
	pool   *ArenaPool
	chunks [][]byte // taken from the pool, in use
	rest   []byte   // the newest chunk's unused tail
	last   int      // the length of the last text written through buffer
	// members is the room a record's body members are read into, reused
	// record after record: they live only while the record is mapped, and
	// a fresh slice for each was 3.5 % of the collector's CPU on 2 KB
	// verifiers episodes (the rows keep the body's text, so escape
	// analysis puts any array of the caller's on the heap too).
	members []member
	// ix is the structural index of a record's body, reused record after
	// record as members is: it lives only while the record is mapped.
	ix *jsonIndex
	// proj and slabs are the room of arenaroom.go.
	proj  *projection
	slabs rowSlabs
}

// index is the room for a record's body's structural index; nil (one of
// its own) for a nil Arena.
func (a *Arena) index() *jsonIndex {
	if a == nil {
		return nil
	}
	if a.ix == nil {
		a.ix = new(jsonIndex)
	}
	return a.ix
}

// memberRoom is the room for a record's body members; nil (a slice of
// its own) for a nil Arena.
func (a *Arena) memberRoom() []member {
	if a == nil {
		return nil
	}
	if a.members == nil {
		a.members = make([]member, 0, 16)
	}
	return a.members[:0]
}

// keepMembers keeps the room that members grew into for the next record.
func (a *Arena) keepMembers(members []member) {
	if a != nil && cap(members) > cap(a.members) {
		a.members = members[:0]
	}
}

// take returns room for n bytes: a slice of length 0 and capacity n, which
// an append past n leaves for memory of its own rather than write into the
// next text's.
func (a *Arena) take(n int) []byte {
	if a == nil || n > arenaChunk/4 {
		return make([]byte, 0, n)
	}
	if len(a.rest) < n {
		a.newChunk()
	}
	b := a.rest[:0:n]
	a.rest = a.rest[n:]
	return b
}

// buffer returns a Buffer for a text whose length is not known before it
// is written: the unused rest of a's chunk (at least a quarter chunk),
// which text then keeps. So the text is written once, with no pass over
// its value to size it (that pass was 2.6 % of a 2 KB profile of the
// collector); a nil Arena sizes the text's own memory with size.
func (a *Arena) buffer(size func() int) pjson.Buffer {
	// After a text of more than a quarter chunk, the next (a row's texts
	// are alike in size) gets memory of its own, as take gives it: a large
	// allocation is neither zeroed nor scanned, and it leaves the chunks'
	// room to the texts that fit them.
	if a == nil || a.last > arenaChunk/4 {
		return pjson.NewBuffer(make([]byte, 0, size()))
	}
	if len(a.rest) < arenaChunk/4 {
		a.newChunk()
	}
	return pjson.NewBuffer(a.rest[:0])
}

// text is what was written into sb, a buffer returns, kept until Release.
// A text that outgrew the room has moved to memory of its own, and stays
// there.
func (a *Arena) text(sb *pjson.Buffer) string {
	b := sb.Bytes()
	if a != nil {
		a.last = len(b)
		if len(b) > 0 && unsafe.SliceData(b) == unsafe.SliceData(a.rest) {
			a.rest = a.rest[len(b):]
		}
	}
	return sb.String()
}

// encode is v's JSON (pjson.Encode), written into a. A scalar's JSON (a
// task given as a string, say) is sized up front, into room of its own:
// written through a fresh builder it took a growth or two a row.
func (a *Arena) encode(v pcommon.Value) string {
	if t := v.Type(); t != pcommon.ValueTypeMap && t != pcommon.ValueTypeSlice {
		sb := pjson.NewBuffer(a.take(pjson.Size(v)))
		pjson.Write(&sb, v)
		return sb.String()
	}
	sb := a.buffer(func() int { return pjson.Size(v) })
	pjson.Write(&sb, v)
	return a.text(&sb)
}

// float is pjson.AppendFloat's text of f, written into a.
func (a *Arena) float(f float64) string {
	var scratch [32]byte
	b := pjson.AppendFloat(scratch[:0], f)
	sb := pjson.NewBuffer(a.take(len(b)))
	_, _ = sb.Write(b)
	return sb.String()
}

func (a *Arena) newChunk() {
	c := a.pool.get()
	a.chunks = append(a.chunks, c)
	a.rest = c
}

// Release gives a's chunks back, zeroing the texts written into them when
// the pool says so.
func (a *Arena) Release() {
	if a == nil {
		return
	}
	for i, c := range a.chunks {
		switch {
		case !a.pool.zero:
		case i == len(a.chunks)-1:
			clear(c[:len(c)-len(a.rest)])
		default:
			clear(c)
		}
		a.pool.put(c)
	}
	a.chunks, a.rest = nil, nil
}

// ArenaPool holds the chunks of the Arenas made from it. It keeps up to a
// fixed number between pushes, which survive garbage collections, and
// leaves what is beyond that to a sync.Pool, which a collection empties
// once the load that needed them has passed. It is safe for concurrent
// use.
type ArenaPool struct {
	kept     chan []byte
	overflow sync.Pool
	// zero makes Release zero what its arena's rows held: in -race
	// builds, and in the tests of the zeroing itself.
	zero bool
}

// NewArenaPool returns a pool that keeps up to chunks chunks.
func NewArenaPool(chunks int) *ArenaPool {
	return &ArenaPool{kept: make(chan []byte, chunks), zero: raceBuild}
}

// Arena returns an empty Arena carving from p's chunks.
func (p *ArenaPool) Arena() *Arena { return &Arena{pool: p} }

func (p *ArenaPool) get() []byte {
	select {
	case c := <-p.kept:
		return c
	default:
	}
	if c, ok := p.overflow.Get().(*[]byte); ok {
		return *c
	}
	return make([]byte, arenaChunk)
}

func (p *ArenaPool) put(c []byte) {
	select {
	case p.kept <- c:
	default:
		p.overflow.Put(&c)
	}
}

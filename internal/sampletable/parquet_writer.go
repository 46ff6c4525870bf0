package sampletable

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/s2"
)

// PageSize is the value bytes after which a column's page is cut, at a row
// boundary: the size pyarrow and arrow-go use, which keeps a reader's page
// buffers small while a page's header is a negligible share of it. It is
// exported for the Snappy floor outside this package, AppendCellText's
// text compressed in pages of this size (bench/floor.go, the root's
// BenchmarkPushLogsSnappyFloor).
const PageSize = 1 << 20

// maxKeptPage bounds the page buffers a parquetWriter keeps between files:
// a page passes PageSize only by its last value, so one past this held a
// huge value, whose buffers are not worth holding for good.
const maxKeptPage = 4 * PageSize

// maxStatBytes is the longest string kept as a column's min or max; longer
// ones would copy whole values into the footer, so a chunk that has one
// gets no min/max.
const maxStatBytes = 64

// createdBy names the writer in the footer, in the "app version v (build
// b)" form readers parse.
const createdBy = "primeexporter version 1 (build sampletable)"

// parquetTable is what a parquetWriter writes: NumRows rows × the schema's
// columns, read cell by cell. The getter of a column's type is the one
// called: Str for utf8, Int for int64 and timestamp, Float for float64;
// false is null. A parquetWriter keeps no string past the write that read
// it.
type parquetTable interface {
	NumRows() int
	Str(col, row int) (string, bool)
	Int(col, row int) (int64, bool)
	Float(col, row int) (float64, bool)
}

type colKind int8

const (
	kindString colKind = iota
	kindInt
	kindFloat
	kindTimestamp
)

// colSpec is one column of the file.
type colSpec struct {
	name  string
	kind  colKind
	stats bool // min/max statistics
}

// parquetWriter writes files of one schema. Its buffers are kept between
// files; it is not safe for concurrent use.
type parquetWriter struct {
	specs      []colSpec
	arrowMeta  string
	present    []bool
	strs       []string
	nums       []uint64 // int64 or float64 bits
	page, comp []byte
	tw         thriftWriter
	chunks     []chunkMeta
	// Cells that share a big cell's bytes (parquet_shared.go), per file.
	shared  map[cellKey]sharedCell
	bigs    []bigCell
	pieces  []byte
	sizes   *elemSizes
	cps     []checkpoint
	scanned int // 1 + the bigs index cps were scanned from; 0: none
}

// newParquetWriter returns a parquetWriter of files of schema s, whose
// fields must all be nullable and of type utf8, int64, float64 or
// timestamp[us, tz=UTC]. The columns named in noMinMax get a null count
// but no min/max.
func newParquetWriter(s *arrow.Schema, noMinMax ...string) (*parquetWriter, error) {
	specs := make([]colSpec, s.NumFields())
	for i, f := range s.Fields() {
		kind, ok := kindOf(f.Type)
		if !ok || !f.Nullable {
			return nil, fmt.Errorf("sampletable: column %s is %s (nullable %v); only nullable utf8, int64, float64 and timestamp[us, tz=UTC] are written", f.Name, f.Type, f.Nullable)
		}
		specs[i] = colSpec{name: f.Name, kind: kind, stats: !slices.Contains(noMinMax, f.Name)}
	}
	return &parquetWriter{specs: specs, arrowMeta: arrowSchemaMetadata(s), sizes: newElemSizes()}, nil
}

func kindOf(t arrow.DataType) (colKind, bool) {
	switch t.ID() {
	case arrow.STRING:
		return kindString, true
	case arrow.INT64:
		return kindInt, true
	case arrow.FLOAT64:
		return kindFloat, true
	case arrow.TIMESTAMP:
		ts := t.(*arrow.TimestampType)
		return kindTimestamp, ts.Unit == arrow.Microsecond && ts.TimeZone == "UTC"
	}
	return 0, false
}

// arrowSchemaMetadata is the ARROW:schema value pyarrow and arrow-go store:
// the schema as an Arrow IPC message, base64.
func arrowSchemaMetadata(s *arrow.Schema) string {
	return base64.StdEncoding.EncodeToString(flight.SerializeSchema(s, memory.DefaultAllocator))
}

// countingWriter keeps the offset the footer needs and the first error.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
}

var magic = []byte("PAR1")

// Write writes t to dst as one file with one row group. dst is written
// to, never closed; after an error it may hold part of a file.
func (fw *parquetWriter) write(dst io.Writer, t parquetTable) error {
	cw := &countingWriter{w: dst}
	cw.write(magic)
	fw.findShared(t)
	defer fw.releaseShared()
	fw.chunks = fw.chunks[:0]
	for c := range fw.specs {
		fw.chunks = append(fw.chunks, fw.column(cw, c, t))
		if cw.err != nil {
			break
		}
	}
	// The cells' strings are not kept past the file, nor the buffers of a
	// page that one huge value made.
	clear(fw.strs[:cap(fw.strs)])
	fw.strs = fw.strs[:0]
	if cap(fw.page) > maxKeptPage || cap(fw.comp) > s2.MaxEncodedLen(maxKeptPage) {
		fw.page, fw.comp = nil, nil
	}
	if cw.err != nil {
		return cw.err
	}
	footer := fw.footer(int64(t.NumRows()))
	cw.write(footer)
	cw.write(binary.LittleEndian.AppendUint32(nil, uint32(len(footer))))
	cw.write(magic)
	return cw.err
}

// column gathers column c's cells, then writes them in pages of about
// PageSize value bytes.
func (fw *parquetWriter) column(cw *countingWriter, c int, t parquetTable) chunkMeta {
	spec := fw.specs[c]
	n := t.NumRows()
	fw.present = fw.present[:0]
	fw.strs = fw.strs[:0]
	fw.nums = fw.nums[:0]
	for r := range n {
		var ok bool
		switch spec.kind {
		case kindString:
			var s string
			s, ok = t.Str(c, r)
			fw.strs = append(fw.strs, s)
		case kindFloat:
			var f float64
			f, ok = t.Float(c, r)
			fw.nums = append(fw.nums, math.Float64bits(f))
		default:
			var i int64
			i, ok = t.Int(c, r)
			fw.nums = append(fw.nums, uint64(i))
		}
		fw.present = append(fw.present, ok)
	}

	meta := chunkMeta{offset: cw.n}
	for start := 0; start < n && cw.err == nil; {
		end, size := start, 0
		for end < n && size < PageSize {
			if fw.present[end] {
				size += fw.valueSize(spec, end)
			}
			end++
		}
		fw.writePage(cw, &meta, c, start, end, size)
		start = end
	}
	return meta
}

func (fw *parquetWriter) valueSize(spec colSpec, row int) int {
	if spec.kind == kindString {
		return 4 + len(fw.strs[row])
	}
	return 8
}

// writePage writes rows [start, end) of the gathered column, whose
// present values are size bytes, as one data page: definition levels,
// then the PLAIN values of the present cells, Snappy-compressed together.
func (fw *parquetWriter) writePage(cw *countingWriter, meta *chunkMeta, c, start, end, size int) {
	spec := fw.specs[c]
	present := fw.present[start:end]
	nulls := 0
	for _, ok := range present {
		if !ok {
			nulls++
		}
	}
	var p snappyPage
	levels := appendLevels(fw.page[:0], present, nulls)
	p.begin(levels, fw.comp, len(levels)+size)
	for r := start; r < end; r++ {
		if !fw.present[r] {
			continue
		}
		if spec.kind == kindString {
			s := fw.strs[r]
			p.buf = binary.LittleEndian.AppendUint32(p.buf, uint32(len(s)))
			if !fw.sharedValue(&p, c, r, s) {
				p.value(s)
			}
			if spec.stats {
				meta.stats.seeString(s)
			}
			continue
		}
		v := fw.nums[r]
		p.buf = binary.LittleEndian.AppendUint64(p.buf, v)
		if spec.stats {
			if spec.kind == kindFloat {
				meta.stats.seeFloat(math.Float64frombits(v))
			} else {
				meta.stats.seeInt(int64(v))
			}
		}
	}
	comp := p.finish()
	fw.page, fw.comp = p.buf, comp

	header := fw.pageHeader(p.size, len(comp), end-start)
	cw.write(header)
	cw.write(comp)
	meta.values += int64(end - start)
	meta.nulls += int64(nulls)
	meta.uncompressed += int64(len(header) + p.size)
	meta.compressed += int64(len(header) + len(comp))
}

// appendLevels appends a v1 page's definition levels (max level 1): their
// length, then the RLE/bit-packed hybrid, one RLE run when the page is all
// present or all null, bit-packed groups of eight otherwise.
func appendLevels(b []byte, present []bool, nulls int) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	switch n := len(present); nulls {
	case 0, n:
		b = binary.AppendUvarint(b, uint64(n)<<1)
		if nulls == 0 {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	default:
		groups := (n + 7) / 8
		b = binary.AppendUvarint(b, uint64(groups)<<1|1)
		for g := range groups {
			var bits byte
			for j := range 8 {
				if i := g*8 + j; i < n && present[i] {
					bits |= 1 << j
				}
			}
			b = append(b, bits)
		}
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

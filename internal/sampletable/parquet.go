package sampletable

import (
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/s2"
)

// The sample table is one flat schema of 19 optional columns, so its
// Parquet file is written here directly rather than through pqarrow: the
// values go once from the episode into a page buffer and once through
// Snappy, where the generic writer copied every text byte into Arrow
// builders, an encoder sink, a page buffer and a compression buffer, each
// grown afresh per object (a quarter of the exporter's CPU on short
// episodes and most of its allocation). The file is what the viewer reads
// (one row group; every column OPTIONAL; strings BYTE_ARRAY/STRING, ints
// INT64/INT(64,signed), doubles DOUBLE, created_at INT64/TIMESTAMP(UTC,
// MICROS); Snappy; the Arrow schema stored under ARROW:schema as pyarrow
// stores it), in data pages v1 with PLAIN values and RLE definition
// levels, which every reader decodes.

// pageTarget is the value bytes after which a column's page is cut, at a
// row boundary: the size pyarrow and arrow-go use, which keeps a reader's
// page buffers small while a page's header is a negligible share of it.
const pageTarget = 1 << 20

// maxStatBytes is the longest string kept as a column's min or max; longer
// ones would copy whole values into the footer, so a chunk that has one
// gets no min/max.
const maxStatBytes = 64

// createdBy names the writer in the footer, in the "app version v (build
// b)" form readers parse.
const createdBy = "primeexporter version 1 (build sampletable)"

// Parquet enums (parquet.thrift).
const (
	ptInt64     = 2
	ptDouble    = 5
	ptByteArray = 6

	repOptional = 1

	ctUTF8            = 0
	ctTimestampMicros = 10
	ctInt64           = 18

	encPlain = 0
	encRLE   = 3

	codecSnappy = 1

	pageData = 0
)

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
	stats bool // min/max statistics (not on free text: see freeText)
}

// columnSpecs derives the file's columns from the Arrow schema, so the two
// cannot disagree.
func columnSpecs(s *arrow.Schema) []colSpec {
	specs := make([]colSpec, s.NumFields())
	for i, f := range s.Fields() {
		kind := kindString
		switch f.Type.ID() {
		case arrow.INT64:
			kind = kindInt
		case arrow.FLOAT64:
			kind = kindFloat
		case arrow.TIMESTAMP:
			kind = kindTimestamp
		}
		stats := true
		for _, c := range freeText {
			stats = stats && c != f.Name
		}
		specs[i] = colSpec{name: f.Name, kind: kind, stats: stats}
	}
	return specs
}

// arrowSchemaMetadata is the ARROW:schema value pyarrow and arrow-go store:
// the schema as an Arrow IPC message, base64.
func arrowSchemaMetadata(s *arrow.Schema) string {
	return base64.StdEncoding.EncodeToString(flight.SerializeSchema(s, memory.DefaultAllocator))
}

// cellSource is a table the file writer reads cell by cell: rows × the schema's
// columns. The getter of a column's kind is the one called; false is null.
type cellSource interface {
	numRows() int
	str(col, row int) (string, bool)
	int(col, row int) (int64, bool)
	float(col, row int) (float64, bool)
}

// chunkMeta is what the footer says of one column chunk.
type chunkMeta struct {
	offset       int64 // of its first page
	values       int64
	nulls        int64
	uncompressed int64 // page headers included, as the format counts
	compressed   int64
	stats        colStats
}

// fileWriter writes sample table files. Its buffers are kept between files;
// it is not safe for concurrent use.
type fileWriter struct {
	specs      []colSpec
	arrowMeta  string
	present    []bool
	strs       []string
	nums       []uint64 // int64 or float64 bits
	page, comp []byte
	tw         thriftWriter
	chunks     []chunkMeta
}

func newFileWriter(s *arrow.Schema) *fileWriter {
	return &fileWriter{specs: columnSpecs(s), arrowMeta: arrowSchemaMetadata(s)}
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

// write writes t as one file with one row group.
func (fw *fileWriter) write(w io.Writer, t cellSource) error {
	cw := &countingWriter{w: w}
	cw.write(magic)
	fw.chunks = fw.chunks[:0]
	for c := range fw.specs {
		fw.chunks = append(fw.chunks, fw.column(cw, c, t))
		if cw.err != nil {
			break
		}
	}
	// The cells' strings are not kept past the file.
	clear(fw.strs[:cap(fw.strs)])
	fw.strs = fw.strs[:0]
	if cw.err != nil {
		return cw.err
	}
	footer := fw.footer(int64(t.numRows()))
	cw.write(footer)
	cw.write(binary.LittleEndian.AppendUint32(nil, uint32(len(footer))))
	cw.write(magic)
	return cw.err
}

// column gathers column c's cells, then writes them in pages of about
// pageTarget value bytes.
func (fw *fileWriter) column(cw *countingWriter, c int, t cellSource) chunkMeta {
	spec := fw.specs[c]
	n := t.numRows()
	fw.present = fw.present[:0]
	fw.strs = fw.strs[:0]
	fw.nums = fw.nums[:0]
	for r := range n {
		var ok bool
		switch spec.kind {
		case kindString:
			var s string
			s, ok = t.str(c, r)
			fw.strs = append(fw.strs, s)
		case kindFloat:
			var f float64
			f, ok = t.float(c, r)
			fw.nums = append(fw.nums, math.Float64bits(f))
		default:
			var i int64
			i, ok = t.int(c, r)
			fw.nums = append(fw.nums, uint64(i))
		}
		fw.present = append(fw.present, ok)
	}

	meta := chunkMeta{offset: cw.n}
	for start := 0; start < n && cw.err == nil; {
		end, size := start, 0
		for end < n && size < pageTarget {
			if fw.present[end] {
				size += fw.valueSize(spec, end)
			}
			end++
		}
		fw.writePage(cw, &meta, spec, start, end)
		start = end
	}
	return meta
}

func (fw *fileWriter) valueSize(spec colSpec, row int) int {
	if spec.kind == kindString {
		return 4 + len(fw.strs[row])
	}
	return 8
}

// writePage writes rows [start, end) of the gathered column as one data
// page: definition levels, then the PLAIN values of the present cells,
// Snappy-compressed together.
func (fw *fileWriter) writePage(cw *countingWriter, meta *chunkMeta, spec colSpec, start, end int) {
	present := fw.present[start:end]
	nulls := 0
	for _, ok := range present {
		if !ok {
			nulls++
		}
	}
	body := appendLevels(fw.page[:0], present, nulls)
	for r := start; r < end; r++ {
		if !fw.present[r] {
			continue
		}
		if spec.kind == kindString {
			s := fw.strs[r]
			body = binary.LittleEndian.AppendUint32(body, uint32(len(s)))
			body = append(body, s...)
			if spec.stats {
				meta.stats.seeString(s)
			}
			continue
		}
		v := fw.nums[r]
		body = binary.LittleEndian.AppendUint64(body, v)
		if spec.stats {
			if spec.kind == kindFloat {
				meta.stats.seeFloat(math.Float64frombits(v))
			} else {
				meta.stats.seeInt(int64(v))
			}
		}
	}
	fw.page = body

	if need := s2.MaxEncodedLen(len(body)); cap(fw.comp) < need {
		fw.comp = make([]byte, need)
	}
	comp := s2.EncodeSnappy(fw.comp[:cap(fw.comp)], body)

	tw := &fw.tw
	tw.reset()
	tw.beginStruct(0) // PageHeader
	tw.i32(1, pageData)
	tw.i32(2, int32(len(body)))
	tw.i32(3, int32(len(comp)))
	tw.beginStruct(5) // DataPageHeader
	tw.i32(1, int32(end-start))
	tw.i32(2, encPlain)
	tw.i32(3, encRLE)
	tw.i32(4, encRLE)
	tw.endStruct()
	tw.endStruct()

	cw.write(tw.buf)
	cw.write(comp)
	meta.values += int64(end - start)
	meta.nulls += int64(nulls)
	meta.uncompressed += int64(len(tw.buf) + len(body))
	meta.compressed += int64(len(tw.buf) + len(comp))
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

// colStats are a chunk's min and max, in the column's sort order (signed
// for ints, numeric for doubles with NaN left out, bytewise for strings).
type colStats struct {
	has        bool
	minI, maxI int64
	minF, maxF float64
	minS, maxS string
	long       bool // a string longer than maxStatBytes was seen
}

func (s *colStats) seeInt(v int64) {
	if !s.has {
		s.has, s.minI, s.maxI = true, v, v
		return
	}
	s.minI, s.maxI = min(s.minI, v), max(s.maxI, v)
}

func (s *colStats) seeFloat(v float64) {
	if math.IsNaN(v) {
		return
	}
	if !s.has {
		s.has, s.minF, s.maxF = true, v, v
		return
	}
	s.minF, s.maxF = math.Min(s.minF, v), math.Max(s.maxF, v)
}

func (s *colStats) seeString(v string) {
	if len(v) > maxStatBytes {
		s.long = true
		return
	}
	if !s.has {
		s.has, s.minS, s.maxS = true, v, v
		return
	}
	s.minS, s.maxS = min(s.minS, v), max(s.maxS, v)
}

// encoded returns min and max as PLAIN values, or false when the chunk
// has none to give.
func (s *colStats) encoded(kind colKind) (minV, maxV []byte, ok bool) {
	if !s.has || s.long {
		return nil, nil, false
	}
	switch kind {
	case kindString:
		return []byte(s.minS), []byte(s.maxS), true
	case kindFloat:
		// The format's rule for zeros: a min of +0 is written -0, a max of
		// -0 is written +0, so a reader's pruning never drops a zero.
		lo, hi := s.minF, s.maxF
		if lo == 0 {
			lo = math.Copysign(0, -1)
		}
		if hi == 0 {
			hi = 0
		}
		return binary.LittleEndian.AppendUint64(nil, math.Float64bits(lo)),
			binary.LittleEndian.AppendUint64(nil, math.Float64bits(hi)), true
	default:
		return binary.LittleEndian.AppendUint64(nil, uint64(s.minI)),
			binary.LittleEndian.AppendUint64(nil, uint64(s.maxI)), true
	}
}

// footer is the file's FileMetaData.
func (fw *fileWriter) footer(rows int64) []byte {
	tw := &fw.tw
	tw.reset()
	tw.beginStruct(0)
	tw.i32(1, 2) // format version 2, as pyarrow's default "2.6" writes
	tw.list(2, tStruct, 1+len(fw.specs))
	tw.beginStruct(0) // the root
	tw.str(4, "schema")
	tw.i32(5, int32(len(fw.specs)))
	tw.endStruct()
	for _, spec := range fw.specs {
		fw.schemaElement(spec)
	}
	tw.i64(3, rows)

	var total, totalComp int64
	for _, m := range fw.chunks {
		total += m.uncompressed
		totalComp += m.compressed
	}
	tw.list(4, tStruct, 1)
	tw.beginStruct(0) // RowGroup
	tw.list(1, tStruct, len(fw.chunks))
	for c, m := range fw.chunks {
		fw.columnChunk(fw.specs[c], m)
	}
	tw.i64(2, total)
	tw.i64(3, rows)
	if len(fw.chunks) > 0 {
		tw.i64(5, fw.chunks[0].offset)
	}
	tw.i64(6, totalComp)
	tw.endStruct()

	tw.list(5, tStruct, 1)
	tw.beginStruct(0) // KeyValue
	tw.str(1, "ARROW:schema")
	tw.str(2, fw.arrowMeta)
	tw.endStruct()
	tw.str(6, createdBy)
	tw.list(7, tStruct, len(fw.specs))
	for range fw.specs {
		tw.beginStruct(0) // ColumnOrder
		tw.beginStruct(1) // TYPE_ORDER
		tw.endStruct()
		tw.endStruct()
	}
	tw.endStruct()
	return tw.buf
}

func physicalType(kind colKind) int32 {
	switch kind {
	case kindString:
		return ptByteArray
	case kindFloat:
		return ptDouble
	default:
		return ptInt64
	}
}

func (fw *fileWriter) schemaElement(spec colSpec) {
	tw := &fw.tw
	tw.beginStruct(0)
	tw.i32(1, physicalType(spec.kind))
	tw.i32(3, repOptional)
	tw.str(4, spec.name)
	switch spec.kind {
	case kindString:
		tw.i32(6, ctUTF8)
		tw.beginStruct(10) // LogicalType
		tw.beginStruct(1)  // STRING
		tw.endStruct()
		tw.endStruct()
	case kindInt:
		tw.i32(6, ctInt64)
		tw.beginStruct(10)
		tw.beginStruct(10) // INTEGER
		tw.i8(1, 64)
		tw.boolean(2, true)
		tw.endStruct()
		tw.endStruct()
	case kindTimestamp:
		tw.i32(6, ctTimestampMicros)
		tw.beginStruct(10)
		tw.beginStruct(8) // TIMESTAMP
		tw.boolean(1, true)
		tw.beginStruct(2) // unit
		tw.beginStruct(2) // MICROS
		tw.endStruct()
		tw.endStruct()
		tw.endStruct()
		tw.endStruct()
	}
	tw.endStruct()
}

func (fw *fileWriter) columnChunk(spec colSpec, m chunkMeta) {
	tw := &fw.tw
	tw.beginStruct(0) // ColumnChunk
	tw.i64(2, m.offset)
	tw.beginStruct(3) // ColumnMetaData
	tw.i32(1, physicalType(spec.kind))
	tw.list(2, tI32, 2)
	tw.elemI32(encPlain)
	tw.elemI32(encRLE)
	tw.list(3, tBinary, 1)
	tw.elemStr(spec.name)
	tw.i32(4, codecSnappy)
	tw.i64(5, m.values)
	tw.i64(6, m.uncompressed)
	tw.i64(7, m.compressed)
	tw.i64(9, m.offset)
	tw.beginStruct(12) // Statistics
	tw.i64(3, m.nulls)
	if spec.stats {
		if lo, hi, ok := m.stats.encoded(spec.kind); ok {
			tw.binary(5, hi)
			tw.binary(6, lo)
		}
	}
	tw.endStruct()
	tw.endStruct()
	tw.endStruct()
}

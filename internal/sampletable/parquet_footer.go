package sampletable

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

// chunkMeta is what the footer says of one column chunk.
type chunkMeta struct {
	offset       int64 // of its first page
	values       int64
	nulls        int64
	uncompressed int64 // page headers included, as the format counts
	compressed   int64
	stats        colStats
}

// pageHeader is the PageHeader of a v1 data page of rows values, PLAIN
// values and RLE levels. It is valid until the next header or footer.
func (fw *parquetWriter) pageHeader(size, compressed, rows int) []byte {
	tw := &fw.tw
	tw.reset()
	tw.beginStruct(0) // PageHeader
	tw.i32(1, pageData)
	tw.i32(2, int32(size))
	tw.i32(3, int32(compressed))
	tw.beginStruct(5) // DataPageHeader
	tw.i32(1, int32(rows))
	tw.i32(2, encPlain)
	tw.i32(3, encRLE)
	tw.i32(4, encRLE)
	tw.endStruct()
	tw.endStruct()
	return tw.buf
}

// footer is the file's FileMetaData.
func (fw *parquetWriter) footer(rows int64) []byte {
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

func (fw *parquetWriter) schemaElement(spec colSpec) {
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

func (fw *parquetWriter) columnChunk(spec colSpec, m chunkMeta) {
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

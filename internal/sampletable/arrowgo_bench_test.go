package sampletable

import (
	"encoding/base64"
	"fmt"
	"io"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/klauspost/compress/s2"
)

// The comparison behind the Parquet writer (parquet_writer.go; the package
// doc's "The Parquet writer" has the figures): the same object written
// with arrow-go's parquet/file writer, set up as closely as its options
// allow: PLAIN, no dictionary, data pages v1 cut at PageSize, one row
// group, Snappy at standard speed, the Arrow schema stored, min/max of at
// most maxStatBytes, and no statistics on free text (arrow-go has no
// null-count-only setting).

// BenchmarkFromRecordAndEncodeArrowGo is BenchmarkFromRecordAndEncode with
// arrow-go's writer in place of the table's own (parquetWriter).
func BenchmarkFromRecordAndEncodeArrowGo(b *testing.B) {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(false),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithDataPageSize(PageSize),
		parquet.WithMaxStatsSize(maxStatBytes),
	}
	for _, c := range freeText {
		opts = append(opts, parquet.WithStatsFor(c, false))
	}
	props := parquet.NewWriterProperties(opts...)
	sc, err := pqarrow.ToParquet(Schema(), props, pqarrow.DefaultWriterProps())
	if err != nil {
		b.Fatal(err)
	}
	arrowSchema := base64.StdEncoding.EncodeToString(flight.SerializeSchema(Schema(), memory.DefaultAllocator))
	benchEncode(b, func() encodeFunc {
		aw := &arrowGoWriter{props: props, root: sc.Root(), arrowSchema: arrowSchema}
		return func(w io.Writer, eps []Episode) error {
			return aw.write(w, &episodeCells{runID: "run-1", step: 10, eps: eps})
		}
	})
}

// arrowGoWriter writes a parquetTable with arrow-go: per column, the
// cells gathered, then one WriteBatch per page of rows.
type arrowGoWriter struct {
	props       *parquet.WriterProperties
	root        *schema.GroupNode
	arrowSchema string
	def         []int16
	strs        []parquet.ByteArray
	ints        []int64
	flts        []float64
}

type noClose struct{ io.Writer }

func (aw *arrowGoWriter) write(w io.Writer, t parquetTable) error {
	meta := metadata.NewKeyValueMetadata()
	_ = meta.Append("ARROW:schema", aw.arrowSchema)
	pw, err := file.NewParquetWriterWithError(noClose{w}, aw.root, file.WithWriterProps(aw.props), file.WithWriteMetadata(meta))
	if err != nil {
		return err
	}
	rg := pw.AppendRowGroup()
	n := t.NumRows()
	for c, f := range Schema().Fields() {
		cw, err := rg.NextColumn()
		if err != nil {
			return err
		}
		aw.def, aw.strs, aw.ints, aw.flts = aw.def[:0], aw.strs[:0], aw.ints[:0], aw.flts[:0]
		for r := range n {
			ok := false
			switch f.Type.ID() {
			case arrow.STRING:
				var s string
				if s, ok = t.Str(c, r); ok {
					aw.strs = append(aw.strs, unsafe.Slice(unsafe.StringData(s), len(s))) // read only
				}
			case arrow.FLOAT64:
				var v float64
				if v, ok = t.Float(c, r); ok {
					aw.flts = append(aw.flts, v)
				}
			default:
				var v int64
				if v, ok = t.Int(c, r); ok {
					aw.ints = append(aw.ints, v)
				}
			}
			aw.def = append(aw.def, int16(boolInt(ok)))
		}
		// One WriteBatch per page of about PageSize value bytes, cut at a
		// row: arrow-go checks the page size only after a batch.
		for start, v := 0, 0; start < n; {
			end, size, v0 := start, 0, v
			for ; end < n && size < PageSize; end++ {
				switch {
				case aw.def[end] == 0:
					continue
				case f.Type.ID() == arrow.STRING:
					size += 4 + len(aw.strs[v])
				default:
					size += 8
				}
				v++
			}
			switch cw := cw.(type) {
			case *file.ByteArrayColumnChunkWriter:
				_, err = cw.WriteBatch(aw.strs[v0:v], aw.def[start:end], nil)
			case *file.Int64ColumnChunkWriter:
				_, err = cw.WriteBatch(aw.ints[v0:v], aw.def[start:end], nil)
			case *file.Float64ColumnChunkWriter:
				_, err = cw.WriteBatch(aw.flts[v0:v], aw.def[start:end], nil)
			default:
				err = fmt.Errorf("column %s: writer %T", f.Name, cw)
			}
			if err != nil {
				return err
			}
			start = end
		}
		if err := cw.Close(); err != nil {
			return err
		}
	}
	clear(aw.strs[:cap(aw.strs)])
	if err := rg.Close(); err != nil {
		return err
	}
	return pw.Close()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fastSnappy is Snappy at standard speed: arrow-go's own codec calls s2's
// "better" mode, about twice the CPU. Its codec registry is process-wide
// and only safe to change before any goroutine reads it, so the test
// binary registers this at init; decoding stays arrow-go's.
type fastSnappy struct{ compress.Codec }

func (fastSnappy) Encode(dst, src []byte) []byte { return s2.EncodeSnappy(dst, src) }

func (fastSnappy) EncodeLevel(dst, src []byte, _ int) []byte { return s2.EncodeSnappy(dst, src) }

func init() {
	if orig, err := compress.GetCodec(compress.Codecs.Snappy); err == nil {
		compress.RegisterCodec(compress.Codecs.Snappy, fastSnappy{Codec: orig})
	}
}

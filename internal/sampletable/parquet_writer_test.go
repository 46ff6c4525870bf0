package sampletable

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	arrowparquet "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
)

// Every file is read back with two readers that are not this writer:
// parquet-go and arrow-go's pqarrow, which also reads the stored Arrow
// schema.

func testSchema() *arrow.Schema {
	field := func(name string, t arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: true}
	}
	return arrow.NewSchema([]arrow.Field{
		field("text", arrow.BinaryTypes.String),
		field("n", arrow.PrimitiveTypes.Int64),
		field("x", arrow.PrimitiveTypes.Float64),
		field("at", &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}),
		field("free", arrow.BinaryTypes.String), // no min/max
		field("never", arrow.PrimitiveTypes.Int64),
	}, nil)
}

// table is a parquetTable of testSchema's columns; a nil cell is null.
type table [][]any

func (t table) NumRows() int { return len(t) }

func (t table) Str(col, row int) (string, bool) { s, ok := t[row][col].(string); return s, ok }

func (t table) Int(col, row int) (int64, bool) { i, ok := t[row][col].(int64); return i, ok }

func (t table) Float(col, row int) (float64, bool) { f, ok := t[row][col].(float64); return f, ok }

// rows are n rows whose text is about textBytes long and whose nulls vary
// by column: text every third row, x every fifth, free every seventh,
// never always.
func rows(n, textBytes int) table {
	t := make(table, n)
	for i := range t {
		text := fmt.Sprintf("%d:%s", i, strings.Repeat("word ", textBytes/5))
		t[i] = []any{text, int64(i) - 3, float64(i) / 4, int64(1_700_000_000_000_000 + i), "f" + text, nil}
		for col, every := range map[int]int{0: 3, 2: 5, 4: 7} {
			if i%every == 0 {
				t[i][col] = nil
			}
		}
	}
	return t
}

func write(t *testing.T, tbl parquetTable, noMinMax ...string) []byte {
	t.Helper()
	w, err := newParquetWriter(testSchema(), noMinMax...)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := w.write(&buf, tbl); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestEveryCellReadsBackInBothReaders(t *testing.T) {
	// From no rows to pages cut inside a column (700 rows of 5 KB) and a
	// value larger than a page; 13 rows end on a partial group of eight
	// definition levels.
	for _, size := range [][2]int{{0, 0}, {1, 10}, {13, 100}, {700, 5000}, {3, 3 << 20}} {
		t.Run(fmt.Sprintf("%d rows of %d bytes", size[0], size[1]), func(t *testing.T) {
			want := rows(size[0], size[1])
			b := write(t, want, "free")
			readsBackInBoth(t, b, want)
		})
	}
}

// Values long enough to be compressed on their own (bigValue) and short
// ones share pages, nulls between them, and every reader reads them all.
func TestPagesMixingBigAndSmallValuesReadBackInBothReaders(t *testing.T) {
	want := rows(40, 100)
	for i := range want {
		if i%4 == 1 {
			want[i][0] = fmt.Sprintf("%d:%s", i, strings.Repeat("long turn ", (bigValue+i*1000)/10))
		}
	}
	b := write(t, want, "free")
	readsBackInBoth(t, b, want)
}

// readsBackInBoth fails t unless both readers read b as want.
func readsBackInBoth(t *testing.T, b []byte, want table) {
	t.Helper()
	if got := readParquetGo(t, b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("parquet-go read\n%.300v\nwant\n%.300v", got, want)
	}
	if got := readPqarrow(t, b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pqarrow read\n%.300v\nwant\n%.300v", got, want)
	}
}

func readParquetGo(t *testing.T, b []byte) table {
	t.Helper()
	f := openParquet(t, b)
	var out table
	for _, rg := range f.RowGroups() {
		buf := make([]parquet.Row, rg.NumRows())
		rr := rg.Rows()
		n, err := rr.ReadRows(buf)
		if err != nil && err != io.EOF {
			t.Fatalf("parquet-go: %v", err)
		}
		_ = rr.Close()
		for _, row := range buf[:n] {
			cells := make([]any, len(row))
			for _, v := range row {
				switch {
				case v.IsNull():
				case v.Kind() == parquet.ByteArray:
					cells[v.Column()] = string(v.ByteArray())
				case v.Kind() == parquet.Double:
					cells[v.Column()] = v.Double()
				default:
					cells[v.Column()] = v.Int64()
				}
			}
			out = append(out, cells)
		}
	}
	return out
}

func readPqarrow(t *testing.T, b []byte) table {
	t.Helper()
	mem := memory.NewGoAllocator()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(b), arrowparquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatalf("pqarrow cannot read the file: %v", err)
	}
	defer tbl.Release()
	for i, f := range testSchema().Fields() {
		if got := tbl.Schema().Field(i); got.Name != f.Name || !arrow.TypeEqual(got.Type, f.Type) || !got.Nullable {
			t.Fatalf("pqarrow reads column %d as %v, want the stored %v", i, got, f)
		}
	}
	var out table
	for row := range int(tbl.NumRows()) {
		cells := make([]any, tbl.NumCols())
		for col := range cells {
			at := row
			for _, chunk := range tbl.Column(col).Data().Chunks() {
				if at >= chunk.Len() {
					at -= chunk.Len()
					continue
				}
				if chunk.IsValid(at) {
					switch a := chunk.(type) {
					case *array.String:
						cells[col] = a.Value(at)
					case *array.Int64:
						cells[col] = a.Value(at)
					case *array.Float64:
						cells[col] = a.Value(at)
					case *array.Timestamp:
						cells[col] = int64(a.Value(at))
					}
				}
				break
			}
		}
		out = append(out, cells)
	}
	return out
}

func TestAColumnIsCutIntoPagesAtTheFirstRowPastPageSize(t *testing.T) {
	tbl := rows(700, 5000) // 2.3 MB of text in the first column
	var want []int64       // rows per page
	rows, size := int64(0), 0
	for r := range tbl {
		if s, ok := tbl.Str(0, r); ok {
			size += 4 + len(s)
		}
		if rows++; size >= PageSize || r == len(tbl)-1 {
			want, rows, size = append(want, rows), 0, 0
		}
	}
	pages := openParquet(t, write(t, tbl)).RowGroups()[0].ColumnChunks()[0].Pages()
	defer pages.Close()
	var got []int64
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p.NumRows())
	}
	if len(want) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages of %v rows, want %v", got, want)
	}
}

func TestStatisticsAreTheColumnsMinAndMax(t *testing.T) {
	tbl := rows(20, 10)
	tbl[3][2], tbl[4][2], tbl[6][2] = math.NaN(), -2.5, 0.0
	tbl[7][0], tbl[8][0] = "!first", "~last"
	long := rows(3, 10)
	long[1][0] = strings.Repeat("x", maxStatBytes+1)

	i64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	f64 := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
	for _, tc := range []struct {
		name     string
		tbl      table
		col      string
		min, max []byte
		nulls    int64
	}{
		{"ints", tbl, "n", i64(-3), i64(16), 0},
		{"doubles, NaN left out, +0 as a min written -0", tbl, "x", f64(-2.5), f64(19.0 / 4), 4},
		{"strings", tbl, "text", []byte("!first"), []byte("~last"), 7},
		{"a string too long for statistics", long, "text", nil, nil, 1},
		{"a column without min/max", tbl, "free", nil, nil, 3},
		{"an all-null column", tbl, "never", nil, nil, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := openParquet(t, write(t, tc.tbl, "free"))
			for _, cc := range f.Metadata().RowGroups[0].Columns {
				md := cc.MetaData
				if md.PathInSchema[0] != tc.col {
					continue
				}
				st := md.Statistics
				if !bytes.Equal(st.MinValue, tc.min) || !bytes.Equal(st.MaxValue, tc.max) || st.NullCount != tc.nulls {
					t.Fatalf("min %x max %x nulls %d, want %x %x %d", st.MinValue, st.MaxValue, st.NullCount, tc.min, tc.max, tc.nulls)
				}
			}
		})
	}
}

func TestAMinOfPositiveZeroIsWrittenNegativeAndAMaxOfNegativeZeroPositive(t *testing.T) {
	var s colStats
	s.seeFloat(0)
	s.seeFloat(math.Copysign(0, -1))
	lo, hi, ok := s.encoded(kindFloat)
	minV, maxV := math.Float64frombits(binary.LittleEndian.Uint64(lo)), math.Float64frombits(binary.LittleEndian.Uint64(hi))
	if !ok || minV != 0 || !math.Signbit(minV) || maxV != 0 || math.Signbit(maxV) {
		t.Fatalf("min %v max %v ok %v, want -0 and +0", minV, maxV, ok)
	}
}

func TestAWriterKeepsNoCellTextOnceAFileIsWritten(t *testing.T) {
	w, err := newParquetWriter(testSchema())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.write(io.Discard, rows(5, 10)); err != nil {
		t.Fatal(err)
	}
	// Its buffers are kept for the next file; references to the cells'
	// strings would keep the caller's data alive with them.
	for i, s := range w.strs[:cap(w.strs)] {
		if s != "" {
			t.Fatalf("the writer still holds cell %d (%q)", i, s)
		}
	}
}

func TestAWriterKeepsItsPageBuffersUnlessAHugeValueGrewThem(t *testing.T) {
	w, err := newParquetWriter(testSchema())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rows table
		kept bool
	}{
		{"pages of ordinary rows", rows(700, 5000), true},
		{"a value of several pages", rows(3, 3*maxKeptPage), false},
		{"ordinary rows again", rows(13, 100), true},
	} {
		var buf bytes.Buffer
		if err := w.write(&buf, c.rows); err != nil {
			t.Fatal(err)
		}
		if got := cap(w.page) > 0 && cap(w.comp) > 0; got != c.kept {
			t.Errorf("after %s: page and compression buffers kept %v (page %d, comp %d bytes), want %v", c.name, got, cap(w.page), cap(w.comp), c.kept)
		}
		// What follows a dropped buffer is written whole all the same.
		if got := readParquetGo(t, buf.Bytes()); fmt.Sprint(got) != fmt.Sprint(c.rows) {
			t.Fatalf("after %s: read back %.200v, want %.200v", c.name, got, c.rows)
		}
	}
}

func TestNewWriterRefusesColumnsItCannotWrite(t *testing.T) {
	for _, f := range []arrow.Field{
		{Name: "c", Type: arrow.BinaryTypes.String},
		{Name: "c", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "c", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "c", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "c", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	} {
		if _, err := newParquetWriter(arrow.NewSchema([]arrow.Field{f}, nil)); err == nil || !strings.Contains(err.Error(), "column c is") {
			t.Errorf("%v: error %v, want the column refused", f, err)
		}
	}
}

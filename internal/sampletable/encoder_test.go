package sampletable

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	arrowparquet "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// These tests read the objects back with two readers that are not the
// writer: parquet-go (openParquet, cells) and arrow-go's pqarrow
// (readArrow), which also reads the stored Arrow schema.

// wantSchema is the Parquet schema the viewer reads: every column OPTIONAL
// (nullable), strings as BYTE_ARRAY annotated STRING, ints as INT64
// annotated signed 64-bit (arrow-go's annotation; pyarrow leaves plain
// int64 unannotated, which readers take the same way), doubles plain,
// created_at INT64 annotated TIMESTAMP(isAdjustedToUTC, MICROS).
func wantSchema() []string {
	return []string{
		"run_id BYTE_ARRAY OPTIONAL STRING",
		"step INT64 OPTIONAL INT(64,true)",
		"tag BYTE_ARRAY OPTIONAL STRING",
		"problem_id INT64 OPTIONAL INT(64,true)",
		"sample_id INT64 OPTIONAL INT(64,true)",
		"prompt BYTE_ARRAY OPTIONAL STRING",
		"completion BYTE_ARRAY OPTIONAL STRING",
		"trajectory BYTE_ARRAY OPTIONAL STRING",
		"answer BYTE_ARRAY OPTIONAL STRING",
		"env_name BYTE_ARRAY OPTIONAL STRING",
		"task BYTE_ARRAY OPTIONAL STRING",
		"info BYTE_ARRAY OPTIONAL STRING",
		"reward DOUBLE OPTIONAL -",
		"advantage DOUBLE OPTIONAL -",
		"metrics BYTE_ARRAY OPTIONAL STRING",
		"timing BYTE_ARRAY OPTIONAL STRING",
		"num_input_tokens INT64 OPTIONAL INT(64,true)",
		"num_output_tokens INT64 OPTIONAL INT(64,true)",
		"created_at INT64 OPTIONAL TIMESTAMP(isAdjustedToUTC=true,unit=MICROS)",
	}
}

func openParquet(t *testing.T, b []byte) *parquet.File {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("parquet-go cannot open the object: %v", err)
	}
	return f
}

// fileSchema renders the file's leaf columns as "name physical repetition
// logical".
func fileSchema(t *testing.T, f *parquet.File) []string {
	t.Helper()
	elems := f.Metadata().Schema
	if len(elems) == 0 || elems[0].NumChildren.V != int32(len(elems)-1) {
		t.Fatalf("schema root does not hold the %d columns flat: %+v", len(elems)-1, elems)
	}
	var got []string
	for _, e := range elems[1:] {
		logical := "-"
		if e.LogicalType.Value != nil {
			logical = e.LogicalType.String()
		}
		got = append(got, fmt.Sprintf("%s %s %s %s", e.Name, e.Type.V, e.RepetitionType.V, logical))
	}
	return got
}

// cells reads every row back as column name → rendered cell, nulls as
// "<null>", created_at as its raw int64 micros.
func cells(t *testing.T, f *parquet.File) []map[string]string {
	t.Helper()
	names := f.Schema().Columns()
	var out []map[string]string
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, rg.NumRows())
		n, err := rows.ReadRows(buf)
		if err != nil && n != len(buf) {
			t.Fatalf("reading rows: %v", err)
		}
		rows.Close()
		for _, row := range buf[:n] {
			m := map[string]string{}
			for _, v := range row {
				name := names[v.Column()][0]
				switch {
				case v.IsNull():
					m[name] = "<null>"
				case v.Kind() == parquet.ByteArray:
					m[name] = string(v.ByteArray())
				case v.Kind() == parquet.Double:
					m[name] = fmt.Sprint(v.Double())
				default:
					m[name] = fmt.Sprint(v.Int64())
				}
			}
			out = append(out, m)
		}
	}
	return out
}

func TestTheObjectHasTheViewersSchemaSnappyAndTheArrowSchema(t *testing.T) {
	var buf bytes.Buffer
	if err := NewEncoder().Encode(&buf, "run-1", 10, 0, []Episode{episodeRow()}); err != nil {
		t.Fatal(err)
	}
	f := openParquet(t, buf.Bytes())

	got := fileSchema(t, f)
	if want := wantSchema(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("schema:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ts := f.Metadata().Schema[19].LogicalType.Value.(*format.TimestampType)
	if _, micros := ts.Unit.Value.(*format.MicroSeconds); !ts.IsAdjustedToUTC || !micros {
		t.Fatalf("created_at is %v, want UTC-adjusted microseconds", ts)
	}

	rgs := f.Metadata().RowGroups
	if len(rgs) != 1 {
		t.Fatalf("%d row groups, want 1", len(rgs))
	}
	for _, cc := range rgs[0].Columns {
		md := cc.MetaData
		col := md.PathInSchema[0]
		if md.Codec != format.Snappy {
			t.Errorf("column %v is %v, want SNAPPY", col, md.Codec)
		}
		if dict := slices.Contains(md.Encoding, format.RLEDictionary); dict || !slices.Contains(md.Encoding, format.Plain) {
			t.Errorf("column %s has encodings %v, want PLAIN values", col, md.Encoding)
		}
		st := md.Statistics
		hasStats := len(st.MinValue) > 0 && len(st.MaxValue) > 0
		if slices.Contains(freeText, col) {
			// Free text: no min/max (schema.go).
			if hasStats {
				t.Errorf("free-text column %s has statistics %+v; want none", col, st)
			}
			continue
		}
		if !hasStats {
			t.Errorf("column %s has no min/max statistics: %+v", col, st)
		}
	}
	if _, ok := f.Lookup("ARROW:schema"); !ok {
		t.Error("the Arrow schema is not stored in the file")
	}
}

func TestRowsReadBackWithTheirSampleIDsAndDefaults(t *testing.T) {
	full := episodeRow()
	sparse := Episode{Step: 10, Trajectory: `[{"advantage":null}]`, CreatedAt: time.UnixMicro(1).UTC()}
	nan := episodeRow()
	nan.Reward = ptr(math.NaN())
	nan.ProblemID = nil

	var buf bytes.Buffer
	const rangeIdx = 3
	if err := NewEncoder().Encode(&buf, "run-1", 10, rangeIdx, []Episode{full, sparse, nan}); err != nil {
		t.Fatal(err)
	}
	got := cells(t, openParquet(t, buf.Bytes()))

	base := int64(rangeIdx) << 32
	fullRow := map[string]string{
		"run_id": "run-1", "step": "10", "tag": "rollout", "problem_id": "7", "sample_id": fmt.Sprint(base),
		"prompt": "What is 2+2?", "completion": *full.Completion, "trajectory": full.Trajectory, "answer": "4",
		"env_name": "gsm8k", "task": `{"kind":"math"}`, "info": `{"source":"train","ids":[1,2]}`,
		"reward": "1", "advantage": "0.5", "metrics": `{"len":12,"ok":true}`, "timing": `{"generation_ms":120.5}`,
		"num_input_tokens": "10", "num_output_tokens": "2",
		"created_at": fmt.Sprint(full.CreatedAt.UnixMicro()),
	}
	sparseRow := map[string]string{
		"run_id": "run-1", "step": "10", "tag": "", "problem_id": fmt.Sprint(base + 1), "sample_id": fmt.Sprint(base + 1),
		"prompt": "", "completion": "<null>", "trajectory": `[{"advantage":null}]`, "answer": "",
		"env_name": "<null>", "task": "<null>", "info": "<null>", "reward": "<null>", "advantage": "<null>",
		"metrics": "<null>", "timing": "<null>", "num_input_tokens": "<null>", "num_output_tokens": "<null>",
		"created_at": "1",
	}
	nanRow := map[string]string{}
	for k, v := range fullRow {
		nanRow[k] = v
	}
	nanRow["reward"], nanRow["problem_id"], nanRow["sample_id"] = "NaN", fmt.Sprint(base+2), fmt.Sprint(base+2)

	want := []map[string]string{fullRow, sparseRow, nanRow}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range want {
		for _, col := range Schema().Fields() {
			if got[i][col.Name] != want[i][col.Name] {
				t.Errorf("row %d %s = %q, want %q", i, col.Name, got[i][col.Name], want[i][col.Name])
			}
		}
	}
}

func TestAnEncoderWritesEachObjectOnItsOwn(t *testing.T) {
	enc := NewEncoder()
	var first, second bytes.Buffer
	a := episodeRow()
	b := episodeRow()
	b.Step, b.Tag = 20, "second"
	if err := enc.Encode(&first, "run-1", 10, 0, []Episode{a, a}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(&second, "run-2", 20, 1, []Episode{b}); err != nil {
		t.Fatal(err)
	}
	rows := cells(t, openParquet(t, second.Bytes()))
	if len(rows) != 1 || rows[0]["run_id"] != "run-2" || rows[0]["tag"] != "second" || rows[0]["sample_id"] != fmt.Sprint(int64(1)<<32) {
		t.Fatalf("second object rows %v", rows)
	}
	if n := len(cells(t, openParquet(t, first.Bytes()))); n != 2 {
		t.Fatalf("first object has %d rows, want 2", n)
	}
}

func TestEncodeRowsWritesTheObjectEncodeWritesOfTheSameRows(t *testing.T) {
	full, sparse := episodeRow(), Episode{Step: 10, Trajectory: `[{"messages":[]}]`, CreatedAt: time.Unix(1, 0).UTC()}
	sparse.Tag = "sparse"
	var byValue, byPointer bytes.Buffer
	if err := NewEncoder().Encode(&byValue, "run-1", 10, 3, []Episode{full, sparse, full}); err != nil {
		t.Fatal(err)
	}
	if err := NewEncoder().EncodeRows(&byPointer, "run-1", 10, 3, []*Episode{&full, &sparse, &full}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(byValue.Bytes(), byPointer.Bytes()) {
		t.Fatalf("EncodeRows wrote %d bytes unlike Encode's %d", byPointer.Len(), byValue.Len())
	}
	if rows := cells(t, openParquet(t, byPointer.Bytes())); len(rows) != 3 || rows[1]["tag"] != "sparse" {
		t.Fatalf("EncodeRows rows %v", rows)
	}
	other := full
	other.Step = 20
	if err := NewEncoder().EncodeRows(&byPointer, "run-1", 10, 0, []*Episode{&full, &other}); err == nil {
		t.Fatal("EncodeRows took a row of another step")
	}
}

// closeRecorder is a writer that notes whether it was closed.
type closeRecorder struct {
	bytes.Buffer
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestEncodeLeavesTheWriterOpen(t *testing.T) {
	var w closeRecorder
	if err := NewEncoder().Encode(&w, "run-1", 10, 0, []Episode{episodeRow()}); err != nil {
		t.Fatal(err)
	}
	if w.closed {
		t.Fatal("Encode closed the caller's writer")
	}
	if w.Len() == 0 {
		t.Fatal("nothing written")
	}
}

func TestEncodeRefusesRowsThatDoNotBelongInTheObject(t *testing.T) {
	other := episodeRow()
	other.Step = 11
	empty := episodeRow()
	empty.Trajectory = ""
	tests := []struct {
		name     string
		rangeIdx int64
		eps      []Episode
		want     string
	}{
		{"an episode of another step", 0, []Episode{episodeRow(), other}, "sampletable: episode 1 is of step 11, not 10"},
		{"an empty trajectory", 0, []Episode{empty}, "sampletable: episode 0 has an empty trajectory, which has no row"},
		{"a range past 2^21, whose ids would pass 2^53", 1 << 21, []Episode{episodeRow()}, "sampletable: sample_id range 2097152 is outside [0, 2^21)"},
		{"a negative range", -1, []Episode{episodeRow()}, "sampletable: sample_id range -1 is outside [0, 2^21)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := NewEncoder().Encode(&buf, "run-1", 10, tt.rangeIdx, tt.eps)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Fatalf("%d bytes written for a refused object", buf.Len())
			}
		})
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestAWriteFailureIsReturned(t *testing.T) {
	err := NewEncoder().Encode(failingWriter{}, "run-1", 10, 0, []Episode{episodeRow()})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error %v, want the writer's", err)
	}
}

// manyRows are n episodes whose text and nulls vary by row: every third
// has no completion, every fifth no reward, every seventh no env_name.
func manyRows(n, textBytes int) []Episode {
	eps := make([]Episode, n)
	for i := range eps {
		ep := episodeRow()
		ep.Prompt = fmt.Sprintf("%d:%s", i, strings.Repeat("word ", textBytes/5))
		if i%3 == 0 {
			ep.Completion = nil
		}
		if i%5 == 0 {
			ep.Reward = nil
		}
		if i%7 == 0 {
			ep.EnvName = nil
		}
		ep.NumInputTokens = ptr(int64(i))
		eps[i] = ep
	}
	return eps
}

func TestRowsOfManyPagesAndMixedNullsReadBackInBothReaders(t *testing.T) {
	for _, tc := range []struct {
		name            string
		rows, textBytes int
	}{
		{"one row", 1, 10},
		{"rows not a multiple of eight, one page", 13, 100},
		{"pages cut inside the column", 700, 5000},
		{"one value larger than a page", 3, 3 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := manyRows(tc.rows, tc.textBytes)
			var buf bytes.Buffer
			if err := NewEncoder().Encode(&buf, "run-1", 10, 5, eps); err != nil {
				t.Fatal(err)
			}
			got := cells(t, openParquet(t, buf.Bytes()))
			if len(got) != len(eps) {
				t.Fatalf("parquet-go read %d rows, want %d", len(got), len(eps))
			}
			tbl := readArrow(t, buf.Bytes())
			defer tbl.Release()
			if tbl.NumRows() != int64(len(eps)) {
				t.Fatalf("pqarrow read %d rows, want %d", tbl.NumRows(), len(eps))
			}
			for i, ep := range eps {
				row := got[i]
				want := map[string]string{
					"prompt":           ep.Prompt,
					"sample_id":        fmt.Sprint(5<<32 + i),
					"num_input_tokens": fmt.Sprint(i),
					"completion":       "<null>",
					"reward":           "<null>",
					"env_name":         "<null>",
				}
				if ep.Completion != nil {
					want["completion"] = *ep.Completion
				}
				if ep.Reward != nil {
					want["reward"] = fmt.Sprint(*ep.Reward)
				}
				if ep.EnvName != nil {
					want["env_name"] = *ep.EnvName
				}
				for k, v := range want {
					if row[k] != v {
						t.Fatalf("row %d %s = %.40q, want %.40q", i, k, row[k], v)
					}
				}
				if p := arrowString(t, tbl, "prompt", i); p != ep.Prompt {
					t.Fatalf("pqarrow row %d prompt = %.40q, want %.40q", i, p, ep.Prompt)
				}
			}
		})
	}
}

func readArrow(t *testing.T, b []byte) arrow.Table {
	t.Helper()
	mem := memory.NewGoAllocator()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(b), arrowparquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		t.Fatalf("pqarrow cannot read the object: %v", err)
	}
	if tz := tbl.Schema().Field(18).Type.String(); tz != "timestamp[us, tz=UTC]" {
		t.Fatalf("pqarrow reads created_at as %s, want timestamp[us, tz=UTC] from the stored Arrow schema", tz)
	}
	return tbl
}

func arrowString(t *testing.T, tbl arrow.Table, name string, row int) string {
	t.Helper()
	i := Schema().FieldIndices(name)[0]
	for _, c := range tbl.Column(i).Data().Chunks() {
		if row < c.Len() {
			return c.(*array.String).Value(row)
		}
		row -= c.Len()
	}
	t.Fatalf("no row %d in %s", row, name)
	return ""
}

func TestAnObjectOfNoRowsReadsBackEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := NewEncoder().Encode(&buf, "run-1", 10, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := cells(t, openParquet(t, buf.Bytes())); len(got) != 0 {
		t.Fatalf("%d rows, want none", len(got))
	}
	tbl := readArrow(t, buf.Bytes())
	defer tbl.Release()
	if tbl.NumRows() != 0 {
		t.Fatalf("pqarrow: %d rows, want none", tbl.NumRows())
	}
}

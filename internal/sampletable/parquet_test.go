package sampletable

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The file writer is checked against two readers: parquet-go (the cells
// helper) and arrow-go's pqarrow, which also reads the stored Arrow schema.

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
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(b), parquet.NewReaderProperties(mem), pqarrow.ArrowReadProperties{}, mem)
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

func TestStatisticsAreTheColumnsMinAndMax(t *testing.T) {
	eps := manyRows(20, 10)
	eps[3].Advantage = ptr(math.NaN())
	eps[4].Advantage = ptr(-2.5)
	eps[5].Advantage = ptr(0.0)
	eps[6].Tag = "a-tag"
	eps[7].Tag = "z-tag"
	eps[8].Answer = strings.Repeat("x", maxStatBytes+1)
	var buf bytes.Buffer
	if err := NewEncoder().Encode(&buf, "run-1", 10, 0, eps); err != nil {
		t.Fatal(err)
	}
	f := openParquet(t, buf.Bytes())
	stats := map[string][2][]byte{}
	nulls := map[string]int64{}
	for _, cc := range f.Metadata().RowGroups[0].Columns {
		md := cc.MetaData
		stats[md.PathInSchema[0]] = [2][]byte{md.Statistics.MinValue, md.Statistics.MaxValue}
		nulls[md.PathInSchema[0]] = md.Statistics.NullCount
	}
	i64 := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	f64 := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
	for _, tc := range []struct {
		col      string
		min, max []byte
		nulls    int64
	}{
		{"num_input_tokens", i64(0), i64(19), 0},
		{"advantage", f64(-2.5), f64(0.5), 0}, // NaN left out
		{"reward", f64(1), f64(1), 4},         // rows 0, 5, 10, 15 null
		{"tag", []byte("a-tag"), []byte("z-tag"), 0},
		{"answer", nil, nil, 0}, // a value too long for statistics
		{"prompt", nil, nil, 0}, // free text
		{"completion", nil, nil, 7},
	} {
		got := stats[tc.col]
		if !bytes.Equal(got[0], tc.min) || !bytes.Equal(got[1], tc.max) || nulls[tc.col] != tc.nulls {
			t.Errorf("%s: min %x max %x nulls %d, want %x %x %d", tc.col, got[0], got[1], nulls[tc.col], tc.min, tc.max, tc.nulls)
		}
	}
}

func TestAMinOfPositiveZeroIsWrittenNegative(t *testing.T) {
	var s colStats
	s.seeFloat(0)
	s.seeFloat(3)
	lo, hi, ok := s.encoded(kindFloat)
	if !ok || !math.Signbit(math.Float64frombits(binary.LittleEndian.Uint64(lo))) || math.Float64frombits(binary.LittleEndian.Uint64(hi)) != 3 {
		t.Fatalf("min %x max %x ok %v, want -0 and 3", lo, hi, ok)
	}
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

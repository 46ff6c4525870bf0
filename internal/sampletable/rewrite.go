package sampletable

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// RewriteRunID returns the sample object src with every run_id set to
// runID and nothing else changed: prime-sync uses it to move an object
// written offline (run_id = the local id) onto the platform run. The rows,
// their order, every other column and every sample_id stay as they are,
// and the object is written with the encoder's settings, so it reads as if
// the exporter had uploaded it online.
//
// src must be a sample table object: its schema is checked against the
// table's, since rewriting any other file would upload it under the wrong
// name.
func RewriteRunID(src []byte, runID string) ([]byte, error) {
	mem := memory.NewGoAllocator()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(src), parquet.NewReaderProperties(mem),
		pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, fmt.Errorf("sampletable: reading the object: %w", err)
	}
	defer tbl.Release()
	schema := Schema()
	if err := sameColumns(tbl.Schema(), schema); err != nil {
		return nil, err
	}

	cols := make([]arrow.Array, tbl.NumCols())
	for i := range cols {
		// An object the encoder wrote reads back as one chunk a column; a
		// reader may split a column, so chunks are joined.
		col, err := array.Concatenate(tbl.Column(i).Data().Chunks(), mem)
		if err != nil {
			return nil, fmt.Errorf("sampletable: reading column %s: %w", schema.Field(i).Name, err)
		}
		defer col.Release()
		cols[i] = col
	}

	var buf bytes.Buffer
	buf.Grow(len(src) + int(tbl.NumRows())*len(runID))
	// The encoder's writer, so the object is the one it writes online.
	if err := NewEncoder().fw.write(&buf, &arrayCells{cols: cols, runID: runID}); err != nil {
		return nil, fmt.Errorf("sampletable: writing the object: %w", err)
	}
	return buf.Bytes(), nil
}

// arrayCells are the columns of an object read back, with every non-null
// run_id replaced.
type arrayCells struct {
	cols  []arrow.Array
	runID string
}

func (t *arrayCells) NumRows() int { return t.cols[0].Len() }

func (t *arrayCells) Str(col, row int) (string, bool) {
	a := t.cols[col].(*array.String)
	if a.IsNull(row) {
		return "", false
	}
	if col == iRunID {
		return t.runID, true
	}
	return a.Value(row), true
}

func (t *arrayCells) Int(col, row int) (int64, bool) {
	a := t.cols[col]
	if a.IsNull(row) {
		return 0, false
	}
	if ts, ok := a.(*array.Timestamp); ok {
		return int64(ts.Value(row)), true
	}
	return a.(*array.Int64).Value(row), true
}

func (t *arrayCells) Float(col, row int) (float64, bool) {
	a := t.cols[col].(*array.Float64)
	if a.IsNull(row) {
		return 0, false
	}
	return a.Value(row), true
}

// sameColumns holds when got has want's column names and types, in order.
func sameColumns(got, want *arrow.Schema) error {
	if got.NumFields() != want.NumFields() {
		return fmt.Errorf("sampletable: the object has %d columns, the sample table %d", got.NumFields(), want.NumFields())
	}
	for i, f := range want.Fields() {
		if g := got.Field(i); g.Name != f.Name || !arrow.TypeEqual(g.Type, f.Type) {
			return fmt.Errorf("sampletable: the object's column %d is %s %s, the sample table's %s %s", i+1, g.Name, g.Type, f.Name, f.Type)
		}
	}
	return nil
}

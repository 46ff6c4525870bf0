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

	// The columns are rebuilt on the table's own schema, without the field
	// ids the reader attached, so the file is the one the encoder writes.
	cols := make([]arrow.Column, tbl.NumCols())
	for i := range cols {
		col := tbl.Column(i)
		if i != 0 { // run_id is the first column (Schema)
			cols[i] = *arrow.NewColumn(schema.Field(i), col.Data())
			defer cols[i].Release()
			continue
		}
		chunks := make([]arrow.Array, 0, len(col.Data().Chunks()))
		for _, c := range col.Data().Chunks() {
			chunks = append(chunks, sameString(mem, c, runID))
		}
		ch := arrow.NewChunked(col.DataType(), chunks)
		for _, c := range chunks {
			c.Release()
		}
		cols[i] = *arrow.NewColumn(schema.Field(i), ch)
		ch.Release()
		defer cols[i].Release()
	}
	out := array.NewTable(schema, cols, tbl.NumRows())
	defer out.Release()

	var buf bytes.Buffer
	buf.Grow(len(src) + int(tbl.NumRows())*len(runID))
	// One row group, as the encoder writes it.
	if err := pqarrow.WriteTable(out, &buf, max(tbl.NumRows(), 1), writerProperties(mem), arrowWriterProperties()); err != nil {
		return nil, fmt.Errorf("sampletable: writing the object: %w", err)
	}
	return buf.Bytes(), nil
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

// sameString is a run_id chunk like like with every value runID; a null stays
// null.
func sameString(mem memory.Allocator, like arrow.Array, runID string) arrow.Array {
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.Reserve(like.Len())
	b.ReserveData(like.Len() * len(runID))
	for i := range like.Len() {
		if like.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(runID)
		}
	}
	return b.NewArray()
}

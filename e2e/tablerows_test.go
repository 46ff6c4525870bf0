package e2e

import (
	"bytes"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// tableRow is one row of a sample object as parquet-go reads it: column name
// → string (STRING columns), int64 (INT64, created_at in microseconds),
// float64 (DOUBLE), or nil for a null.
type tableRow map[string]any

// readTableRows checks an object's schema and compression with readObject
// (logs_test.go) and returns every row with all its columns.
func readTableRows(t *testing.T, body []byte) []tableRow {
	t.Helper()
	readObject(t, body)
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("parquet-go cannot open the object: %v", err)
	}
	cols := f.Schema().Columns()
	var out []tableRow
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, rg.NumRows())
		n, _ := rows.ReadRows(buf)
		rows.Close()
		for _, pr := range buf[:n] {
			row := tableRow{}
			for _, v := range pr {
				name := cols[v.Column()][0]
				switch {
				case v.IsNull():
					row[name] = nil
				case v.Kind() == parquet.ByteArray:
					row[name] = string(v.ByteArray())
				case v.Kind() == parquet.Int64:
					row[name] = v.Int64()
				case v.Kind() == parquet.Double:
					row[name] = v.Double()
				default:
					t.Fatalf("column %s has a value of kind %v", name, v.Kind())
				}
			}
			out = append(out, row)
		}
	}
	return out
}

package platformtest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Row is what an independent reader (parquet-go, not the writer's own
// arrow-go) finds in a row of a sample object: the columns the tests of
// an upload look at.
type Row struct {
	RunID    string
	Step     int64
	SampleID int64
	Prompt   string
}

// Rows reads every row of a sample object; the test fails if parquet-go
// cannot open it.
func Rows(t testing.TB, body []byte) []Row {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	require.NoError(t, err, "parquet-go opens the object")
	cols := f.Schema().Columns()
	var out []Row
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, rg.NumRows())
		n, _ := rows.ReadRows(buf)
		require.NoError(t, rows.Close())
		for _, pr := range buf[:n] {
			var r Row
			for _, v := range pr {
				switch cols[v.Column()][0] {
				case "run_id":
					r.RunID = string(v.ByteArray())
				case "step":
					r.Step = v.Int64()
				case "sample_id":
					r.SampleID = v.Int64()
				case "prompt":
					r.Prompt = string(v.ByteArray())
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// Objects lists a run's objects on the fake platform as "step S:" and each
// row's "prompt#range:row" (its sample_id), in confirm order. The test
// fails on an object that was not confirmed, on a row of another run, and
// on a row whose step is not its object's.
func Objects(t testing.TB, run rfttest.Run) []string {
	t.Helper()
	var out []string
	for _, o := range run.Objects {
		require.True(t, o.Confirmed, "object %s is confirmed", o.Key)
		var parts []string
		for _, r := range Rows(t, o.Body) {
			require.Equal(t, run.ID, r.RunID)
			require.Equal(t, o.Step, r.Step, "rows are keyed by the object's step")
			parts = append(parts, fmt.Sprintf("%s#%d:%d", r.Prompt, r.SampleID>>32, r.SampleID&(1<<32-1)))
		}
		out = append(out, fmt.Sprintf("step %d: %s", o.Step, strings.Join(parts, " ")))
	}
	return out
}

package sampletable

// AppendCellText appends the text of every string cell of eps, as rows of
// run runID and step step, in column order within each row: the bytes a
// writer of the table must compress, whatever it does besides. The Snappy
// floor (BenchmarkSnappyFloor, and scripts/bench.sh at its loads' episodes)
// compresses exactly this in pages of flatparquet.PageSize.
func AppendCellText(dst []byte, runID string, step int64, eps []Episode) []byte {
	cells := &episodeCells{runID: runID, step: step, eps: eps}
	cols := len(Schema().Fields())
	for i := range eps {
		for c := range cols {
			if v, ok := cells.Str(c, i); ok {
				dst = append(dst, v...)
			}
		}
	}
	return dst
}

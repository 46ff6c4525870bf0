package sampletable

// AppendCellText appends the text of every string cell of eps, as rows of
// run runID and step step, column by column as a Parquet file lays them
// out (each column's cells in row order): the bytes a writer of the table
// must compress, whatever it does besides. The Snappy floor
// (BenchmarkSnappyFloor, and scripts/bench.sh at its loads' episodes)
// compresses exactly this in pages of PageSize. The order
// matters to Snappy: a row's columns repeat each other (the completion is
// the trajectory's last branch, whose messages repeat the prompt), so
// text in row order compresses about twice as fast as the same text in
// columns, which is what every writer of the table compresses.
func AppendCellText(dst []byte, runID string, step int64, eps []Episode) []byte {
	cells := &episodeCells{runID: runID, step: step, eps: eps}
	for c := range len(Schema().Fields()) {
		for i := range eps {
			if v, ok := cells.Str(c, i); ok {
				dst = append(dst, v...)
			}
		}
	}
	return dst
}

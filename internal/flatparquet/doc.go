// Package flatparquet writes a flat table as one Parquet file: the sample
// table's format (rft-api.md "The training sample table"), written here
// directly. Values go once from the caller's cells into a page buffer and
// once through Snappy; a value of bigValue (64 KiB) or more is not copied
// at all but compressed from where it lies.
//
// The file, which every reader the viewer uses decodes:
//
//   - One row group. Every column is OPTIONAL: strings are BYTE_ARRAY
//     annotated STRING, ints INT64 annotated INT(64, signed), doubles
//     DOUBLE, and timestamps INT64 annotated TIMESTAMP(UTC, MICROS). The
//     Arrow schema is stored under ARROW:schema, as pyarrow and pqarrow
//     store it, so Arrow readers get the time zone back.
//   - Data pages v1: RLE definition levels, then PLAIN values, compressed
//     together with Snappy at its standard speed. No dictionary: the text
//     columns are mostly unique, so a dictionary never pays. A column's
//     page is cut at the first row past PageSize value bytes.
//   - A page is one raw Snappy block, compressed in pieces (snappy.go):
//     small values are gathered and compressed together, a big value
//     alone, and the pieces' elements follow each other in the block. A
//     copy element reaches back into the output before it, so elements
//     from separate pieces concatenate into a valid block; a big value
//     only loses the matches it would have found in the bytes before it.
//     At 200 KB episodes that made objects 1.9 % larger and took the
//     page copy, 3 % of the collector's CPU, away.
//   - A cell lying inside a big cell of another column of its row (the
//     table's completion is its trajectory's last branch, the same bytes)
//     is not compressed again: its elements are derived from the big
//     cell's, compressed once (derive.go, shared.go). Elements inside the
//     stretch are kept byte for byte; a long copy from before it (the
//     last branch repeating the first) is replaced by the elements of
//     what it copies, and later copies of those bytes copy their repeat
//     inside the stretch. Cells share memory only when the table built
//     them so, which a pointer comparison tells; a stretch that repeats
//     nothing before it, with much before it, is compressed afresh, and
//     so is one whose copies would turn more than a 32nd of it into
//     literals. At 200 KB episodes this took Snappy's work on the
//     completion (about a quarter of the collector's CPU) down to a walk
//     of the trajectory's elements, and objects are within 0.3 % of their
//     size (derive_test.go).
//   - Statistics. Every column chunk has a null count. It has a min and a
//     max in the column's sort order (signed ints, doubles without NaN and
//     with the format's rule for zeros, strings bytewise), except for the
//     columns the caller names and for a chunk holding a string longer
//     than MaxStatBytes. Pages carry no statistics.
//   - Footer and page headers in the Thrift compact protocol: only the
//     subset they use (thrift.go).
//
// Decision (issue 18): keep this writer, since arrow-go's is not within
// 10 % of it in episodes/s and MB/op at either size. arrow-go v18.8.0's
// parquet/file writer was set up as closely as its options allow: PLAIN,
// no dictionary, pages v1 of PageSize, one row group, the Arrow schema
// stored, and Snappy at standard speed. Its own codec calls s2's "better"
// mode, about twice the CPU, so a faster one is registered in the test
// binary. Min/max are capped at MaxStatBytes. The free-text columns have
// statistics off: arrow-go cannot keep a null count without a min and a
// max, and it drops each of those separately when it is too long. Per
// column, cells are gathered, then written with the typed WriteBatch, one
// batch per page of rows. Its files pass the same two-reader tests
// (parquet-go and pqarrow) and are about 0.1 % larger. Measured with
// BenchmarkFromRecordAndEncode, a step mapped and written (medians of 7
// interleaved rounds of 20 iterations each, 2 cores; the last column is
// arrow-go against this writer):
//
//	shape, body        this writer            arrow-go parquet/file
//	                   episodes/s   MB/op     episodes/s   MB/op
//	2 KB, map            44,092      1.14       24,817      6.46    -44 %, 5.7x
//	2 KB, JSON text      34,604      1.75       26,044      7.07    -25 %, 4.0x
//	200 KB, map             811      8.60          654     21.76    -19 %, 2.5x
//	200 KB, JSON text       681      8.45          583     21.71    -14 %, 2.6x
//	Snappy floor (BenchmarkSnappyFloor): 118,414 and 1,478 episodes/s
//
// arrow-go builds new column writers for every file. Their encoder
// buffers grow by doubling, their page buffers are allocated afresh, and
// every value is copied once more: into the encoder, then next to the
// levels. On 2 KB episodes that is 40 % of its bytes from its allocator
// and 42 % from growing page buffers; a pooled allocator
// (parquet.WithAllocator) did not change them. In the whole collector
// (scripts/bench.sh --quick -reps 5 -configs prime, 3 interleaved runs,
// medians), arrow-go took 37.5 against 32.5 ms of CPU per 1,000 2 KB
// episodes, and 1,775 against 1,275 ms per 1,000 200 KB ones, where it
// also managed 807 episodes/s against 1,086. 2 KB throughput in runs this
// short was too noisy to rank (this writer 33,700 to 34,700 episodes/s,
// arrow-go 28,200 to 44,500). To measure again, from the repository root:
//
//	go test -c -o /tmp/st.test ./internal/sampletable
//	cd internal/sampletable
//	for r in 1 2 3 4 5 6 7; do
//	  for b in FromRecordAndEncode FromRecordAndEncodeArrowGo SnappyFloor; do
//	    /tmp/st.test -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchmem -test.benchtime=20x
//	  done
//	done
package flatparquet

// Package jsonscan reads JSON text in place. Episodes carry megabytes of
// chat, usually serialised by the trainer already. This package slices
// such text into spans (a value's text, an object's raw keys and values,
// an array's elements) and never decodes it into values to encode it
// again. Values keep the bytes the trainer wrote, and a walk costs one
// scan and no allocation per value; Unquote allocates only for a literal
// with escapes, Rewrite only when it changes the text.
//
// It accepts exactly what encoding/json accepts, nesting included, to the
// same depth; FuzzScannerAgreesWithEncodingJSON holds it to that, and to
// encoding/json's key order and compaction. Text is taken as it comes:
// callers make it valid UTF-8 first, as the sample table's columns need.
//
// Text is checked once, and the check (EachMember) also tells whether the
// text is compact, so that compact text is not read again to find out; an
// array's run of numbers is checked in one loop. Skip and Members walk
// text the scanner accepted before without checking it again, finding a
// value's end by its brackets and quotes alone, and a string's end by its
// first unescaped quote (FuzzSkipAgreesWithValue holds them to Value and
// Object); a native document is read level by level that way after its
// body's one checking scan. Finding the next bracket, quote or whitespace
// runs 32 bytes an instruction with AVX2 (stop_amd64.s, pjson's
// IndexSpecial for the check's string ends, the runtime's IndexByte for a
// walk's), eight a step elsewhere.
//
// Against the straightforward encoding/json reading that gives the same
// text (the body into a map of json.RawMessage, the trajectory token by
// token), on one episode body given as JSON text (sampletable's
// BenchmarkBodyText, medians of 3 runs, 2 cores):
//
//	body                 scanner                  encoding/json
//	single-turn, 3 KB    8.1 µs, 8 allocs, 3.7 KB   56 µs, 116 allocs, 24 KB
//	agentic, 200 KB      0.51 ms, 8 allocs, 214 KB  2.8 ms, 159 allocs, 1.3 MB
//
// That is 5x to 7x faster, with a sixth of the bytes. Measured with:
//
//	go test -run '^$' -bench '^BenchmarkBodyText$' -benchmem ./internal/sampletable
package jsonscan

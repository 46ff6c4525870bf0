package rfttest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/parquet-go/parquet-go"
)

// Discard mode (Options.DiscardObjects) is for benchmarks, which push
// gigabytes of sample objects through the fake: keeping them, in the object
// and in the request log, would make the fake the largest process of the
// measurement. Storage then keeps of each PUT only its row count, read from
// the Parquet footer with parquet-go rather than the arrow-go that writes
// the objects, so the count is an independent reading of what was sent.
// The request log records such a PUT with an empty body, and Run.Objects
// have no Body; everything else (signatures, faults, confirm rules) is as
// in the normal mode, but for the ETag: an xxhash of the bytes, as opaque
// to a client as S3's ETag of a multipart object, where the normal mode
// gives their MD5. MD5 cost the fake about a microsecond per 2 KB episode,
// on the cores the measured collector needs (docs/performance.md); the
// exporter never reads an ETag.

// discardState is what discard mode keeps instead of object bytes; guarded
// by Server.mu.
type discardState struct {
	rows map[string]int64 // by key, of every object PUT in discard mode
	// bodies are the buffers PUT bodies are read into, kept between PUTs:
	// the fake shares the benchmark's cores with the collector measured,
	// and reading each body into new memory cost it a third of its time.
	bodies sync.Pool
}

func newDiscardState() *discardState {
	return &discardState{rows: make(map[string]int64)}
}

// putSummary is what a discarded PUT body leaves behind: its row count (or
// why it has none) and its ETag.
type putSummary struct {
	rows int64
	err  error // the body is not a Parquet file with a readable footer
	etag string
}

type putSummaryKey struct{}

// summarized returns the summary discardBodies put in r's context.
func summarized(r *http.Request) (putSummary, bool) {
	sum, ok := r.Context().Value(putSummaryKey{}).(putSummary)
	return sum, ok
}

// discardBodies wraps the fake's handler in discard mode: a storage PUT
// reaches it with an empty body and the body's summary in its context, so
// that neither the request log nor the object holds the bytes.
func (s *Server) discardBodies(next http.Handler) http.Handler {
	if s.discard == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || !strings.HasPrefix(r.URL.Path, storagePath) {
			next.ServeHTTP(w, r)
			return
		}
		buf, _ := s.discard.bodies.Get().(*bytes.Buffer)
		if buf == nil {
			buf = new(bytes.Buffer)
		}
		buf.Reset()
		_, err := buf.ReadFrom(io.LimitReader(r.Body, maxBody+1))
		if err != nil || buf.Len() > maxBody {
			// The ordinary path refuses it, with the body it would have
			// read (and the buffer with it).
			r.Body = io.NopCloser(io.MultiReader(buf, r.Body))
			next.ServeHTTP(w, r)
			return
		}
		body := buf.Bytes()
		etag := strconv.FormatUint(xxhash.Sum64(body), 16)
		rows, err := parquetRows(body)
		s.discard.bodies.Put(buf)
		ctx := context.WithValue(r.Context(), putSummaryKey{}, putSummary{rows: rows, err: err, etag: etag})
		r = r.WithContext(ctx)
		r.Body, r.ContentLength = http.NoBody, 0
		next.ServeHTTP(w, r)
	})
}

// parquetRows reads the row count from a Parquet file's footer; the pages
// are not decoded.
func parquetRows(body []byte) (int64, error) {
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)),
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return 0, fmt.Errorf("not a readable Parquet file: %w", err)
	}
	return f.NumRows(), nil
}

// ConfirmedRows is the number of rows in the confirmed objects of every
// run, counted from their footers when they were PUT. It counts only
// objects PUT in discard mode (Options.DiscardObjects); otherwise the
// objects themselves are in Run.Objects.
func (s *Server) ConfirmedRows() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.discard == nil {
		return 0
	}
	var n int64
	for key, rows := range s.discard.rows {
		if o := s.objects[key]; o != nil && o.confirmed {
			n += rows
		}
	}
	return n
}

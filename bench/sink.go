package main

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
)

// sink is the otlphttp exporter's destination: it accepts OTLP/HTTP logs
// (protobuf, gzip or not), counts their log records and bytes, and answers
// 200 with an empty ExportLogsServiceResponse. It walks the protobuf wire
// format to count rather than decoding into pdata, so that the sink, which
// shares the cores with the collector, costs little more than the gunzip a
// real backend would do too.
type sink struct {
	srv     *http.Server
	addr    string
	records atomic.Int64
	wire    atomic.Int64 // bytes received, compressed as sent
}

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{addr: ln.Addr().String()}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is what the otlphttp exporter's endpoint is set to.
func (s *sink) URL() string { return "http://" + s.addr }

func (s *sink) Close() error { return s.srv.Close() }

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/logs" {
		http.Error(w, "only POST /v1/logs", http.StatusNotFound)
		return
	}
	counted := &countingReader{r: r.Body}
	var body io.Reader = counted
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(counted)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, err := countLogRecords(raw)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.records.Add(int64(n))
	s.wire.Add(counted.n)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty message is a valid empty response
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// countLogRecords counts the log records of an ExportLogsServiceRequest:
// resource_logs (1) → scope_logs (2) → log_records (2).
func countLogRecords(b []byte) (int, error) {
	n := 0
	err := eachField(b, 1, func(rl []byte) error {
		return eachField(rl, 2, func(sl []byte) error {
			return eachField(sl, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls fn with every length-delimited field numbered num in b
// and skips the rest.
func eachField(b []byte, num protowire.Number, fn func([]byte) error) error {
	for len(b) > 0 {
		field, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad protobuf tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if field == num && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("bad protobuf field %d: %w", field, protowire.ParseError(n))
			}
			if err := fn(v); err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(field, typ, b)
		if n < 0 {
			return errors.Join(fmt.Errorf("bad protobuf field %d", field), protowire.ParseError(n))
		}
		b = b[n:]
	}
	return nil
}

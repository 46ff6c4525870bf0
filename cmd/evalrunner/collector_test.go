package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"
)

// fakeCollector is an OTLP/HTTP logs receiver that keeps every request it
// decodes, in arrival order.
type fakeCollector struct {
	*httptest.Server
	mu   sync.Mutex
	logs []*logspb.ResourceLogs
	// requests counts the decoded requests; largest is the largest body.
	requests int
	largest  int
	// status, when set, is answered to every request instead of 200.
	status int
}

func newFakeCollector(t *testing.T, status int) *fakeCollector {
	t.Helper()
	c := &fakeCollector{status: status}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/logs", func(w http.ResponseWriter, r *http.Request) {
		req := &collogspb.ExportLogsServiceRequest{}
		if !c.decode(t, w, r, req) {
			return
		}
		c.mu.Lock()
		c.logs = append(c.logs, req.GetResourceLogs()...)
		c.requests++
		c.mu.Unlock()
		raw, err := proto.Marshal(&collogspb.ExportLogsServiceResponse{})
		if err != nil {
			t.Errorf("encoding the response: %v", err)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(raw)
	})
	c.Server = httptest.NewServer(mux)
	t.Cleanup(c.Close)
	return c
}

func (c *fakeCollector) decode(t *testing.T, w http.ResponseWriter, r *http.Request, into proto.Message) bool {
	if c.status != 0 {
		http.Error(w, "rejected by the test", c.status)
		return false
	}
	if got := r.Header.Get("Content-Type"); got != "application/x-protobuf" {
		t.Errorf("%s: Content-Type %q, want application/x-protobuf", r.URL.Path, got)
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			t.Errorf("%s: %v", r.URL.Path, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	c.mu.Lock()
	c.largest = max(c.largest, len(raw))
	c.mu.Unlock()
	if err == nil {
		err = proto.Unmarshal(raw, into)
	}
	if err != nil {
		t.Errorf("%s: decoding the request: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func (c *fakeCollector) records() []*logspb.LogRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*logspb.LogRecord
	for _, rl := range c.logs {
		for _, sl := range rl.GetScopeLogs() {
			out = append(out, sl.GetLogRecords()...)
		}
	}
	return out
}

// resources are the resource attributes of every request.
func (c *fakeCollector) resources() []map[string]*commonpb.AnyValue {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]*commonpb.AnyValue
	for _, rl := range c.logs {
		out = append(out, attrMap(rl.GetResource().GetAttributes()))
	}
	return out
}

func (c *fakeCollector) requestCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

func (c *fakeCollector) maxRequest() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.largest
}

func attrMap(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := make(map[string]*commonpb.AnyValue, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

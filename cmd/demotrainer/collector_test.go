package main

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// fakeCollector is an OTLP/HTTP receiver that keeps every request it
// decodes, in arrival order.
type fakeCollector struct {
	*httptest.Server
	mu      sync.Mutex
	metrics []*metricspb.ResourceMetrics
	logs    []*logspb.ResourceLogs
	// status, when set, is answered to every request instead of 200.
	status int
}

func newFakeCollector(t *testing.T, status int) *fakeCollector {
	t.Helper()
	c := &fakeCollector{status: status}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		req := &colmetricspb.ExportMetricsServiceRequest{}
		if !c.decode(t, w, r, req) {
			return
		}
		c.mu.Lock()
		c.metrics = append(c.metrics, req.GetResourceMetrics()...)
		c.mu.Unlock()
		c.reply(t, w, &colmetricspb.ExportMetricsServiceResponse{})
	})
	mux.HandleFunc("POST /v1/logs", func(w http.ResponseWriter, r *http.Request) {
		req := &collogspb.ExportLogsServiceRequest{}
		if !c.decode(t, w, r, req) {
			return
		}
		c.mu.Lock()
		c.logs = append(c.logs, req.GetResourceLogs()...)
		c.mu.Unlock()
		c.reply(t, w, &collogspb.ExportLogsServiceResponse{})
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

func (c *fakeCollector) reply(t *testing.T, w http.ResponseWriter, resp proto.Message) {
	raw, err := proto.Marshal(resp)
	if err != nil {
		t.Errorf("encoding the response: %v", err)
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(raw)
}

// point is one received metric data point, flattened.
type point struct {
	name  string
	attrs map[string]*commonpb.AnyValue
	value float64
	// count is a histogram's count; 0 for gauges and sums.
	count uint64
}

func (c *fakeCollector) points() []point {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []point
	for _, rm := range c.metrics {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, dp := range m.GetGauge().GetDataPoints() {
					out = append(out, point{name: m.GetName(), attrs: attrMap(dp.GetAttributes()), value: numberValue(dp)})
				}
				for _, dp := range m.GetSum().GetDataPoints() {
					out = append(out, point{name: m.GetName(), attrs: attrMap(dp.GetAttributes()), value: numberValue(dp)})
				}
				for _, dp := range m.GetHistogram().GetDataPoints() {
					out = append(out, point{name: m.GetName(), attrs: attrMap(dp.GetAttributes()), value: dp.GetSum(), count: dp.GetCount()})
				}
			}
		}
	}
	return out
}

func numberValue(dp *metricspb.NumberDataPoint) float64 {
	if _, ok := dp.GetValue().(*metricspb.NumberDataPoint_AsInt); ok {
		return float64(dp.GetAsInt())
	}
	return dp.GetAsDouble()
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

// resources are the resource attributes of every request, metrics first.
func (c *fakeCollector) resources() []map[string]*commonpb.AnyValue {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]*commonpb.AnyValue
	for _, rm := range c.metrics {
		out = append(out, attrMap(rm.GetResource().GetAttributes()))
	}
	for _, rl := range c.logs {
		out = append(out, attrMap(rl.GetResource().GetAttributes()))
	}
	return out
}

func attrMap(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := make(map[string]*commonpb.AnyValue, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

// Package otlptest is the fake OTLP/HTTP collector the commands' tests send
// to: it decodes every request and keeps it, in arrival order.
package otlptest

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

// Collector is an OTLP/HTTP receiver of metrics and logs on a loopback port.
type Collector struct {
	*httptest.Server
	mu      sync.Mutex
	metrics []*metricspb.ResourceMetrics
	logs    []*logspb.ResourceLogs
	// requests counts the decoded requests; largest is the largest body.
	requests int
	largest  int
	// status, when set, is answered to every request instead of 200.
	status int
}

// NewCollector starts a collector that answers every request with status,
// or accepts it when status is 0. It stops when the test ends.
func NewCollector(t *testing.T, status int) *Collector {
	t.Helper()
	c := &Collector{status: status}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", receive(t, c, func(req *colmetricspb.ExportMetricsServiceRequest) {
		c.metrics = append(c.metrics, req.GetResourceMetrics()...)
	}, &colmetricspb.ExportMetricsServiceResponse{}))
	mux.HandleFunc("POST /v1/logs", receive(t, c, func(req *collogspb.ExportLogsServiceRequest) {
		c.logs = append(c.logs, req.GetResourceLogs()...)
	}, &collogspb.ExportLogsServiceResponse{}))
	c.Server = httptest.NewServer(mux)
	t.Cleanup(c.Close)
	return c
}

// receive decodes a request of type R into a new R, has keep store it under
// the collector's lock, and answers resp.
func receive[R any, PR interface {
	*R
	proto.Message
}](t *testing.T, c *Collector, keep func(PR), resp proto.Message) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := PR(new(R))
		if !c.decode(t, w, r, req) {
			return
		}
		c.mu.Lock()
		keep(req)
		c.requests++
		c.mu.Unlock()
		reply(t, w, resp)
	}
}

func (c *Collector) decode(t *testing.T, w http.ResponseWriter, r *http.Request, into proto.Message) bool {
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

func reply(t *testing.T, w http.ResponseWriter, resp proto.Message) {
	raw, err := proto.Marshal(resp)
	if err != nil {
		t.Errorf("encoding the response: %v", err)
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(raw)
}

// Point is one received metric data point, flattened.
type Point struct {
	Name  string
	Attrs map[string]*commonpb.AnyValue
	Value float64
	// Count is a histogram's count; 0 for gauges and sums.
	Count uint64
}

// Points are every metric data point received, in order.
func (c *Collector) Points() []Point {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Point
	for _, rm := range c.metrics {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, dp := range m.GetGauge().GetDataPoints() {
					out = append(out, Point{Name: m.GetName(), Attrs: AttrMap(dp.GetAttributes()), Value: numberValue(dp)})
				}
				for _, dp := range m.GetSum().GetDataPoints() {
					out = append(out, Point{Name: m.GetName(), Attrs: AttrMap(dp.GetAttributes()), Value: numberValue(dp)})
				}
				for _, dp := range m.GetHistogram().GetDataPoints() {
					out = append(out, Point{Name: m.GetName(), Attrs: AttrMap(dp.GetAttributes()), Value: dp.GetSum(), Count: dp.GetCount()})
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

// Records are every log record received, in order.
func (c *Collector) Records() []*logspb.LogRecord {
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

// Resources are the resource attributes of every request, metrics first.
func (c *Collector) Resources() []map[string]*commonpb.AnyValue {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]*commonpb.AnyValue
	for _, rm := range c.metrics {
		out = append(out, AttrMap(rm.GetResource().GetAttributes()))
	}
	for _, rl := range c.logs {
		out = append(out, AttrMap(rl.GetResource().GetAttributes()))
	}
	return out
}

// Requests is how many requests were decoded.
func (c *Collector) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// LargestRequest is the size of the largest request body, uncompressed.
func (c *Collector) LargestRequest() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.largest
}

// AttrMap indexes attributes by key.
func AttrMap(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := make(map[string]*commonpb.AnyValue, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = kv.GetValue()
	}
	return m
}

// RecordAttrs indexes a record's attributes by key.
func RecordAttrs(r *logspb.LogRecord) map[string]*commonpb.AnyValue {
	return AttrMap(r.GetAttributes())
}

// ByEvent are the records of the event name, in order.
func ByEvent(records []*logspb.LogRecord, name string) []*logspb.LogRecord {
	var out []*logspb.LogRecord
	for _, r := range records {
		if r.GetEventName() == name {
			out = append(out, r)
		}
	}
	return out
}

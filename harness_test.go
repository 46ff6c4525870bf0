package primeexporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/testkit/freeport"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/metadata"
	"github.com/primeintellect/primeexporter/internal/sharedcomponent"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// testAPIKey is distinctive so that a test can look for it in every output.
const testAPIKey = "sk-test-SECRET-7f3a9c"

// harness is one started exporter in front of a fake platform, with its
// logs and self-telemetry observed.
type harness struct {
	t        *testing.T
	platform *rfttest.Server
	// shared is the exporter as the pipelines start and shut it down
	// (internal/sharedcomponent); exp is the exporter itself.
	shared *sharedcomponent.Component[*primeExporter]
	exp    *primeExporter
	logs   *observer.ObservedLogs
	tel    *componenttest.Telemetry
	host   component.Host

	stopOnce sync.Once // shutdown or abandon, once
}

// newHarness starts an online exporter against a fresh fake platform; edit
// adjusts the config first.
func newHarness(t *testing.T, edit func(*Config)) *harness {
	t.Helper()
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL() + "/rft"
	cfg.APIKey = configopaque.String(testAPIKey)
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.FinalizeTimeout = 5 * time.Second
	if edit != nil {
		edit(cfg)
	}
	return newHarnessWithHost(t, srv, cfg, componenttest.NewNopHost())
}

// instantRetries makes the client's in-place retries instant, and two
// attempts at most.
func instantRetries(o *rft.Options) {
	o.MaxAttempts = 2
	o.Sleep = func(context.Context, time.Duration) error { return nil }
}

func newHarnessWithHost(t *testing.T, srv *rfttest.Server, cfg *Config, host component.Host, opts ...option) *harness {
	t.Helper()
	return newHarnessWithOptions(t, srv, cfg, host, append([]option{withClientOptions(instantRetries)}, opts...)...)
}

// newHarnessWithOptions starts an exporter built with opts.
func newHarnessWithOptions(t *testing.T, srv *rfttest.Server, cfg *Config, host component.Host, opts ...option) *harness {
	t.Helper()
	require.NoError(t, cfg.Validate())
	core, logs := observer.New(zapcore.DebugLevel)
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := exportertest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	set.Logger = zap.New(core)
	shared, err := newExporters(opts...).get(cfg, set)
	require.NoError(t, err)
	require.NoError(t, shared.Start(context.Background(), host))
	h := &harness{t: t, platform: srv, shared: shared, exp: shared.Unwrap(), logs: logs, tel: tel, host: host}
	t.Cleanup(func() { h.shutdown() })
	return h
}

// shutdown shuts the exporter down as the collector does; a second call,
// or one after abandon, does nothing.
func (h *harness) shutdown() {
	h.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(h.t, h.shared.Shutdown(ctx))
	})
}

// abandon leaves the exporter as kill -9 would: nothing is shut down, and
// nothing it saved is taken back.
func (h *harness) abandon() { h.stopOnce.Do(func() {}) }

// onlyRun returns the platform's single run, failing if there is not
// exactly one.
func (h *harness) onlyRun() rfttest.Run {
	h.t.Helper()
	runs := h.platform.Runs()
	require.Len(h.t, runs, 1, "runs on the platform")
	return runs[0]
}

// waitStatus waits for the run's close-out to reach the platform.
func (h *harness) waitStatus(id, status string) rfttest.Run {
	h.t.Helper()
	var r rfttest.Run
	require.Eventually(h.t, func() bool {
		r, _ = h.platform.Run(id)
		return r.Status == status
	}, 10*time.Second, 5*time.Millisecond, "run %s never reached %s", id, status)
	return r
}

// count reads one of the exporter's counters for the given attributes.
func (h *harness) count(name string, attrs map[string]string) int64 {
	h.t.Helper()
	m, err := h.tel.GetMetric(name)
	if err != nil {
		return 0
	}
	var total int64
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		match := true
		for k, want := range attrs {
			if got, ok := dp.Attributes.Value(attribute.Key(k)); !ok || got.AsString() != want {
				match = false
			}
		}
		if match {
			total += dp.Value
		}
	}
	return total
}

// logText is every observed log line with its fields, for assertions on
// what a user sees.
func (h *harness) logText() string {
	var b strings.Builder
	for _, e := range h.logs.All() {
		b.WriteString(e.Level.String() + " " + e.Message)
		for k, v := range e.ContextMap() {
			b.WriteString(" " + k + "=")
			b.WriteString(strings.TrimSpace(strings.ReplaceAll(fmt.Sprint(v), "\n", " ")))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// --- pdata builders ---

// resource sets string attributes on a resource.
func resource(res pcommon.Resource, attrs map[string]string) {
	for k, v := range attrs {
		res.Attributes().PutStr(k, v)
	}
}

// trainRun is the resource of a trainer that creates a run by key.
func trainRun(key string) map[string]string {
	return map[string]string{"prime.run.key": key, "prime.run.model": "Qwen/Qwen3-8B"}
}

// gauges builds one resource's metrics: name → value per step, each point
// with a prime.step attribute.
func gauges(res map[string]string, steps map[int64]map[string]float64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	resource(rm.Resource(), res)
	sm := rm.ScopeMetrics().AppendEmpty()
	for step, values := range steps {
		for name, v := range values {
			m := sm.Metrics().AppendEmpty()
			m.SetName(name)
			dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
			dp.SetDoubleValue(v)
			dp.Attributes().PutInt("prime.step", step)
		}
	}
	return md
}

// timedPoint is one gauge point with its time_unix_nano; step is its
// prime.step attribute, none when nil.
type timedPoint struct {
	name  string
	value float64
	at    pcommon.Timestamp
	step  any
}

// timedGauges builds one resource's metrics: one gauge per point, in order.
func timedGauges(t *testing.T, res map[string]string, points ...timedPoint) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	resource(rm.Resource(), res)
	sm := rm.ScopeMetrics().AppendEmpty()
	for _, p := range points {
		m := sm.Metrics().AppendEmpty()
		m.SetName(p.name)
		dp := m.SetEmptyGauge().DataPoints().AppendEmpty()
		dp.SetDoubleValue(p.value)
		dp.SetTimestamp(p.at)
		if p.step != nil {
			require.NoError(t, dp.Attributes().PutEmpty("prime.step").FromRaw(p.step))
		}
	}
	return md
}

// events builds one resource's log records, each configured by a func.
func events(res map[string]string, records ...func(plog.LogRecord)) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	resource(rl.Resource(), res)
	sl := rl.ScopeLogs().AppendEmpty()
	for _, f := range records {
		f(sl.LogRecords().AppendEmpty())
	}
	return ld
}

func runEnd(status, reason string) func(plog.LogRecord) {
	return func(lr plog.LogRecord) {
		lr.SetEventName("prime.run.end")
		if status != "" {
			lr.Attributes().PutStr("prime.run.status", status)
		}
		if reason != "" {
			lr.Attributes().PutStr("prime.run.error", reason)
		}
	}
}

func metricsEvent(step int64, values map[string]float64) func(plog.LogRecord) {
	return func(lr plog.LogRecord) {
		lr.SetEventName("prime.metrics")
		lr.Attributes().PutInt("prime.step", step)
		for k, v := range values {
			lr.Attributes().PutDouble(k, v)
		}
	}
}

// timedMetricsEvent is a prime.metrics event with no prime.step, stamped
// with a record and an observed timestamp.
func timedMetricsEvent(at, observed pcommon.Timestamp, values map[string]float64) func(plog.LogRecord) {
	return func(lr plog.LogRecord) {
		lr.SetEventName("prime.metrics")
		lr.SetTimestamp(at)
		lr.SetObservedTimestamp(observed)
		for k, v := range values {
			lr.Attributes().PutDouble(k, v)
		}
	}
}

// metricsBodies are the bodies of the metrics posts the platform received,
// in order, with the run id in each.
func metricsBodies(srv *rfttest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, "/rft/metrics") {
			out = append(out, strings.TrimSpace(string(r.Body)))
		}
	}
	return out
}

func plainLog(text string) func(plog.LogRecord) {
	return func(lr plog.LogRecord) { lr.Body().SetStr(text) }
}

// concurrently runs fns at once and waits for them.
func concurrently(fns ...func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, f := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f()
		}()
	}
	close(start)
	wg.Wait()
}

// --- the fault rig ---

// faultClientTimeout is the client timeout of the fault tests: a scripted
// Delay longer than it is a read timeout.
const faultClientTimeout = 300 * time.Millisecond

// faultHang is a scripted Delay past the client timeout. The fake ends it as
// soon as the client gives up, so no test waits for it.
const faultHang = time.Minute

// faultRig is a harness whose client retries in place instantly while
// recording the waits it was asked for, times out after
// faultClientTimeout, and reaches the platform through a network that can
// refuse a route's next connections.
type faultRig struct {
	*harness
	net *faultNet

	mu    sync.Mutex
	waits []time.Duration
}

func newFaultRig(t *testing.T) *faultRig {
	t.Helper()
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL() + "/rft"
	cfg.ClientConfig.Timeout = faultClientTimeout
	cfg.APIKey = configopaque.String(testAPIKey)
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.FinalizeTimeout = 5 * time.Second
	rig := &faultRig{net: newFaultNet(t)}
	rig.harness = newHarnessWithOptions(t, srv, cfg, componenttest.NewNopHost(), withClientOptions(func(o *rft.Options) {
		o.MaxAttempts = 2
		o.Sleep = rig.sleep
		o.HTTPClient = rig.net.wrap(o.HTTPClient)
		// The bare client of presigned PUTs: its own timeout (5 minutes by
		// default, for large objects) made as short as the platform's.
		putTransport := &http.Transport{}
		t.Cleanup(putTransport.CloseIdleConnections)
		o.PutClient = rig.net.wrap(&http.Client{Transport: putTransport, Timeout: faultClientTimeout})
	}), withCloseOutPause(func(ctx context.Context, _ time.Duration) error { return ctx.Err() })) // close-outs try again instantly too
	return rig
}

// sleep is the client's wait between in-place attempts: recorded, not slept.
func (r *faultRig) sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return ctx.Err()
}

// inPlaceWaits are the waits the client asked for between attempts.
func (r *faultRig) inPlaceWaits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

// calls counts the requests the platform received per route, plus the
// connections the network refused (which the platform never saw).
func (r *faultRig) calls() map[rfttest.Route]int {
	out := map[rfttest.Route]int{}
	for _, req := range r.platform.Requests() {
		out[rfttest.TrainingRoute(req.Method, req.Path)]++
	}
	for route, n := range r.net.refusedCounts() {
		out[route] += n
	}
	return out
}

// waitCloseOut waits until the run's close-out finished, either way.
func (r *faultRig) waitCloseOut() {
	r.t.Helper()
	require.Eventually(r.t, func() bool {
		text := r.logText()
		return strings.Contains(text, "Closed out run") || strings.Contains(text, "Could not close out run")
	}, 10*time.Second, time.Millisecond, "the close-out never finished")
}

// faultNet stands between the exporter and the platform. It can refuse the
// next connections of a route the way a host with nothing listening does:
// the dial itself fails with ECONNREFUSED, through the real net/http stack.
type faultNet struct {
	refusing *http.Transport // dials a port nobody listens on

	mu      sync.Mutex
	refuse  map[rfttest.Route]int // connections still to refuse
	refused map[rfttest.Route]int
}

func newFaultNet(t *testing.T) *faultNet {
	t.Helper()
	closed := freeport.Addr(t)
	return &faultNet{
		refusing: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, closed)
		}},
		refuse:  map[rfttest.Route]int{},
		refused: map[rfttest.Route]int{},
	}
}

// refuseNext makes the next n connections of route fail to connect.
func (n *faultNet) refuseNext(route rfttest.Route, count int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refuse[route] += count
}

func (n *faultNet) refusedCounts() map[rfttest.Route]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[rfttest.Route]int, len(n.refused))
	for k, v := range n.refused {
		out[k] = v
	}
	return out
}

func (n *faultNet) take(route rfttest.Route) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.refuse[route] == 0 {
		return false
	}
	n.refuse[route]--
	n.refused[route]++
	return true
}

// wrap returns a copy of c whose requests go through the network.
func (n *faultNet) wrap(c *http.Client) *http.Client {
	cp := *c
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if n.take(rfttest.TrainingRoute(req.Method, req.URL.Path)) {
			return n.refusing.RoundTrip(req)
		}
		return next.RoundTrip(req)
	})
	return &cp
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// throttleOf is the wait a push asks exporterhelper for before its retry
// (exporterhelper.NewThrottleRetry), or 0 when it asks for none.
func throttleOf(err error) time.Duration {
	throttle := reflect.TypeOf(exporterhelper.NewThrottleRetry(errors.New(""), 0))
	for e := err; e != nil; e = errors.Unwrap(e) {
		if reflect.TypeOf(e) == throttle {
			return time.Duration(reflect.ValueOf(e).FieldByName("delay").Int())
		}
	}
	return 0
}

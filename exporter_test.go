package primeexporter

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/extension/xextension/storage"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestDisabledModeAcceptsEverythingAndSendsNothing(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Mode = ModeDisabled })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("d"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("d"), runEnd("completed", ""))))
	assert.Empty(t, h.platform.Requests())
}

func TestOfflineModeWritesTheSameLifecycleToADirectory(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Mode = ModeOffline; c.Directory = dir })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("off"), map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 0.5}})))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("off"), runEnd("completed", ""))))
	h.shutdown()
	assert.Empty(t, h.platform.Requests(), "offline mode makes no request")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	id := entries[0].Name()
	assert.Regexp(t, regexp.MustCompile(`^offline-[0-9a-f]{16}$`), id)

	var run platform.RunRecord
	raw, err := os.ReadFile(filepath.Join(dir, id, "run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &run))
	assert.Equal(t, "completed", run.Status)
	assert.Equal(t, "Qwen/Qwen3-8B", run.Spec.BaseModel)
	require.NotNil(t, run.FinishedAt)

	f, err := os.Open(filepath.Join(dir, id, "metrics.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var lines []map[string]any
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		lines = append(lines, line)
	}
	assert.Equal(t, []map[string]any{
		{"run_id": id, "metrics": map[string]any{"step": 1.0, "loss": 1.0}},
		{"run_id": id, "metrics": map[string]any{"step": 2.0, "loss": 0.5}},
	}, lines, "one line per post, the body the platform would get")

	for _, p := range []string{filepath.Join(dir, id), filepath.Join(dir, id, "run.json"), filepath.Join(dir, id, "metrics.jsonl")} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Zero(t, st.Mode().Perm()&0o077, "%s is owner-only", p)
	}
}

func TestOfflineModeWritesTimeRowsAndTimestampsAsTheOnlinePathPostsThem(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Mode = ModeOffline; c.Directory = dir })
	ctx := context.Background()
	require.NoError(t, h.exp.pushMetrics(ctx, timedGauges(t, trainRun("off-t"),
		timedPoint{"loss", 0.5, atNoon, 1}, timedPoint{"inference/ttft", 0.25, atNoonHalf, nil})))
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("off-t"), timedMetricsEvent(atNoonHalf, 0, map[string]float64{"inference/tps": 900}))))
	h.shutdown()

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	id := entries[0].Name()
	body, err := os.ReadFile(filepath.Join(dir, id, "metrics.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, `{"run_id":"`+id+`","metrics":{"_timestamp":1767225600,"loss":0.5,"step":1}}`+"\n"+
		`{"run_id":"`+id+`","metrics":{"_timestamp":1767225600.5,"inference/ttft":0.25}}`+"\n"+
		`{"run_id":"`+id+`","metrics":{"_timestamp":1767225600.5,"inference/tps":900}}`+"\n",
		string(body), "one line per post, the exact body the platform would get")
}

func TestOfflineModeRefusesRunIDsThatWouldLeaveTheDirectory(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Mode = ModeOffline; c.Directory = filepath.Join(dir, "runs") })
	for _, bad := range []string{"../../escape", "/abs/path", "a\x00b", "..", `a\b`} {
		require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(map[string]string{"prime.run.id": bad}, map[int64]map[string]float64{1: {"loss": 1}})))
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "only the runs directory itself")
	assert.Equal(t, int64(5), h.count(metricRejected, map[string]string{"reason": "run_refused"}))
}

func TestACreateRefusedForTheTeamIsRememberedAndOtherRunsGoOn(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey, AllowedTeams: []string{"good-team"}})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "good-team"
	h := newHarnessWithHost(t, srv, cfg, componenttest.NewNopHost())
	ctx := context.Background()

	banned := trainRun("banned")
	banned["prime.run.team_id"] = "other-team"
	for i := 0; i < 3; i++ {
		require.NoError(t, h.exp.pushMetrics(ctx, gauges(banned, map[int64]map[string]float64{int64(i): {"loss": 1}})))
	}
	require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("fine"), map[int64]map[string]float64{1: {"loss": 1}})))

	creates := 0
	for _, r := range srv.Requests() {
		if r.Path == "/api/v1/rft/external-runs" {
			creates++
		}
	}
	assert.Equal(t, 2, creates, "the refused create is asked once, the other run's once")
	require.Len(t, srv.Runs(), 1)
	assert.Equal(t, 1, srv.Runs()[0].MetricPosts)
	assert.Contains(t, h.logText(), "External training runs are not enabled for this team")
	assert.Equal(t, int64(3), h.count(metricRejected, map[string]string{"reason": "run_refused"}))
}

func TestAnAmbiguousCreateFailureKeepsTheDataAndWarnsOfADuplicate(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	h.platform.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 502, AfterProcessing: true})
	md := gauges(trainRun("amb"), map[int64]map[string]float64{1: {"loss": 1}})
	err := h.exp.pushMetrics(ctx, md)
	require.Error(t, err, "the data stays with the collector's retry")
	assert.Contains(t, h.logText(), "a duplicate, empty run may exist")
	assert.Contains(t, h.logText(), `run=prime.run.key="amb"`)

	require.NoError(t, h.exp.pushMetrics(ctx, md))
	runs := h.platform.Runs()
	require.Len(t, runs, 2, "the lost response registered a run; the retry made the one that is tracked")
	assert.Zero(t, runs[0].MetricPosts)
	assert.Equal(t, 1, runs[1].MetricPosts)
}

// --- shutdown ---

// A push waiting out the platform's Retry-After must not hold the
// collector's queue drain past the shutdown deadline.
func TestAShutdownEndsThePushesWaitingInPlace(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "team-1"
	// Real in-place waits: only the shutdown notice may cut them short.
	h := newHarnessWithOptions(t, srv, cfg, componenttest.NewNopHost(), withClientOptions(func(o *rft.Options) { o.MaxAttempts = 5 }))
	srv.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 429, RetryAfter: "60"}, rfttest.Fault{Status: 429, RetryAfter: "60"})

	done := make(chan error, 1)
	go func() {
		done <- h.exp.pushMetrics(context.Background(), gauges(trainRun("slow"), map[int64]map[string]float64{1: {"loss": 1}}))
	}()
	require.Eventually(t, func() bool { return len(srv.Requests()) == 1 }, 5*time.Second, time.Millisecond, "the push is waiting out Retry-After")
	h.exp.BeginShutdown()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.False(t, consumererror.IsPermanent(err), "the data stays for the next start")
	case <-time.After(20 * time.Second):
		t.Fatal("the push still waits in place after the shutdown notice")
	}
	assert.Len(t, srv.Requests(), 1, "no attempt after the notice")
}

func TestShutdownLogsWhatItLeavesOpen(t *testing.T) {
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(trainRun("open"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.shutdown()
	text := h.logText()
	assert.Contains(t, text, "open runs stay open and continue after a restart")
	assert.Contains(t, text, "open_run_ids=["+h.onlyRun().ID+"]")
}

// --- persistence: restarts with a storage extension ---
// The exporter's side of storage: its status, its log lines, a store that
// cannot be opened. What a restart keeps of the runs is internal/runs'
// persist_test.go.

// memStorage is a storage extension whose data outlives the exporters that
// use it, as file_storage's does across a collector restart.
type memStorage struct {
	component.StartFunc
	component.ShutdownFunc
	client *memstorage.Client
}

func newMemStorage() *memStorage { return &memStorage{client: memstorage.New()} }

func (m *memStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return m.client, nil
}

type extensionsHost struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h extensionsHost) GetExtensions() map[component.ID]component.Component { return h.exts }

var storageID = component.MustNewID("file_storage")

// restartable starts exporters one after another on one platform and one
// storage, the way a collector restarts.
type restartable struct {
	t        *testing.T
	platform *rfttest.Server
	storage  *memStorage
	edit     func(*Config)
	// broken, when set, is the storage extension instead of storage.
	broken component.Component
}

func newRestartable(t *testing.T, edit func(*Config)) *restartable {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	return &restartable{t: t, platform: srv, storage: newMemStorage(), edit: edit}
}

// start is one collector process; stop it with crash (no shutdown: kill -9)
// or shutdown.
func (rs *restartable) start() *harness {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = rs.platform.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.Storage = &storageID
	if rs.edit != nil {
		rs.edit(cfg)
	}
	var ext component.Component = rs.storage
	if rs.broken != nil {
		ext = rs.broken
	}
	host := &statusHost{Host: extensionsHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: ext}}}
	return newHarnessWithHost(rs.t, rs.platform, cfg, host)
}

// crash abandons an exporter as kill -9 would: nothing is shut down.
func crash(h *harness) { h.abandon() }

func TestWithoutStorageARestartCreatesASecondRunAndSaysSo(t *testing.T) {
	h := newHarness(t, nil)
	assert.Contains(t, h.logText(), "a second run")
	assert.Contains(t, h.logText(), "random sample_id ranges")
}

func TestAFullDiskIsARecoverableErrorStatusAndLosesNothingOnceSpaceComesBack(t *testing.T) {
	rs := newRestartable(t, nil)
	ctx := context.Background()
	first := rs.start()
	rs.storage.client.Fill("/var/lib/otelcol/prime/exporter_prime__runs")
	require.NoError(t, first.exp.pushLogs(ctx, events(trainRun("full"), episode(10, "a"), metricsEvent(10, map[string]float64{"loss": 1}))),
		"a push is not failed for the run state it cannot write")
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, first.statuses())
	assert.Contains(t, first.logText(), "Storage does not take the run registry's writes")
	assert.Contains(t, first.logText(), "directory=/var/lib/otelcol/prime")

	// Space comes back: the next write takes what waited (the status
	// clears after writes have gone through for a while: internal/runstore/extension_backlog_test.go).
	rs.storage.client.Free()
	require.NoError(t, first.exp.pushLogs(ctx, events(trainRun("full"), episode(20, "b"))))
	crash(first)

	second := rs.start()
	require.NoError(t, second.exp.pushLogs(ctx, events(trainRun("full"), episode(10, "a"), episode(20, "c"), runEnd("completed", ""))))
	run := second.waitStatus(second.onlyRun().ID, rfttest.StatusCompleted)
	assert.Len(t, rs.platform.Runs(), 1, "the run created while the disk was full is remembered")
	assert.Equal(t, []string{"step 10: q-a#0:0", "step 20: q-b#0:0", "step 20: q-c#1024:0"}, objects(t, run),
		"the episode delivered while the disk was full is not uploaded again, and its range is not reused")
}

// unopenable is a storage extension whose client cannot be opened, as
// file_storage's for a file bbolt cannot read.
type unopenable struct {
	component.StartFunc
	component.ShutdownFunc
}

func (unopenable) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return nil, errors.New("invalid database")
}

func TestARunRegistryThatCannotBeOpenedDoesNotStopTheCollector(t *testing.T) {
	rs := newRestartable(t, nil)
	rs.broken = unopenable{}
	h := rs.start()

	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, h.statuses())
	assert.Contains(t, h.logText(), "Cannot open the run registry in storage: the exporter goes on without it")
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("unopened"), episode(10, "a"))), "data still goes out")
	assert.Len(t, rs.platform.Runs(), 1)
}

// --- the shared registry: a fleet of collectors on one Redis ---
// The exporter's side of the fleet: Redis over TLS from the config, and
// what a push hands back and reports while Redis is down. How the fleet's
// collectors share a run is internal/runs' fleet_redis_test.go.

// fleet is several collectors in front of one fake platform, sharing their
// run registry through one real Redis: the node collectors of a multi-node
// run, or a load-balanced gateway fleet.
type fleet struct {
	t        *testing.T
	platform *rfttest.Server
	redis    *redistest.Server
}

func newFleet(t *testing.T) *fleet {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	return &fleet{t: t, platform: srv, redis: redistest.New(t)}
}

// collector starts one more collector of the fleet; edit, when given,
// changes its config first.
func (f *fleet) collector(edit ...func(*Config)) *harness {
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = f.platform.BaseURL()
	cfg.APIKey = testAPIKey
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.FinalizeTimeout = 5 * time.Second
	cfg.SharedRegistry.GetOrInsertDefault().Redis.Endpoint = f.redis.Addr()
	for _, e := range edit {
		e(cfg)
	}
	return newHarnessWithHost(f.t, f.platform, cfg, &statusHost{Host: componenttest.NewNopHost()})
}

// paths counts the platform's requests whose path ends with suffix.
func (f *fleet) paths(suffix string) int {
	n := 0
	for _, r := range f.platform.Requests() {
		if strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

func (f *fleet) creates() int { return f.paths("/external-runs") }

func (h *harness) statuses() []componentstatus.Status {
	host := h.host.(*statusHost)
	host.mu.Lock()
	defer host.mu.Unlock()
	var out []componentstatus.Status
	for _, e := range host.events {
		out = append(out, e.Status())
	}
	return out
}

// A Redis that speaks TLS only (a real redis-server on its tls-port, with a
// CA of the test's own): collectors with shared_registry.redis.tls share
// the run through it; one without tls is not let in, and loses nothing.
func TestAFleetSharesItsRegistryThroughARedisOverTLS(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(srv.Close)
	f := &fleet{t: t, platform: srv, redis: redistest.NewTLS(t)}
	withTLS := func(cfg *Config) {
		tc := configtls.NewDefaultClientConfig()
		tc.CAFile = f.redis.CAFile()
		cfg.SharedRegistry.Get().Redis.TLS = configoptional.Some(tc)
	}
	a, b := f.collector(withTLS), f.collector(withTLS)
	ctx := context.Background()
	require.NoError(t, a.exp.pushMetrics(ctx, gauges(trainRun("over-tls"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.NoError(t, b.exp.pushMetrics(ctx, gauges(trainRun("over-tls"), map[int64]map[string]float64{2: {"loss": 2}})))
	assert.Equal(t, 1, f.creates(), "the second collector found the run in the registry")
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}, 2: {"loss": 2}}, a.onlyRun().Metrics)

	plain := f.collector()
	err := plain.exp.pushMetrics(ctx, gauges(trainRun("over-tls"), map[int64]map[string]float64{3: {"loss": 3}}))
	require.Error(t, err, "a collector without tls cannot use the registry")
	assert.False(t, consumererror.IsPermanent(err), "its data waits in the retry")
	assert.Equal(t, 1, f.creates())
}

func TestWhileRedisIsDownAPushIsRetryableCreatesNothingAndTheStatusSaysSoThenItLandsOnce(t *testing.T) {
	f := newFleet(t)
	a := f.collector()
	ctx := context.Background()
	f.redis.Stop()

	err := a.exp.pushLogs(ctx, events(trainRun("outage"), episode(10, "a"), metricsEvent(10, map[string]float64{"loss": 1})))
	require.Error(t, err)
	assert.False(t, consumererror.IsPermanent(err), "retryable, never permanent")
	var retry consumererror.Logs
	require.True(t, errors.As(err, &retry))
	assert.Equal(t, 2, retry.Data().LogRecordCount(), "nothing is dropped")
	assert.Empty(t, f.platform.Requests(), "nothing is created without the claim")
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError}, a.statuses())
	assert.Contains(t, a.logText(), "The shared run registry (Redis) does not answer")

	f.redis.Start()
	require.NoError(t, a.exp.pushLogs(ctx, retry.Data()))
	run := a.onlyRun()
	assert.Equal(t, 1, f.creates())
	assert.Equal(t, []string{"step 10: q-a#0:0"}, objects(t, run))
	assert.Equal(t, map[int64]map[string]float64{10: {"loss": 1}}, run.Metrics)
	assert.Equal(t, 1, run.MetricPosts, "the data landed once")
	assert.Equal(t, []componentstatus.Status{componentstatus.StatusRecoverableError, componentstatus.StatusOK}, a.statuses())
}

// --- TLS and proxies ---

// A platform behind a certificate the machine does not trust: the exporter
// refuses it unless the config explicitly turns verification off.
func TestTLSIsVerifiedUnlessExplicitlyDisabled(t *testing.T) {
	fake := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(fake.Close)
	tlsSrv := httptest.NewTLSServer(fake.Handler())
	t.Cleanup(tlsSrv.Close)

	for _, insecure := range []bool{false, true} {
		t.Run(map[bool]string{false: "verified", true: "insecure_skip_verify"}[insecure], func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.ClientConfig.Endpoint = tlsSrv.URL
			cfg.ClientConfig.TLS.InsecureSkipVerify = insecure
			cfg.APIKey = testAPIKey
			cfg.TeamID = "team-1"
			h := newHarnessWithHost(t, fake, cfg, componenttest.NewNopHost())
			err := h.exp.pushMetrics(context.Background(), gauges(trainRun("tls"), map[int64]map[string]float64{1: {"loss": 1}}))
			if insecure {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), "certificate"), "the error names the certificate: %v", err)
		})
	}
	creates := 0
	for _, r := range fake.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/external-runs") {
			creates++
		}
	}
	assert.Equal(t, 1, creates, "only the insecure client reached the platform")
}

// forwardProxy is a plain HTTP forward proxy on loopback that records what
// passed through it.
type forwardProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newForwardProxy(t *testing.T) *forwardProxy {
	p := &forwardProxy{}
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Host == "" {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.seen = append(p.seen, r.Clone(context.Background()))
		p.mu.Unlock()
		out, err := http.NewRequestWithContext(r.Context(), r.Method, r.URL.String(), strings.NewReader(string(body)))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := transport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(p.Close)
	return p
}

// puts are the PUT requests the proxy forwarded.
func (p *forwardProxy) puts() []*http.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*http.Request
	for _, r := range p.seen {
		if r.Method == http.MethodPut {
			out = append(out, r)
		}
	}
	return out
}

func TestObjectPUTsGoThroughTheConfiguredProxyWithoutPlatformHeaders(t *testing.T) {
	proxy := newForwardProxy(t)
	h := newHarness(t, func(c *Config) { c.ClientConfig.ProxyURL = proxy.URL })
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("proxied"), episode(10, "a"), episode(20, "b"))))

	run := h.onlyRun()
	require.Len(t, run.Objects, 2)
	puts := proxy.puts()
	require.Len(t, puts, 2, "both objects went through the proxy")
	for _, put := range puts {
		assert.Contains(t, put.URL.Path, "/storage/", "the PUT is for object storage")
		assert.Empty(t, put.Header.Get("Authorization"), "no platform auth on a presigned PUT")
		assert.Empty(t, put.Header.Get("X-Api-Key"))
		for k, vs := range put.Header {
			for _, v := range vs {
				assert.NotContains(t, v, testAPIKey, "header %s", k)
			}
		}
	}
	for _, obj := range run.Objects {
		assert.True(t, obj.Confirmed)
	}
	assert.Equal(t, []string{"step 10: q-a#0:0", "step 20: q-b#0:0"}, objects(t, run))
}

func TestWithoutAProxyObjectPUTsGoStraightToStorage(t *testing.T) {
	proxy := newForwardProxy(t)
	h := newHarness(t, nil)
	require.NoError(t, h.exp.pushLogs(context.Background(), events(trainRun("direct"), episode(10, "a"))))
	require.Len(t, h.onlyRun().Objects, 1)
	assert.Empty(t, proxy.puts())
	var storagePuts int
	for _, r := range h.platform.Requests() {
		if r.Method == http.MethodPut {
			storagePuts++
		}
	}
	assert.Equal(t, 1, storagePuts)
}

// --- the API key in no output ---

// Every path that logs or returns an error, driven once, and the key
// appears in none of it.
func TestTheAPIKeyAppearsInNoLogLineOrError(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	var errs []error
	h.platform.Inject(rfttest.RouteCreate, rfttest.Fault{Status: 401}, rfttest.Fault{Status: 502, AfterProcessing: true}, rfttest.Fault{Status: 503}, rfttest.Fault{Status: 503})
	for i := 0; i < 4; i++ {
		errs = append(errs, h.exp.pushMetrics(ctx, gauges(trainRun("k"), map[int64]map[string]float64{1: {"loss": 1}})))
	}
	h.platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: 400}, rfttest.Fault{Status: 429, RetryAfter: "1"}, rfttest.Fault{Status: 429, RetryAfter: "1"})
	errs = append(errs, h.exp.pushMetrics(ctx, gauges(trainRun("k"), map[int64]map[string]float64{2: {"loss": 1}, 3: {"loss": 1}})))
	h.platform.Inject(rfttest.RouteFinalize, rfttest.Fault{Status: 401})
	h.platform.Inject(rfttest.RouteStatus, rfttest.Fault{Status: 401})
	errs = append(errs, h.exp.pushLogs(ctx, events(trainRun("k"), runEnd("completed", ""))))
	h.shutdown()

	require.NotEmpty(t, h.logs.All())
	assert.NotContains(t, h.logText(), testAPIKey)
	for _, err := range errs {
		if err != nil {
			assert.NotContains(t, err.Error(), testAPIKey)
		}
	}
	cfg := h.exp.cfg
	assert.NotContains(t, cfg.APIKey.String(), testAPIKey)
}

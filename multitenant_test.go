package primeexporter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Two tenants of the fake platform, each with its own key.
const (
	aliceKey = "sk-alice-SECRET-1"
	bobKey   = "sk-bob-SECRET-2"
)

// newTenantHarness starts a multi-tenant exporter (no key of its own) in
// front of a fake platform that knows alice and bob, on a host that hears
// the component status.
func newTenantHarness(t *testing.T, edit func(*Config)) *harness {
	t.Helper()
	srv := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{{Key: aliceKey, ID: "alice"}, {Key: bobKey, ID: "bob"}}})
	t.Cleanup(srv.Close)
	cfg := createDefaultConfig().(*Config)
	cfg.ClientConfig.Endpoint = srv.BaseURL()
	cfg.Tenants.Enabled = true
	cfg.TeamID = "team-1"
	cfg.FinalizeGrace = 0
	cfg.FinalizeTimeout = 5 * time.Second
	if edit != nil {
		edit(cfg)
	}
	return newHarnessWithHost(t, srv, cfg, &statusHost{Host: componenttest.NewNopHost()})
}

// as is a push's context as the receiver makes it for a sender presenting
// key (include_metadata: true); "" for no header.
func as(key string) context.Context {
	md := map[string][]string{}
	if key != "" {
		md["authorization"] = []string{"Bearer " + key}
	}
	return client.NewContext(context.Background(), client.Info{Metadata: client.NewMetadata(md)})
}

// usersOf lists who made each request of a route (path suffix), in order.
func usersOf(srv *rfttest.Server, suffix string) []string {
	var out []string
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, suffix) {
			out = append(out, r.UserID)
		}
	}
	return out
}

func TestEachTenantsRunIsCreatedFedAndClosedWithItsOwnKey(t *testing.T) {
	h := newTenantHarness(t, nil)
	for _, key := range []string{aliceKey, bobKey} {
		require.NoError(t, h.exp.pushMetrics(as(key), gauges(trainRun("same-key"), map[int64]map[string]float64{1: {"loss": 1}})))
	}
	runs := h.platform.Runs()
	require.Len(t, runs, 2, "one run per tenant, though both sent prime.run.key=same-key")
	owners := map[string]string{}
	for _, r := range runs {
		owners[r.Owner] = r.ID
		require.Equal(t, map[int64]map[string]float64{1: {"loss": 1}}, r.Metrics)
	}
	require.Contains(t, owners, "alice")
	require.Contains(t, owners, "bob")
	require.ElementsMatch(t, []string{"alice", "bob"}, usersOf(h.platform, "/rft/external-runs"))
	require.ElementsMatch(t, []string{"alice", "bob"}, usersOf(h.platform, "/rft/metrics"))

	require.NoError(t, h.exp.pushLogs(as(aliceKey), events(trainRun("same-key"), runEnd("completed", ""))))
	h.waitStatus(owners["alice"], rfttest.StatusCompleted)
	require.Equal(t, []string{"alice"}, usersOf(h.platform, "/rft/finalize"), "alice's close-out, with her key")
	if r, _ := h.platform.Run(owners["bob"]); r.Status != rfttest.StatusRunning {
		t.Fatalf("bob's run of the same prime.run.key was closed by alice's end: %s", r.Status)
	}
	require.NotContains(t, h.logText(), aliceKey)
	require.NotContains(t, h.logText(), bobKey)
}

func TestATenantSendingAnothersRunIDNeverReachesIt(t *testing.T) {
	h := newTenantHarness(t, nil)
	require.NoError(t, h.exp.pushMetrics(as(aliceKey), gauges(trainRun("a"), map[int64]map[string]float64{1: {"loss": 1}})))
	alice := h.onlyRun()
	attach := map[string]string{"prime.run.id": alice.ID}
	_ = h.exp.pushMetrics(as(bobKey), gauges(attach, map[int64]map[string]float64{2: {"loss": 666}}))
	_ = h.exp.pushLogs(as(bobKey), events(attach, runEnd("failed", "sabotage")))
	time.Sleep(100 * time.Millisecond)
	r, _ := h.platform.Run(alice.ID)
	require.Equal(t, map[int64]map[string]float64{1: {"loss": 1}}, r.Metrics, "bob's point reached alice's run")
	require.Equal(t, rfttest.StatusRunning, r.Status, "bob's end reached alice's run")
	require.Positive(t, h.count("otelcol_exporter_prime_records_rejected", nil), "bob's refused data is counted")
}

func TestDataWithoutAKeyOrWithARefusedKeyIsRefusedForGoodAndCounted(t *testing.T) {
	h := newTenantHarness(t, nil)
	tests := []struct {
		name, key, reason string
	}{
		{"no key", "", "no_key"},
		{"a key the platform refuses", "sk-wrong-SECRET", "key_refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := h.exp.pushMetrics(as(tt.key), gauges(trainRun("x"), map[int64]map[string]float64{1: {"loss": 1}}))
			require.True(t, consumererror.IsPermanent(err), "err = %v", err)
			require.Equal(t, int64(1), h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": tt.reason, "tenant": "unknown"}),
				"counted under no tenant: none could be told")
		})
	}
	require.Empty(t, h.platform.Runs())
	require.NotContains(t, h.logText(), "sk-wrong-SECRET")
}

func TestARevokedKeyStopsItsTenantOnlyAndANewKeyOfTheSameUserGoesOn(t *testing.T) {
	h := newTenantHarness(t, nil)
	require.NoError(t, h.exp.pushMetrics(as(aliceKey), gauges(trainRun("a"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.NoError(t, h.exp.pushMetrics(as(bobKey), gauges(trainRun("b"), map[int64]map[string]float64{1: {"loss": 1}})))
	h.platform.RevokeKey(aliceKey)
	// The exporter still trusts alice's key (key_ttl); the platform's 401,
	// confirmed by whoami, trips her guard alone.
	_ = h.exp.pushMetrics(as(aliceKey), gauges(trainRun("a"), map[int64]map[string]float64{2: {"loss": 2}}))
	_ = h.exp.pushMetrics(as(aliceKey), gauges(trainRun("a"), map[int64]map[string]float64{3: {"loss": 3}}))
	require.NoError(t, h.exp.pushMetrics(as(bobKey), gauges(trainRun("b"), map[int64]map[string]float64{2: {"loss": 2}})))
	for _, r := range h.platform.Runs() {
		switch r.Owner {
		case "alice":
			require.Len(t, r.Metrics, 1, "alice's steps after her key was revoked")
		case "bob":
			require.Len(t, r.Metrics, 2, "bob's steps")
		}
	}
	require.Positive(t, h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "unauthorized"}))
	require.Zero(t, h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "platform_rejected"}),
		"the request that tripped alice's guard counts as unauthorized too")
	host := h.host.(*statusHost)
	host.mu.Lock()
	for _, ev := range host.events {
		require.NotEqual(t, componentstatus.StatusPermanentError, ev.Status(), "alice's refused key made the component's status a permanent error")
	}
	host.mu.Unlock()

	h.platform.AddUser(rfttest.User{Key: "sk-alice-NEW-3", ID: "alice"})
	require.NoError(t, h.exp.pushMetrics(as("sk-alice-NEW-3"), gauges(trainRun("a"), map[int64]map[string]float64{4: {"loss": 4}})))
	for _, r := range h.platform.Runs() {
		if r.Owner == "alice" {
			require.Contains(t, r.Metrics, int64(4), "alice's run goes on under her new key")
		}
	}
}

func TestATenantCannotOpenMoreThanMaxOpenRuns(t *testing.T) {
	h := newTenantHarness(t, func(c *Config) { c.Tenants.MaxOpenRuns = 2 })
	for _, key := range []string{"r1", "r2", "r3"} {
		require.NoError(t, h.exp.pushMetrics(as(aliceKey), gauges(trainRun(key), map[int64]map[string]float64{1: {"loss": 1}})))
	}
	require.NoError(t, h.exp.pushMetrics(as(bobKey), gauges(trainRun("r1"), map[int64]map[string]float64{1: {"loss": 1}})))
	perOwner := map[string]int{}
	for _, r := range h.platform.Runs() {
		perOwner[r.Owner]++
	}
	require.Equal(t, map[string]int{"alice": 2, "bob": 1}, perOwner)
	require.Equal(t, int64(1), h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "run_limit", "tenant": "alice"}),
		"counted under the tenant that hit its limit")
	require.Zero(t, h.count("otelcol_exporter_prime_records_rejected", map[string]string{"tenant": "bob"}))
}

func TestTheRejectionCounterNamesTheTenantsThatLoseTheMostAndCountsTheOthersAsOther(t *testing.T) {
	h := newTenantHarness(t, func(c *Config) { c.Tenants.MaxOpenRuns, c.Tenants.NamedInMetrics = 1, 1 })
	push := func(key, run string) {
		require.NoError(t, h.exp.pushMetrics(as(key), gauges(trainRun(run), map[int64]map[string]float64{1: {"loss": 1}})))
	}
	push(aliceKey, "a1")
	push(bobKey, "b1")
	push(aliceKey, "a2") // alice's first loss: she is named
	push(bobKey, "b2")   // bob lost as much as alice: he is other
	rejected := func(tenant string) int64 {
		return h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "run_limit", "tenant": tenant})
	}
	assert.Equal(t, []int64{1, 0, 1}, []int64{rejected("alice"), rejected("bob"), rejected("other")})
	assert.Equal(t, int64(2), h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "run_limit"}), "the total stays exact")
}

func TestTheTenantsConfigNamesEachRule(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"a key of its own", func(c *Config) { c.APIKey = "k" }, "api_key must be empty"},
		{"offline", func(c *Config) { c.Mode = ModeOffline }, "needs mode: online"},
		{"no open runs", func(c *Config) { c.Tenants.MaxOpenRuns = 0 }, "tenants::max_open_runs"},
		{"no tenants", func(c *Config) { c.Tenants.MaxTenants = 0 }, "tenants::max_tenants"},
		{"no key ttl", func(c *Config) { c.Tenants.KeyTTL = 0 }, "tenants::key_ttl"},
		{"a negative rate", func(c *Config) { c.Tenants.Limits.BytesPerSecond = -1 }, "tenants::limits::bytes_per_second"},
		{"no burst", func(c *Config) { c.Tenants.Limits.BurstSeconds = 0 }, "tenants::limits::burst_seconds"},
		{"no reload", func(c *Config) { c.Tenants.Limits.ReloadInterval = 0 }, "tenants::limits::reload_interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.Tenants.Enabled = true
			tt.edit(cfg)
			err := cfg.Validate()
			require.ErrorContains(t, err, tt.want)
		})
	}
	cfg := createDefaultConfig().(*Config)
	cfg.Tenants.Enabled = true
	require.NoError(t, cfg.Validate(), "a multi-tenant gateway needs no api_key")
	cfg.Traces.Enabled = true
	require.NoError(t, cfg.Validate(), "nor does its Prime Traces: each tenant's documents go with its key")
}

func TestEachTenantsEpisodeDocumentsGoToPrimeTracesWithItsOwnKey(t *testing.T) {
	h := newTenantHarness(t, func(c *Config) {
		// The fake platform serves Prime Traces too, at its root.
		c.Traces = TracesConfig{Enabled: true, Endpoint: strings.TrimSuffix(c.ClientConfig.Endpoint, "/api/v1"), Routing: RoutingExclusive}
	})
	for _, key := range []string{aliceKey, bobKey} {
		require.NoError(t, h.exp.pushLogs(as(key), events(trainRun("docs"), nativeEpisode("e-"+key[3:8], 20))))
	}
	assert.ElementsMatch(t, []string{"alice", "bob"}, usersOf(h.platform, "/traces"), "one batch each, with its tenant's key")

	// alice sends with a new key of hers: her documents go with it.
	const aliceNewKey = "sk-alice-SECRET-3"
	h.platform.AddUser(rfttest.User{Key: aliceNewKey, ID: "alice"})
	require.NoError(t, h.exp.pushLogs(as(aliceNewKey), events(trainRun("docs"), nativeEpisode("e-new", 30))))
	var last rfttest.Request
	for _, r := range h.platform.Requests() {
		if strings.HasSuffix(r.Path, "/traces") {
			last = r
		}
	}
	assert.Equal(t, "Bearer "+aliceNewKey, last.Header.Get("Authorization"), "a tenant's Prime Traces client is rekeyed with it")
	for _, r := range h.platform.Runs() {
		assert.Empty(t, r.Objects, "exclusive routing: %s's documents are not in the sample table", r.Owner)
	}
	require.NotContains(t, h.logText(), aliceKey)
	require.NotContains(t, h.logText(), bobKey)
}

func TestAMultiTenantGatewayPartitionsItsBatchesBySenderKey(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	q := cfg.queueConfig()
	require.Empty(t, q.Get().Batch.Get().Partition.MetadataKeys)
	cfg.Tenants.Enabled = true
	q = cfg.queueConfig()
	require.Equal(t, []string{"authorization"}, q.Get().Batch.Get().Partition.MetadataKeys)
	require.Empty(t, cfg.QueueConfig.Get().Batch.Get().Partition.MetadataKeys, "the user's config is left as it was")
}

func TestATenantsClosedRunsAreRememberedWithinABoundAndTheOldestForgotten(t *testing.T) {
	h := newTenantHarness(t, func(c *Config) { c.Tenants.MaxOpenRuns = 1 })
	point := func(key string, step int64) error {
		return h.exp.pushMetrics(as(aliceKey), gauges(trainRun(key), map[int64]map[string]float64{step: {"loss": 1}}))
	}
	ids := map[string]string{}
	for i := range 6 {
		key := "r" + string(rune('0'+i))
		// The platform hears the close-out just before the registry marks
		// the run closed: until then the next run is one too many.
		require.Eventually(t, func() bool {
			require.NoError(t, point(key, 1))
			return len(h.platform.Runs()) == i+1
		}, 5*time.Second, 5*time.Millisecond)
		require.NoError(t, h.exp.pushLogs(as(aliceKey), events(trainRun(key), runEnd("completed", ""))))
		runs := h.platform.Runs()
		ids[key] = runs[len(runs)-1].ID
		h.waitStatus(ids[key], rfttest.StatusCompleted)
	}
	require.Len(t, h.platform.Runs(), 6, "a closed run does not count against max_open_runs")
	// r5 is remembered: its late data is refused, not a new run.
	require.NoError(t, point("r5", 2))
	require.Len(t, h.platform.Runs(), 6)
	require.Equal(t, int64(1), h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "run_closed"}))
	// r0 was forgotten (4 × max_open_runs closed runs are kept): its late
	// data makes a run of its own, once the registry has marked r5 closed
	// (until then r0's new run is one too many and is refused as
	// run_limit; a remembered r0 would be refused as run_closed for good).
	require.Eventually(t, func() bool {
		require.NoError(t, point("r0", 2))
		return len(h.platform.Runs()) == 7
	}, 5*time.Second, 5*time.Millisecond)
}

func TestAfterARestartATenantsIdleRunIsClosedWithItsOwnKeyBeforeItSendsAgain(t *testing.T) {
	srv := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{{Key: aliceKey, ID: "alice"}, {Key: bobKey, ID: "bob"}}})
	t.Cleanup(srv.Close)
	st := memstorage.NewExtension()
	host := extensionsHost{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{storageID: st}}
	start := func(idle time.Duration) *harness {
		cfg := createDefaultConfig().(*Config)
		cfg.ClientConfig.Endpoint = srv.BaseURL()
		cfg.Tenants.Enabled = true
		cfg.TeamID = "team-1"
		cfg.Storage = &storageID
		cfg.IdleTimeout = idle
		return newHarnessWithHost(t, srv, cfg, host)
	}
	first := start(0) // no janitor: the process is killed below
	require.NoError(t, first.exp.pushMetrics(as(aliceKey), gauges(trainRun("a"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.NoError(t, first.exp.pushMetrics(as(bobKey), gauges(trainRun("b"), map[int64]map[string]float64{1: {"loss": 1}})))
	first.abandon() // kill -9

	second := start(50 * time.Millisecond)
	for _, r := range srv.Runs() {
		second.waitStatus(r.ID, rfttest.StatusFailed)
	}
	byRun := map[string]string{}
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, "/status") {
			byRun[r.Path] = r.UserID
		}
	}
	for _, r := range srv.Runs() {
		require.Equal(t, r.Owner, byRun[srv.BaseURL()[len(srv.URL()):]+"/rft/external-runs/"+r.ID+"/status"], "run %s closed with its owner's key", r.ID)
	}
	require.Len(t, srv.Runs(), 2)
}

// gauge reads one of the exporter's gauges, as a collection would.
func gauge(t *testing.T, h *harness, name string) float64 {
	t.Helper()
	m, err := h.tel.GetMetric(name)
	require.NoError(t, err, name)
	switch g := m.Data.(type) {
	case metricdata.Gauge[int64]:
		require.Len(t, g.DataPoints, 1)
		return float64(g.DataPoints[0].Value)
	case metricdata.Gauge[float64]:
		require.Len(t, g.DataPoints, 1)
		return g.DataPoints[0].Value
	}
	t.Fatalf("%s is %T, not a gauge", name, m.Data)
	return 0
}

func TestTheOpenRunGaugesCountEveryTenantsRunsAndTheIdlest(t *testing.T) {
	h := newTenantHarness(t, nil)
	require.Zero(t, gauge(t, h, metricRunsOpen))
	require.Zero(t, gauge(t, h, metricRunIdleMax), "no open run, no idle time")
	require.NoError(t, h.exp.pushMetrics(as(aliceKey), gauges(trainRun("a"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.NoError(t, h.exp.pushMetrics(as(bobKey), gauges(trainRun("b"), map[int64]map[string]float64{1: {"loss": 1}})))
	require.Equal(t, 2.0, gauge(t, h, metricRunsOpen), "alice's and bob's")
	time.Sleep(20 * time.Millisecond)
	require.GreaterOrEqual(t, gauge(t, h, metricRunIdleMax), 0.02, "seconds since the idlest run's last data")

	require.NoError(t, h.exp.pushLogs(as(aliceKey), events(trainRun("a"), runEnd("completed", ""))))
	require.Eventually(t, func() bool { return gauge(t, h, metricRunsOpen) == 1 }, 5*time.Second, 5*time.Millisecond,
		"alice's run closed out")
}

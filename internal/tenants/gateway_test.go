package tenants

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/tenant"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/internal/testkit/memstorage"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// Alice has two keys; bob has one.
const (
	aliceKey    = "sk-alice-SECRET-1"
	aliceNewKey = "sk-alice-SECRET-2"
	bobKey      = "sk-bob-SECRET-3"
)

func newPlatform(t testing.TB) *rfttest.Server {
	t.Helper()
	srv := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{{Key: aliceKey, ID: "alice"}, {Key: aliceNewKey, ID: "alice"}, {Key: bobKey, ID: "bob"}}})
	t.Cleanup(srv.Close)
	return srv
}

// gateway is a started Gateway whose backends are their registries, with
// its rejections and logs observed.
type gateway struct {
	*Gateway[*runs.Registry]
	tel       *fleettest.Tally
	throttled *throttleTally
	logs      *observer.ObservedLogs
	// shutdown shuts the gateway down, once: a restart's first life ends
	// here, the others at the test's end.
	shutdown func()
}

// start starts a gateway in front of srv, its tenants kept in st (nil:
// none); edit adjusts its config first. The test shuts it down.
func start(t testing.TB, srv *rfttest.Server, st storage.Extension, edit func(*Config)) gateway {
	return startRevoking(t, srv, st, edit, nil)
}

// startRevoking is start with the receivers' revocation (Settings.Revoke).
func startRevoking(t testing.TB, srv *rfttest.Server, st storage.Extension, edit func(*Config), revoke func(string)) gateway {
	t.Helper()
	return startWith(t, srv, func(s *Settings[*runs.Registry]) {
		s.Storage, s.Revoke = st, revoke
		if edit != nil {
			edit(&s.Config)
		}
	})
}

// startOn is start on a shared registry's Redis, where the gateway keeps
// its tenants' limits too.
func startOn(t testing.TB, srv *rfttest.Server, shared *runstore.RedisOptions, edit func(*Config)) gateway {
	t.Helper()
	return startWith(t, srv, func(s *Settings[*runs.Registry]) {
		s.Redis = shared
		if edit != nil {
			edit(&s.Config)
		}
	})
}

// startWith starts a gateway in front of srv whose settings edit
// adjusts. The test shuts it down.
func startWith(t testing.TB, srv *rfttest.Server, edit func(*Settings[*runs.Registry])) gateway {
	t.Helper()
	base, err := rft.New(rft.Options{BaseURL: srv.BaseURL(), APIKey: PlaceholderKey, MaxAttempts: 1})
	require.NoError(t, err)
	core, logs := observer.New(zapcore.InfoLevel)
	tel := &fleettest.Tally{}
	throttled := &throttleTally{}
	set := Settings[*runs.Registry]{
		Config: Config{Enabled: true, MaxOpenRuns: 4, MaxTenants: 10, KeyTTL: time.Minute, NamedInMetrics: 2, Limits: unlimited},
		Base:   base, StorageName: "file_storage", ID: component.MustNewID("prime"),
		Runs:      fleettest.Config(func(c *runs.Config) { c.FinalizeTimeout = time.Second }),
		Deps:      runs.Deps{Logger: zap.New(core), Tel: tel, Stopping: make(chan struct{})},
		Throttled: throttled.add,
		Build: func(ctx context.Context, rc runs.Config, deps runs.Deps, t Tenant) (*runs.Registry, *runs.Registry) {
			deps.Store = t.Store
			reg := runs.New(rc, deps)
			reg.Restore(ctx)
			reg.Start()
			return reg, reg
		},
	}
	edit(&set)
	g, err := Start(context.Background(), set)
	require.NoError(t, err)
	shutdown := sync.OnceFunc(func() { require.NoError(t, g.Shutdown(context.Background())) })
	t.Cleanup(shutdown)
	return gateway{Gateway: g, tel: tel, throttled: throttled, logs: logs, shutdown: shutdown}
}

// sentWith is a push's context for a sender presenting key.
func sentWith(key string) context.Context {
	md := client.NewMetadata(map[string][]string{tenant.Header: {"Bearer " + key}})
	return client.NewContext(context.Background(), client.Info{Metadata: md})
}

func (g gateway) backendOf(t *testing.T, key string) *runs.Registry {
	t.Helper()
	reg, err := g.For(sentWith(key), "metrics", 1)
	require.NoError(t, err)
	return reg
}

func TestEachPlatformUserIsOneTenantWithARegistryOfItsOwn(t *testing.T) {
	g := start(t, newPlatform(t), nil, nil)
	alice, bob := g.backendOf(t, aliceKey), g.backendOf(t, bobKey)
	assert.NotSame(t, alice, bob)
	assert.Same(t, alice, g.backendOf(t, aliceNewKey), "two keys of one user are one tenant")
	assert.ElementsMatch(t, []*runs.Registry{alice, bob}, g.Registries())
}

func TestANewTenantPastMaxTenantsIsRefusedForGoodAndCountedWhileServedOnesGoOn(t *testing.T) {
	g := start(t, newPlatform(t), nil, func(c *Config) { c.MaxTenants = 1 })
	alice := g.backendOf(t, aliceKey)
	_, err := g.For(sentWith(bobKey), "logs", 3)
	require.True(t, consumererror.IsPermanent(err), "err = %v", err)
	assert.Equal(t, 3, g.tel.RejectedOf("logs", reject.RunLimit))
	assert.Same(t, alice, g.backendOf(t, aliceKey))
	assert.Len(t, g.Registries(), 1)
}

func TestTheIndexBringsEveryTenantBackWithTheKeyItLastSentWith(t *testing.T) {
	srv := newPlatform(t)
	st := memstorage.NewExtension()
	first := start(t, srv, st, nil)
	first.backendOf(t, aliceKey)
	first.backendOf(t, bobKey)
	first.backendOf(t, aliceNewKey) // alice's key replaced
	first.shutdown()

	raw, err := st.Client(indexKey).Get(context.Background(), indexKey)
	require.NoError(t, err)
	var idx map[string]string
	require.NoError(t, json.Unmarshal(raw, &idx))
	assert.Equal(t, map[string]string{"alice": aliceNewKey, "bob": bobKey}, idx)

	second := start(t, srv, st, nil)
	assert.Len(t, second.Registries(), 2, "both tenants are back before either sends")
}

func TestADamagedTenantIndexBringsNoTenantBackAndTheGatewayStillStarts(t *testing.T) {
	st := memstorage.NewExtension()
	require.NoError(t, st.Client(indexKey).Set(context.Background(), indexKey, []byte("{not json")))
	g := start(t, newPlatform(t), st, nil)
	assert.Empty(t, g.Registries())
	assert.Equal(t, 1, g.logs.FilterMessageSnippet("Cannot read the tenant index").Len())
	g.backendOf(t, aliceKey)
	assert.Len(t, g.Registries(), 1, "a tenant comes back as it sends again")
}

func TestAKeyThePlatformRefusesMidRunIsRevokedAtTheReceiversAtOnceAndRefusedFromTheNextPush(t *testing.T) {
	srv := newPlatform(t)
	var mu sync.Mutex
	var revoked []string
	g := startRevoking(t, srv, nil, nil, func(key string) { mu.Lock(); revoked = append(revoked, key); mu.Unlock() })
	bob := g.backendOf(t, bobKey)
	srv.RevokeKey(bobKey)
	// bob's first data since: the platform answers 401 and whoami
	// confirms it, which trips his tenant's guard.
	_, err := bob.Acquire(context.Background(), fleettest.KeyedResource("bobs-run"), "metrics", 1)
	require.Error(t, err)
	mu.Lock()
	assert.Equal(t, []string{bobKey}, revoked, "the receivers are told when the guard trips, before bob's trainer sends again")
	mu.Unlock()

	_, err = g.For(sentWith(bobKey), "metrics", 3)
	require.True(t, consumererror.IsPermanent(err), "err = %v", err)
	assert.ErrorIs(t, err, tenant.ErrRefused)
	assert.Equal(t, 3, g.tel.RejectedOf("metrics", reject.KeyRefused), "refused from the next push on, and counted")
	assert.Same(t, g.backendOf(t, aliceKey), g.backendOf(t, aliceNewKey), "another tenant goes on")
}

// throttleTally counts Settings.Throttled's records by signal and label.
type throttleTally struct {
	mu sync.Mutex
	n  map[[2]string]int
}

func (tt *throttleTally) add(signal, tenant string, records int) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if tt.n == nil {
		tt.n = map[[2]string]int{}
	}
	tt.n[[2]string{signal, tenant}] += records
}

func (tt *throttleTally) of(signal, tenant string) int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.n[[2]string{signal, tenant}]
}

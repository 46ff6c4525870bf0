package tenants

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/tenant"
	"github.com/primeintellect/primeexporter/rft"
)

// PlaceholderKey fills the base client: every tenant's client is
// Base.WithKey(its key), so it is never sent.
const PlaceholderKey = "none: a multi-tenant gateway speaks with each sender's key"

// Settings are what a Gateway is made of.
type Settings[B any] struct {
	Config Config
	// Base is the platform client, with PlaceholderKey, that each
	// tenant's client copies with the tenant's key.
	Base *rft.Client
	// Runs and Deps are each tenant's registry's config and parts before
	// its own: its client, store, logger, warnings and run limit.
	Runs runs.Config
	Deps runs.Deps
	// Redis is the shared registry (shared_registry) that a fleet of
	// gateways keeps each tenant's registry, the tenant index and each
	// tenant's ingest limit in; nil for none. Its Logger and Health are
	// the gateway's.
	Redis *runstore.RedisOptions
	// Storage keeps each tenant's registry and the tenant index, as the
	// exporter ID's clients, when Redis does not; nil without storage.
	// StorageName names it in log lines.
	Storage     storage.Extension
	StorageName string
	ID          component.ID
	// Outage are the options of each tenant's outage watches.
	Outage []platform.OutageOption
	// Health is told when a tenant's registry's storage stops taking
	// writes (err) and takes them again (nil).
	Health func(error)
	// Build assembles a tenant's backend on rc, deps and the tenant's own
	// parts, its registry restored and started, and returns it with that
	// registry.
	Build func(ctx context.Context, rc runs.Config, deps runs.Deps, t Tenant) (B, *runs.Registry)
	// Rekeyed tells a tenant's backend that the tenant sends with key from
	// now on (a revoked key replaced), for the clients it built with the
	// old one (Prime Traces'); nil when it built none.
	Rekeyed func(b B, key string)
	// Revoke refuses a key the platform refused mid-run at the receivers
	// that authenticate senders (prime_auth's RevokeKey); nil when none
	// can be told.
	Revoke func(key string)
	// Throttled counts the records of a request refused for being over
	// its tenant's ingest limit, under the tenant's label; nil counts
	// nothing.
	Throttled func(signal, tenant string, records int)
}

// Gateway holds the backend of each tenant served since the start.
type Gateway[B any] struct {
	set      Settings[B]
	logger   *zap.Logger
	verifier *tenant.Verifier
	// index is where the tenant index is kept; nil without storage or
	// Redis.
	index index
	// redis is the shared registry's connection, which every tenant's
	// store shares; nil without one.
	redis *runstore.RedisStore

	// limits are the tenants' ingest limits (limits.go).
	limits *limits

	mu     sync.Mutex
	byUser map[string]*backend[B]
}

// backend is one tenant's backend, its registry, and the client and key
// it speaks with.
type backend[B any] struct {
	user   string
	b      B
	reg    *runs.Registry
	online *platform.Online
	key    string
}

// Start makes a gateway, with the tenants of the index and their runs
// back when storage keeps them.
func Start[B any](ctx context.Context, set Settings[B]) (*Gateway[B], error) {
	g := &Gateway[B]{
		set: set, logger: set.Deps.Logger, byUser: map[string]*backend[B]{},
		verifier: tenant.NewVerifier(tenant.Whoami(set.Base), tenant.Options{TTL: set.Config.KeyTTL}),
	}
	g.set.Runs.MaxOpenRuns = set.Config.MaxOpenRuns
	var err error
	if g.limits, err = startLimits(set.Config, set.Redis, set.Throttled, g.logger); err != nil {
		return nil, err
	}
	if g.index, err = g.openIndex(ctx); err != nil {
		_ = g.limits.shutdown()
		return nil, err
	}
	if g.index == nil {
		g.logger.Info("No storage configured: a restart forgets the tenants' runs")
	} else if err := g.restore(ctx); err != nil {
		_ = g.limits.shutdown()
		return nil, err
	}
	g.logger.Info("Prime exporter is a multi-tenant gateway: each run goes to the platform with its sender's key",
		zap.String("api", set.Base.APIPrefix()), zap.Int("max_open_runs", set.Config.MaxOpenRuns))
	return g, nil
}

// For is the backend of the tenant whose key ctx's request carries. The
// error is permanent for data that no tenant may take (no key, a refused
// key, too many tenants), counted under signal; retryable when the
// platform could not be asked.
func (g *Gateway[B]) For(ctx context.Context, signal string, records int) (B, error) {
	var none B
	key, err := tenant.ParseBearer(client.FromContext(ctx).Metadata.Get(tenant.Header))
	if err != nil {
		g.set.Deps.Tel.Reject(signal, reject.NoKey, records)
		g.logger.Warn("Rejected data without a sender's platform key: the receiver must authenticate senders (prime_auth) and set include_metadata: true", zap.String("signal", signal), zap.Int("records", records), zap.Error(err))
		return none, consumererror.NewPermanent(err)
	}
	user, err := g.verifier.Verify(ctx, key)
	if errors.Is(err, tenant.ErrRefused) {
		g.set.Deps.Tel.Reject(signal, reject.KeyRefused, records)
		g.logger.Warn("Rejected data whose sender's key the platform refuses", zap.String("signal", signal), zap.Int("records", records))
		return none, consumererror.NewPermanent(err)
	}
	if err != nil {
		return none, fmt.Errorf("who sent this data cannot be told now (the platform's whoami): %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if tb, ok := g.byUser[user]; ok {
		if tb.key != key {
			g.rekeyLocked(ctx, tb, key)
		}
		return tb.b, nil
	}
	if len(g.byUser) >= g.set.Config.MaxTenants {
		g.set.Deps.Tel.Reject(signal, reject.RunLimit, records)
		g.logger.Warn("Rejected data of a new tenant: tenants::max_tenants are served already", zap.Int("max_tenants", g.set.Config.MaxTenants))
		return none, consumererror.NewPermanent(errors.New("too many tenants"))
	}
	tb, err := g.openLocked(ctx, user, key)
	if err != nil {
		return none, err
	}
	g.saveLocked(ctx, user, key)
	return tb.b, nil
}

// Tenant is what a tenant's backend is built on besides its registry's
// config and deps: the key it sends with now, the platform's objects route
// under that key, the store of its runs and sample objects, and the release
// of its idle connections.
type Tenant struct {
	User      string
	Key       string
	Objects   platform.Objects
	Store     runstore.Store
	CloseIdle func()
}

// openLocked builds and starts a tenant's backend.
func (g *Gateway[B]) openLocked(ctx context.Context, user, key string) (*backend[B], error) {
	c, err := g.set.Base.WithKey(key)
	if err != nil {
		return nil, err
	}
	logger := g.logger.With(zap.String("tenant", user))
	tb := &backend[B]{user: user, key: key}
	online := platform.NewOnline(c, quietHost{}, logger, g.set.Outage...).ForTenant(func() { g.revokeTenant(tb, logger) })
	tb.online = online
	deps := g.set.Deps
	deps.API, deps.Evals, deps.Refused = online, online, online.Refused
	deps.Logger, deps.Warn = logger, logonce.New(logger, 0)
	store, err := g.store(ctx, user)
	if err != nil {
		return nil, err
	}
	tb.b, tb.reg = g.set.Build(ctx, g.set.Runs, deps, Tenant{User: user, Key: key, Objects: online, Store: store, CloseIdle: online.CloseIdleConnections})
	g.byUser[user] = tb
	logger.Info("A new tenant: its runs go to the platform with its own key")
	return tb, nil
}

// revokeTenant revokes the key tb sends with, when its guard trips.
func (g *Gateway[B]) revokeTenant(tb *backend[B], logger *zap.Logger) {
	g.mu.Lock()
	key := tb.key
	g.mu.Unlock()
	g.revoke(key)
	if g.set.Revoke != nil {
		logger.Info("The tenant's key is refused at the receivers from now on: its trainer is told at its next request")
	}
}

// revoke refuses a key the platform refused mid-run (the tenant's guard
// tripped on a 401 whoami confirmed), here and at every receiver's
// prime_auth (Settings.Revoke), so that its trainer is refused at its next
// request rather than let in from a cache for up to its TTL. The guard
// tells it when it trips (revokeTenant); pushes already past the receiver
// are dropped by the guard.
func (g *Gateway[B]) revoke(key string) {
	g.verifier.Revoke(key)
	if g.set.Revoke != nil {
		g.set.Revoke(key)
	}
}

// rekeyLocked makes a tenant's later requests with key: the same user
// sends with another key (a revoked one replaced).
func (g *Gateway[B]) rekeyLocked(ctx context.Context, tb *backend[B], key string) {
	c, err := g.set.Base.WithKey(key)
	if err != nil {
		return
	}
	tb.online.Rekey(c)
	tb.key = key
	if g.set.Rekeyed != nil {
		g.set.Rekeyed(tb.b, key)
	}
	g.saveLocked(ctx, tb.user, key)
}

// Registry is the run registry of the tenant user; nil when user has
// sent nothing since the start (or the index brought it back).
func (g *Gateway[B]) Registry(user string) *runs.Registry {
	g.mu.Lock()
	defer g.mu.Unlock()
	if tb, ok := g.byUser[user]; ok {
		return tb.reg
	}
	return nil
}

// Registries lists every tenant's run registry.
func (g *Gateway[B]) Registries() []*runs.Registry {
	g.mu.Lock()
	defer g.mu.Unlock()
	regs := make([]*runs.Registry, 0, len(g.byUser))
	for _, tb := range g.byUser {
		regs = append(regs, tb.reg)
	}
	return regs
}

// Shutdown shuts every tenant's registry down, and closes the index.
func (g *Gateway[B]) Shutdown(ctx context.Context) error {
	g.mu.Lock()
	all := make([]*backend[B], 0, len(g.byUser))
	for _, tb := range g.byUser {
		all = append(all, tb)
	}
	g.mu.Unlock()
	errs := []error{g.limits.shutdown()}
	for _, tb := range all {
		errs = append(errs, tb.reg.Shutdown(ctx))
		tb.online.CloseIdleConnections()
	}
	if g.index != nil {
		errs = append(errs, g.index.close(ctx))
	}
	return errors.Join(errs...)
}

// quietHost is a tenant guard's host: a tenant's refused key is its own,
// not the component's status.
type quietHost struct{}

func (quietHost) GetExtensions() map[component.ID]component.Component { return nil }

package primeexporter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// tenants is a multi-tenant gateway's backends: one per platform user,
// each a whole single-key exporter's backend (its own run registry, store,
// uploader and 401 guard) speaking with that user's key. Runs are scoped
// to their tenant because each tenant's identities live in its own
// registry: a sender who presents another tenant's prime.run.key makes a
// run of its own, and one who presents another's prime.run.id is refused
// by the platform (the run is not its user's) and counted. A key the
// platform starts refusing trips that tenant's guard alone.
//
// A tenant's backend is made on its first data and kept until shutdown;
// with storage, the tenants and the key each last sent with are kept in
// the storage extension (plain text, beside the persistent queue, which
// holds each request's Authorization header too), so that after a restart
// the idle janitor and the close-outs of every tenant's runs go on with
// that tenant's key before it sends again.
type tenants struct {
	e        *primeExporter
	base     *rft.Client
	verifier *tenant.Verifier
	// rc and deps are each tenant's registry's, before its own parts.
	rc   runs.Config
	deps runs.Deps
	// se keeps each tenant's registry and the index; nil without storage.
	se    storage.Extension
	index storage.Client

	mu     sync.Mutex
	byUser map[string]*tenantBackend
}

// tenantBackend is one tenant's backend and the key it speaks with.
type tenantBackend struct {
	*backend
	online *platform.Online
	key    string
}

// indexKey is the storage key of the tenant index: user id → key.
const indexKey = "tenants"

// placeholderKey fills the base client: every tenant's client is
// base.WithKey(its key), so it is never sent.
const placeholderKey = "none: a multi-tenant gateway speaks with each sender's key"

func (e *primeExporter) startTenants(ctx context.Context, host component.Host, rc runs.Config, deps runs.Deps) (*tenants, error) {
	base, err := e.platformClient(ctx, host, placeholderKey)
	if err != nil {
		return nil, err
	}
	t := &tenants{
		e: e, base: base, rc: rc, deps: deps, byUser: map[string]*tenantBackend{},
		verifier: tenant.NewVerifier(tenant.Whoami(base), tenant.Options{TTL: e.cfg.Tenants.KeyTTL}),
	}
	t.rc.MaxOpenRuns = e.cfg.Tenants.MaxOpenRuns
	if e.cfg.Storage != nil {
		if t.se, err = e.storageExtension(host); err != nil {
			return nil, err
		}
		if t.index, err = t.se.GetClient(ctx, component.KindExporter, e.settings.ID, indexKey); err != nil {
			return nil, fmt.Errorf("storage: the tenant index: %w", err)
		}
		if err := t.restore(ctx); err != nil {
			return nil, err
		}
	} else {
		e.logger.Info("No storage configured: a restart forgets the tenants' runs")
	}
	e.logger.Info("Prime exporter is a multi-tenant gateway: each run goes to the platform with its sender's key",
		zap.String("api", base.APIPrefix()), zap.Int("max_open_runs", e.cfg.Tenants.MaxOpenRuns))
	return t, nil
}

// restore brings back the tenants of the index, each with its runs.
func (t *tenants) restore(ctx context.Context) error {
	raw, err := t.index.Get(ctx, indexKey)
	if err != nil || raw == nil {
		return err
	}
	var idx map[string]string
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.e.logger.Error("The tenant index in storage is damaged: tenants come back as they send again", zap.Error(err))
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for user, key := range idx {
		if _, err := t.openLocked(ctx, user, key); err != nil {
			return err
		}
	}
	return nil
}

// backendFor is the backend of the tenant whose key ctx's request carries.
// The error is permanent for data that no tenant may take (no key, a
// refused key, too many tenants), counted under signal; retryable when
// the platform could not be asked.
func (t *tenants) backendFor(ctx context.Context, signal string, records int) (*backend, error) {
	key, err := tenant.ParseBearer(client.FromContext(ctx).Metadata.Get(tenant.Header))
	if err != nil {
		t.e.tel.Reject(signal, reject.NoKey, records)
		t.e.logger.Warn("Rejected data without a sender's platform key: the receiver must authenticate senders (prime_auth) and set include_metadata: true", zap.String("signal", signal), zap.Int("records", records), zap.Error(err))
		return nil, consumererror.NewPermanent(err)
	}
	user, err := t.verifier.Verify(ctx, key)
	if errors.Is(err, tenant.ErrRefused) {
		t.e.tel.Reject(signal, reject.KeyRefused, records)
		t.e.logger.Warn("Rejected data whose sender's key the platform refuses", zap.String("signal", signal), zap.Int("records", records))
		return nil, consumererror.NewPermanent(err)
	}
	if err != nil {
		return nil, fmt.Errorf("who sent this data cannot be told now (the platform's whoami): %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tb, ok := t.byUser[user]; ok {
		if tb.key != key {
			t.rekeyLocked(ctx, tb, key)
		}
		return tb.backend, nil
	}
	if len(t.byUser) >= t.e.cfg.Tenants.MaxTenants {
		t.e.tel.Reject(signal, reject.RunLimit, records)
		t.e.logger.Warn("Rejected data of a new tenant: tenants::max_tenants are served already", zap.Int("max_tenants", t.e.cfg.Tenants.MaxTenants))
		return nil, consumererror.NewPermanent(errors.New("too many tenants"))
	}
	tb, err := t.openLocked(ctx, user, key)
	if err != nil {
		return nil, err
	}
	t.saveLocked(ctx)
	return tb.backend, nil
}

// openLocked builds and starts a tenant's backend.
func (t *tenants) openLocked(ctx context.Context, user, key string) (*tenantBackend, error) {
	c, err := t.base.WithKey(key)
	if err != nil {
		return nil, err
	}
	logger := t.e.logger.With(zap.String("tenant", user))
	online := platform.NewOnline(c, quietHost{}, logger, t.e.outageOptions()...).ForTenant()
	warn := logonce.New(logger, 0)
	deps := t.deps
	deps.API, deps.Evals, deps.Refused = online, online, online.Refused
	deps.Logger, deps.Warn = logger, warn
	store, err := t.store(ctx, user)
	if err != nil {
		return nil, err
	}
	// No Prime Traces: config.go refuses traces::enabled with tenants.
	b := t.e.startBackend(ctx, &backend{warn: warn, closeIdle: online.CloseIdleConnections, ambient: newAmbientState(t.e.cfg.Ambient), objects: online, store: store}, t.rc, deps, nil)
	tb := &tenantBackend{backend: b, online: online, key: key}
	t.byUser[user] = tb
	logger.Info("A new tenant: its runs go to the platform with its own key")
	return tb, nil
}

// rekeyLocked makes a tenant's later requests with key: the same user
// sends with another key (a revoked one replaced).
func (t *tenants) rekeyLocked(ctx context.Context, tb *tenantBackend, key string) {
	c, err := t.base.WithKey(key)
	if err != nil {
		return
	}
	tb.online.Rekey(c)
	tb.key = key
	t.saveLocked(ctx)
}

// store is a tenant's run registry's store: a storage client of its own
// (named by a digest of the user id, which may hold any character), or
// memory without storage.
func (t *tenants) store(ctx context.Context, user string) (registryStore, error) {
	if t.se == nil {
		return runstore.NewMemStore(), nil
	}
	sum := sha256.Sum256([]byte(user))
	name := "runs-" + hex.EncodeToString(sum[:8])
	c, err := t.se.GetClient(ctx, component.KindExporter, t.e.settings.ID, name)
	if err != nil {
		return nil, fmt.Errorf("storage: tenant %s's run registry: %w", user, err)
	}
	return runstore.NewExtensionStore(c, runstore.ExtensionOptions{Logger: t.e.logger, Name: t.e.cfg.Storage.String(), Health: t.e.status.health(statusRunRegistry)}), nil
}

// saveLocked writes the tenant index. A failed write costs the close-outs
// of a restart before the tenant sends again, not data: it is logged.
func (t *tenants) saveLocked(ctx context.Context) {
	if t.index == nil {
		return
	}
	idx := make(map[string]string, len(t.byUser))
	for user, tb := range t.byUser {
		idx[user] = tb.key
	}
	raw, err := json.Marshal(idx)
	if err == nil {
		err = t.index.Set(ctx, indexKey, raw)
	}
	if err != nil {
		t.e.logger.Warn("Cannot write the tenant index to storage: after a restart a tenant's idle runs wait for it to send again", zap.Error(err))
	}
}

// registries lists every tenant's run registry.
func (t *tenants) registries() []*runs.Registry {
	t.mu.Lock()
	defer t.mu.Unlock()
	regs := make([]*runs.Registry, 0, len(t.byUser))
	for _, tb := range t.byUser {
		regs = append(regs, tb.reg)
	}
	return regs
}

// shutdown shuts every tenant's registry down.
func (t *tenants) shutdown(ctx context.Context) error {
	t.mu.Lock()
	all := make([]*tenantBackend, 0, len(t.byUser))
	for _, tb := range t.byUser {
		all = append(all, tb)
	}
	t.mu.Unlock()
	var errs []error
	for _, tb := range all {
		errs = append(errs, tb.reg.Shutdown(ctx))
		tb.closeIdle()
	}
	if t.index != nil {
		errs = append(errs, t.index.Close(ctx))
	}
	return errors.Join(errs...)
}

// quietHost is a tenant guard's host: a tenant's refused key is its own,
// not the component's status, so readiness stays up while other tenants
// flow.
type quietHost struct{}

func (quietHost) GetExtensions() map[component.ID]component.Component { return nil }

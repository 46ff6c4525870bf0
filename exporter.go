package primeexporter

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/queuefill"
	"github.com/primeintellect/primeexporter/internal/queuestore"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstatus"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/sharedcomponent"
	"github.com/primeintellect/primeexporter/internal/telemetry"
	"github.com/primeintellect/primeexporter/internal/tenants"
	"github.com/primeintellect/primeexporter/internal/upload"
	"github.com/primeintellect/primeexporter/rft"
)

// primeExporter is one exporter per config, shared by the metrics and logs
// pipelines: the collector builds one exporterhelper instance per signal,
// and both push into the same run registry so that a run's metrics and
// episodes share one platform run.
type primeExporter struct {
	cfg      *Config
	settings exporter.Settings
	logger   *zap.Logger
	tel      *telemetry.Counters
	opts     options
	// status is the component status every pipeline's host hears.
	status *sharedcomponent.Status
	// queues reads both signals' sending queue fill, for the outage
	// warning.
	queues queuefill.Queues

	// stopping closes at the first shutdown notice (BeginShutdown).
	stopping     chan struct{}
	stoppingOnce sync.Once

	mu   sync.Mutex
	live *backend // nil before start, and in disabled mode
	// tenants replaces live on a multi-tenant gateway.
	tenants *tenants.Gateway[*backend]
	// unregister removes the exporter from the status extensions it
	// answers for (internal/runstatus).
	unregister func()
}

// backend is what start chose: the lifecycle, the uploader, and what to
// release at shutdown.
type backend struct {
	reg      *runs.Registry
	uploader *upload.Uploader
	evals    platform.Evals
	// tel counts a multi-tenant gateway tenant's rejections under its
	// name; nil for the exporter's own.
	tel *telemetry.Counters
	// traces is a multi-tenant gateway tenant's Prime Traces, which a new
	// key of the tenant rekeys; nil otherwise.
	traces *platform.OnlineTraces
	// objects and store are where the uploader puts sample objects and
	// keeps their progress; store is the run registry's too.
	objects   platform.Objects
	store     runstore.Store
	warn      *logonce.Logger
	closeIdle func()
	ambient   *ambientState
}

// newPrimeExporter builds the exporter the pipelines of cfg share, which
// reports through status (internal/sharedcomponent).
func newPrimeExporter(cfg *Config, set exporter.Settings, status *sharedcomponent.Status, opts ...option) (*primeExporter, error) {
	tel, err := telemetry.New(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	e := &primeExporter{cfg: cfg, settings: set, logger: set.Logger, tel: tel, status: status, stopping: make(chan struct{})}
	for _, o := range opts {
		o(&e.opts)
	}
	return e, nil
}

// Start chooses the backends, once, on the first pipeline's start
// (internal/sharedcomponent): the HTTP client is made here because auth
// extensions exist only now. What host reports every pipeline's host
// hears.
func (e *primeExporter) Start(ctx context.Context, host component.Host) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.tel.ObserveRuns(e.openRuns); err != nil {
		return err
	}
	warn := logonce.New(e.logger, 0)
	rc := runs.Config{
		Defaults: e.cfg.Run, TeamID: e.cfg.TeamID, EvalID: e.cfg.Eval.ID,
		FinalizeGrace: e.cfg.FinalizeGrace, FinalizeTimeout: e.cfg.FinalizeTimeout, IdleTimeout: e.cfg.IdleTimeout,
		RetryEnabled: e.cfg.RetryConfig.Enabled, RetryMaxElapsed: e.cfg.RetryConfig.MaxElapsedTime,
		QueueFlush: e.cfg.queueFlush(), AmbientMaxKeys: e.cfg.Ambient.MaxKeys,
		Persistent: e.cfg.Storage != nil || e.cfg.SharedRegistry.HasValue(),
	}
	deps := runs.Deps{Logger: e.logger, Warn: warn, Tel: e.tel, Stopping: e.stopping}
	var traces platform.Traces
	b := &backend{warn: warn, closeIdle: func() {}, ambient: newAmbientState(e.cfg.Ambient)}
	switch e.cfg.Mode {
	case ModeDisabled:
		e.logger.Info("Prime exporter is disabled: everything it receives is accepted and dropped")
		e.unregister = runstatus.Register(host, e.runStatus())
		return nil
	case ModeOffline:
		off, err := platform.NewOffline(e.cfg.Directory)
		if err != nil {
			return err
		}
		e.logger.Info("Prime exporter is offline: runs are written to a local directory", zap.String("directory", e.cfg.Directory))
		deps.API, deps.Evals, b.objects = off, off, off
		if e.cfg.Traces.Enabled {
			traces = off
		}
		rc.Directory = e.cfg.Directory
	default:
		rc.RequireTeam = true
		rc.FrontendURL = e.cfg.FrontendURL
		if e.cfg.Tenants.Enabled {
			t, err := e.startTenants(ctx, host, rc, deps)
			if err != nil {
				return err
			}
			e.tenants = t
			e.unregister = runstatus.Register(host, e.runStatus())
			return nil
		}
		online, err := e.onlineBackend(ctx, host)
		if err != nil {
			return err
		}
		deps.API, deps.Evals, b.objects, deps.Refused, b.closeIdle = online, online, online, online.Refused, online.CloseIdleConnections
		if e.cfg.Traces.Enabled {
			t, err := e.onlineTraces(string(e.cfg.APIKey))
			if err != nil {
				return err
			}
			traces, b.closeIdle = t, func() { online.CloseIdleConnections(); t.CloseIdleConnections() }
		}
	}
	if flush := e.cfg.queueFlush(); e.cfg.FinalizeGrace < flush {
		e.logger.Warn("finalize_grace is shorter than sending_queue::batch::flush_timeout: data still batching when a run ends may arrive after it is closed and be refused",
			zap.Duration("finalize_grace", e.cfg.FinalizeGrace), zap.Duration("flush_timeout", flush))
	}
	store, err := e.openStore(ctx, host)
	if err != nil {
		return err
	}
	b.store = store
	e.live = e.startBackend(ctx, b, rc, deps, traces)
	e.unregister = runstatus.Register(host, e.runStatus())
	return nil
}

// startBackend completes b (its warn, closeIdle, ambient state, objects and
// store set) with the run registry on deps and b.store, restored and
// started, and the uploader: the one assembly of a backend, the single
// key's and each tenant's. traces is nil when documents do not go to Prime
// Traces.
func (e *primeExporter) startBackend(ctx context.Context, b *backend, rc runs.Config, deps runs.Deps, traces platform.Traces) *backend {
	deps.Store = b.store
	b.reg, b.evals = runs.New(rc, deps, e.opts.runs...), deps.Evals
	b.reg.Restore(ctx)
	b.uploader = upload.New(upload.Config{
		StepInterval: e.cfg.Samples.StepInterval, MaxEpisodeBytes: e.cfg.Samples.MaxEpisodeBytes, MaxObjectBytes: e.cfg.Samples.MaxObjectBytes,
		Traces: traces, Exclusive: e.cfg.Traces.Routing == RoutingExclusive,
	}, upload.NewObjects(b.objects, b.store, b.warn), cmp.Or(b.tel, e.tel), b.warn)
	b.reg.Start()
	return b
}

// onlineBackend builds the platform client with the configured key.
func (e *primeExporter) onlineBackend(ctx context.Context, host component.Host) (*platform.Online, error) {
	client, err := e.platformClient(ctx, host, string(e.cfg.APIKey))
	if err != nil {
		return nil, err
	}
	e.logger.Info("Prime exporter is online", zap.String("api", client.APIPrefix()))
	if e.cfg.TeamID == "" {
		e.logger.Warn("No team_id is configured: runs whose resource has no prime.run.team_id cannot be created, and their data is rejected (reason no_team); attached runs need none")
	}
	return platform.NewOnline(client, host, e.logger, e.outageOptions()...), nil
}

// startTenants starts a multi-tenant gateway (internal/tenants), whose
// tenants' backends are built as the single key's is, by startBackend.
func (e *primeExporter) startTenants(ctx context.Context, host component.Host, rc runs.Config, deps runs.Deps) (*tenants.Gateway[*backend], error) {
	base, err := e.platformClient(ctx, host, tenants.PlaceholderKey)
	if err != nil {
		return nil, err
	}
	var baseTraces *rft.Traces
	if e.cfg.Traces.Enabled {
		if baseTraces, err = e.tracesClient(tenants.PlaceholderKey); err != nil {
			return nil, err
		}
	}
	labels := telemetry.NewLabels(e.cfg.Tenants.NamedInMetrics)
	deps.Tel = e.tel.ForTenant("", labels) // what no tenant can be told for
	set := tenants.Settings[*backend]{
		Config: e.cfg.Tenants, Base: base, Runs: rc, Deps: deps, ID: e.settings.ID,
		Outage: e.outageOptions(), Health: e.status.Health(statusRunRegistry),
		Build: func(ctx context.Context, rc runs.Config, deps runs.Deps, t tenants.Tenant) (*backend, *runs.Registry) {
			tel := e.tel.ForTenant(t.User, labels)
			deps.Tel = tel
			b := &backend{warn: deps.Warn, closeIdle: t.CloseIdle, ambient: newAmbientState(e.cfg.Ambient), objects: t.Objects, store: t.Store, tel: tel}
			var traces platform.Traces
			if baseTraces != nil {
				// Each tenant's documents go to Prime Traces with its own
				// key, as its runs' other requests do.
				if tr, err := baseTraces.WithKey(t.Key); err == nil {
					b.traces = platform.NewOnlineTraces(tr, deps.Logger, e.outageOptions()...)
					traces, b.closeIdle = b.traces, func() { t.CloseIdle(); tr.CloseIdleConnections() }
				}
			}
			b = e.startBackend(ctx, b, rc, deps, traces)
			return b, b.reg
		},
		Rekeyed: func(b *backend, key string) {
			if b.traces == nil {
				return
			}
			if tr, err := baseTraces.WithKey(key); err == nil {
				b.traces.Rekey(tr)
			}
		},
	}
	set.Revoke, set.Throttled = tenants.KeyRevokers(host), e.tel.Throttle
	if set.Redis, err = e.cfg.redisOptions(ctx); err != nil {
		return nil, err
	}
	if set.Redis == nil && e.cfg.Storage != nil {
		if set.Storage, err = runstore.StorageExtension(host, *e.cfg.Storage); err != nil {
			return nil, err
		}
		set.StorageName = e.cfg.Storage.String()
	}
	return tenants.Start(ctx, set)
}

// platformClient builds the platform client for key: the API client from
// the confighttp settings (auth extensions, TLS, proxy, headers), and a
// bare client for presigned PUTs that shares only the proxy and the
// timeout.
func (e *primeExporter) platformClient(ctx context.Context, host component.Host, key string) (*rft.Client, error) {
	httpClient, err := e.cfg.ClientConfig.ToClient(ctx, host.GetExtensions(), e.settings.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	putClient, err := rft.NewObjectClient(e.cfg.ClientConfig.ProxyURL, e.cfg.ClientConfig.Timeout)
	if err != nil {
		return nil, err
	}
	opts := rft.Options{
		BaseURL:    e.cfg.ClientConfig.Endpoint,
		HTTPClient: httpClient,
		PutClient:  putClient,
		UserAgent:  "otelcol-prime-exporter/" + e.settings.BuildInfo.Version,
		// In-place backoff ends when the collector starts shutting down,
		// so that draining the queue does not wait it out.
		Sleep: rft.SleepUnless(e.stopping),
	}
	for _, f := range e.opts.client {
		f(&opts)
	}
	opts.APIKey = key
	client, err := rft.New(opts)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	return client, nil
}

// onlineTraces builds the Prime Traces client. Prime Traces is another
// host: it gets the proxy, but none of the API client's headers or auth
// extensions, and a bulk upload's timeout.
func (e *primeExporter) onlineTraces(key string) (*platform.OnlineTraces, error) {
	c, err := e.tracesClient(key)
	if err != nil {
		return nil, err
	}
	return platform.NewOnlineTraces(c, e.logger, e.outageOptions()...), nil
}

// tracesClient builds the Prime Traces client with key (a multi-tenant
// gateway's placeholder, which each tenant's copy replaces: WithKey).
func (e *primeExporter) tracesClient(key string) (*rft.Traces, error) {
	hc, err := rft.NewObjectClient(e.cfg.ClientConfig.ProxyURL, 0)
	if err != nil {
		return nil, err
	}
	opts := rft.TracesOptions{
		URL:        e.cfg.Traces.Endpoint,
		APIKey:     key,
		HTTPClient: hc,
		UserAgent:  "otelcol-prime-exporter/" + e.settings.BuildInfo.Version,
		Sleep:      rft.SleepUnless(e.stopping),
	}
	c, err := rft.NewTraces(opts)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	e.logger.Info("Prime Traces is on: episode documents go to "+c.Endpoint(), zap.String("routing", string(e.cfg.Traces.Routing)))
	return c, nil
}

// tapQueue gives a signal's exporterhelper the meter provider through which
// the exporter reads that signal's queue fill.
func (e *primeExporter) tapQueue(set exporter.Settings, signal string) exporter.Settings {
	set.MeterProvider = e.queues.Tap(signal, set.MeterProvider)
	return set
}

// outageOptions make the outage warning say how full the sending queues
// are, in the queue's sizer, and an outage the exporter's status.
func (e *primeExporter) outageOptions() []platform.OutageOption {
	unit := "requests"
	if q := e.cfg.QueueConfig.Get(); q != nil {
		unit = q.Sizer.String()
	}
	return append([]platform.OutageOption{
		platform.WithOutageBacklog(&e.queues, unit),
		platform.WithOutageHealth(e.status.Set),
	}, e.opts.outage...)
}

// statusRunRegistry is the run registry's source of the component status,
// named as the operator knows it. The outage watches name theirs
// ("platform API", "object storage", "Prime Traces").
const statusRunRegistry = "run registry"

// openStore opens the run registry's store the config asks for
// (runstore.Open).
func (e *primeExporter) openStore(ctx context.Context, host component.Host) (runstore.Store, error) {
	o := runstore.OpenOptions{Storage: e.cfg.Storage, Host: host, ID: e.settings.ID, Logger: e.logger, Health: e.status.Health(statusRunRegistry)}
	var err error
	if o.Redis, err = e.cfg.redisOptions(ctx); err != nil {
		return nil, err
	}
	return runstore.Open(ctx, o)
}

// Shutdown, after the last pipeline's, finishes the pending close-outs;
// runs that did not end stay open on the platform.
func (e *primeExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.tel.StopObserving()
	if e.unregister != nil {
		e.unregister()
		e.unregister = nil
	}
	b, t := e.live, e.tenants
	e.live, e.tenants = nil, nil
	if t != nil {
		return t.Shutdown(ctx)
	}
	if b == nil {
		return nil
	}
	defer b.closeIdle()
	return b.reg.Shutdown(ctx)
}

// BeginShutdown runs at each pipeline's shutdown, before its
// exporterhelper drains its queue: in-place waits end, so the drain ends
// within the collector's shutdown deadline.
func (e *primeExporter) BeginShutdown() {
	e.stoppingOnce.Do(func() { close(e.stopping) })
}

// queueHost is the host the signal's exporterhelper starts on: with a
// persistent sending queue, its storage client keeps the queue's progress
// in memory while storage refuses writes, where the queue alone would drop
// the requests it reads meanwhile (internal/queuestore).
func (e *primeExporter) queueHost(host component.Host, signal string) component.Host {
	if !e.cfg.persistentQueue() {
		return host
	}
	return queuestore.Host(host, *e.cfg.QueueConfig.Get().StorageID, signal, e.logger)
}

// openRuns counts the open runs of every registry the exporter holds,
// and how long the idlest has gone without data.
func (e *primeExporter) openRuns() (n int, idlest time.Duration) {
	e.mu.Lock()
	b, t := e.live, e.tenants
	e.mu.Unlock()
	var regs []*runs.Registry
	if b != nil {
		regs = append(regs, b.reg)
	}
	if t != nil {
		regs = append(regs, t.Registries()...)
	}
	for _, reg := range regs {
		k, d := reg.Open()
		n, idlest = n+k, max(idlest, d)
	}
	return n, idlest
}

// backend is nil in disabled mode and after shutdown: pushes drop
// everything. On a multi-tenant gateway it is always nil: a backend is
// the sender's (backendFor).
func (e *primeExporter) backend() *backend {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live
}

// backendFor is the backend for a push of records of signal: the one
// backend, or on a multi-tenant gateway the sender's, named by the key in
// ctx's metadata. An error says the data is not taken (tenants.Gateway.For).
func (e *primeExporter) backendFor(ctx context.Context, signal string, records int) (*backend, error) {
	e.mu.Lock()
	b, t := e.live, e.tenants
	e.mu.Unlock()
	if t == nil {
		return b, nil
	}
	return t.For(ctx, signal, records)
}

// runStatus is the exporter as the prime_status route asks it: the run
// registry serving now (on a multi-tenant gateway the caller's tenant's),
// and where its runs can be seen.
func (e *primeExporter) runStatus() runstatus.Source {
	src := runstatus.Source{Disabled: e.cfg.Mode == ModeDisabled, Registry: func(context.Context) runstatus.Registry { return e.registry() }, Where: runstatus.Dashboards(e.cfg.FrontendURL)}
	if e.cfg.Tenants.Enabled {
		src.Registry = runstatus.ByUser(e.tenantRegistry)
	}
	if e.cfg.Mode == ModeOffline {
		src.Where = runstatus.Directories(e.cfg.Directory)
	}
	return src
}

// tenantRegistry is the run registry of a multi-tenant gateway's tenant
// user; nil when it has none.
func (e *primeExporter) tenantRegistry(user string) runstatus.Registry {
	e.mu.Lock()
	g := e.tenants
	e.mu.Unlock()
	if g == nil {
		return nil
	}
	if reg := g.Registry(user); reg != nil {
		return reg
	}
	return nil
}

// registry is the run registry serving now; nil in disabled mode, before
// start, after shutdown and on a multi-tenant gateway.
func (e *primeExporter) registry() runstatus.Registry {
	if b := e.backend(); b != nil {
		return b.reg
	}
	return nil
}

package primeexporter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"

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
	tel      *telemetry

	// onLastShutdown removes the exporter from its factory's share, so a
	// reload builds a fresh one.
	onLastShutdown func()

	// tuneClient lets tests make the client's in-place retries instant.
	tuneClient func(*rft.Options)

	mu      sync.Mutex
	starts  int
	reg     *registry
	samples *samplesSink
}

func newPrimeExporter(cfg *Config, set exporter.Settings) (*primeExporter, error) {
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &primeExporter{cfg: cfg, settings: set, logger: set.Logger, tel: tel}, nil
}

// start builds the platform client once, on the first pipeline's start:
// the HTTP client is made here because auth extensions exist only now.
func (e *primeExporter) start(ctx context.Context, host component.Host) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts++
	if e.starts > 1 {
		return nil
	}
	var p platform
	var guard *authGuard
	stopping := make(chan struct{})
	switch e.cfg.Mode {
	case ModeDisabled:
		e.logger.Info("Prime exporter is disabled: everything it receives is accepted and dropped")
		return nil
	case ModeOffline:
		store, err := newOfflineStore(e.cfg.Directory, time.Now)
		if err != nil {
			return err
		}
		e.logger.Info("Prime exporter is offline: runs are written to a local directory", zap.String("directory", e.cfg.Directory))
		p = store
	default:
		httpClient, err := e.cfg.ClientConfig.ToClient(ctx, host.GetExtensions(), e.settings.TelemetrySettings)
		if err != nil {
			return err
		}
		opts := rft.Options{
			BaseURL:    e.cfg.ClientConfig.Endpoint,
			APIKey:     string(e.cfg.APIKey),
			HTTPClient: httpClient,
			// Object storage gets the same per-request timeout but none of the
			// platform client's headers or auth (environment proxies apply).
			PutClient: &http.Client{Timeout: e.cfg.ClientConfig.Timeout},
			UserAgent: "otelcol-prime-exporter/" + e.settings.BuildInfo.Version,
			// In-place backoff ends when the collector starts shutting
			// down, so that draining the queue does not wait it out.
			Sleep: sleepUnlessStopping(stopping),
		}
		if e.tuneClient != nil {
			e.tuneClient(&opts)
		}
		client, err := rft.New(opts)
		if err != nil {
			return fmt.Errorf("endpoint: %w", err)
		}
		e.logger.Info("Prime exporter is online", zap.String("api", client.APIPrefix()))
		guard = newAuthGuard(client, host, e.logger)
		p = guard
	}
	if q := e.cfg.QueueConfig.Get(); q != nil && q.Batch.HasValue() && e.cfg.FinalizeGrace < q.Batch.Get().FlushTimeout {
		e.logger.Warn("finalize_grace is shorter than sending_queue::batch::flush_timeout: data still batching when a run ends may arrive after it is closed and be refused",
			zap.Duration("finalize_grace", e.cfg.FinalizeGrace), zap.Duration("flush_timeout", q.Batch.Get().FlushTimeout))
	}
	store, err := e.openStore(ctx, host)
	if err != nil {
		return err
	}
	e.reg = newRegistry(e.cfg, p, store, e.logger, e.tel)
	e.reg.auth = guard
	e.reg.stopping = stopping
	if err := e.reg.restore(ctx); err != nil {
		return errors.Join(fmt.Errorf("storage: restoring runs: %w", err), store.close(ctx))
	}
	e.samples = newSamplesSink(e.reg, e.cfg.Samples)
	e.reg.startJanitor()
	return nil
}

// openStore opens the storage extension's client, or says plainly what a
// restart will cost without one.
func (e *primeExporter) openStore(ctx context.Context, host component.Host) (runStore, error) {
	if e.cfg.Storage == nil {
		e.logger.Info("No storage configured: a collector restart forgets the runs it served. Runs it created are created again (a second run), " +
			"and their episode tables continue under random sample_id ranges; set storage: <storage extension> to keep them across restarts")
		return newMemStore(), nil
	}
	ext, ok := host.GetExtensions()[*e.cfg.Storage]
	if !ok {
		return nil, fmt.Errorf("storage: no extension %q is configured; add it under extensions and service::extensions", e.cfg.Storage.String())
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, errNotStorage(e.cfg.Storage.String())
	}
	client, err := se.GetClient(ctx, component.KindExporter, e.settings.ID, "runs")
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return newExtensionStore(client), nil
}

// shutdown lets the last pipeline finish the pending close-outs; runs that
// did not end stay open on the platform.
func (e *primeExporter) shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.starts == 0 {
		return nil
	}
	e.starts--
	if e.starts > 0 {
		return nil
	}
	if e.onLastShutdown != nil {
		e.onLastShutdown()
	}
	if e.reg == nil {
		return nil
	}
	return errors.Join(e.reg.shutdown(ctx), e.reg.store.close(ctx))
}

// beginShutdown runs before exporterhelper drains its queue (see
// stopNotifier): in-place waits end, so the drain ends within the
// collector's shutdown deadline.
func (e *primeExporter) beginShutdown() {
	if g := e.registry(); g != nil {
		g.beginStop()
	}
}

// stopNotifier wraps an exporterhelper exporter so the shared exporter
// learns of a shutdown before the helper's queue drain, which runs before
// the helper calls the exporter's own shutdown.
type stopNotifier struct {
	component.Component
	e *primeExporter
}

func (s stopNotifier) Shutdown(ctx context.Context) error {
	s.e.beginShutdown()
	return s.Component.Shutdown(ctx)
}

// registry is nil in disabled mode: pushes drop everything.
func (e *primeExporter) registry() *registry {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reg
}

package fleettest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/runs"
)

// Collector is one run registry as one collector process runs it, on its
// own (no fleet): a platform, a store, its log lines observed and its
// self-telemetry tallied. It is shut down when the test ends, unless the
// test shut it down or crashed it first.
type Collector struct {
	Reg  *runs.Registry
	Logs *observer.ObservedLogs
	Tel  *Tally
	// Objects and Store are where an uploader of this collector puts and
	// keeps its sample objects: api, when it stores objects, and store.
	Objects platform.Objects
	Store   runs.Store

	t    testing.TB
	once sync.Once // Shutdown or Crash
}

// NewCollector builds the registry on api (its Evals too,
// where api has them) and store, restores what store holds and starts it,
// as the exporter's start does.
func NewCollector(t testing.TB, cfg runs.Config, api platform.Runs, store runs.Store, opts ...runs.Option) *Collector {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(core)
	c := &Collector{Logs: logs, Tel: &Tally{}, Store: store, t: t}
	c.Objects, _ = api.(platform.Objects)
	c.Reg = runs.New(cfg, withBackend(runs.Deps{API: api, Store: store, Logger: logger, Warn: logonce.New(logger, 0), Tel: c.Tel}), opts...)
	c.Reg.Restore(context.Background())
	c.Reg.Start()
	t.Cleanup(c.Shutdown)
	return c
}

// withBackend adds api's evaluations role to deps, as the online backend
// plays it too.
func withBackend(deps runs.Deps) runs.Deps {
	if e, ok := deps.API.(platform.Evals); ok {
		deps.Evals = e
	}
	return deps
}

// Shutdown shuts the registry down as the exporter's shutdown does,
// within 10 s.
func (c *Collector) Shutdown() {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(c.t, c.Reg.Shutdown(ctx))
	})
}

// Crash leaves the registry as kill -9 would: nothing is shut down, and
// what it saved stays as it was.
func (c *Collector) Crash() { c.once.Do(func() {}) }

// Logged counts the log lines whose message contains snippet.
func (c *Collector) Logged(snippet string) int { return c.Logs.FilterMessageSnippet(snippet).Len() }

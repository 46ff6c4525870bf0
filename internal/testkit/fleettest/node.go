package fleettest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
)

// Config is the registry configuration of these tests: a team required and
// given (team-1), a default model, and no field saying where data came from.
// Each edit then changes it.
func Config(edits ...func(*runs.Config)) runs.Config {
	cfg := runs.Config{
		RequireTeam: true, TeamID: "team-1", FinalizeTimeout: 5 * time.Second,
		Defaults: runs.Defaults{Model: "Qwen/Qwen3-8B"},
	}
	for _, edit := range edits {
		edit(&cfg)
	}
	return cfg
}

// Start builds a run registry on api (its Evals too, where api
// has them) and store, restores what store holds and
// starts it, as the exporter's start does. The caller shuts it down.
func Start(cfg runs.Config, api platform.Runs, store runs.Store, logger *zap.Logger, tel runs.Telemetry) *runs.Registry {
	reg := runs.New(cfg, withBackend(runs.Deps{API: api, Store: store, Logger: logger, Warn: logonce.New(logger, 0), Tel: tel}))
	reg.Restore(context.Background())
	reg.Start()
	return reg
}

// Node is one run registry on the shared Redis, without the rest of the
// exporter: one collector process of a fleet, seen at the lifecycle's API.
type Node struct {
	Reg   *runs.Registry
	Store *runstore.RedisStore
	// Objects is where an uploader of this node puts sample objects: api,
	// when it stores objects.
	Objects platform.Objects
	Logs    *observer.ObservedLogs
	Tel     *Tally
	// Health receives what the store reports to the collector's status:
	// an error when Redis stops answering, nil when it is back.
	Health chan error

	t    testing.TB
	once sync.Once
}

// NewNode starts a Node on srv (key prefix "test") with Config(edits…),
// and shuts it down when the test ends.
func NewNode(t testing.TB, srv *redistest.Server, api platform.Runs, edits ...func(*runs.Config)) *Node {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(core)
	n := &Node{Logs: logs, Tel: &Tally{}, Health: make(chan error, 16), t: t}
	n.Objects, _ = api.(platform.Objects)
	health := func(err error) {
		select {
		case n.Health <- err:
		default:
		}
	}
	n.Store = runstore.NewRedisStore(runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "test", Logger: logger, Health: health})
	n.Reg = Start(Config(edits...), api, n.Store, logger, n.Tel)
	t.Cleanup(n.Shutdown)
	return n
}

// Shutdown shuts the node's registry down, once: the test's own call or
// the one when the test ends.
func (n *Node) Shutdown() {
	n.once.Do(func() { require.NoError(n.t, n.Reg.Shutdown(context.Background())) })
}

// RedisClient is a test's own view of the shared Redis.
func RedisClient(t testing.TB, srv *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

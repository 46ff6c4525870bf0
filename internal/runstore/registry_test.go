package runstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/primeintellect/primeexporter/internal/logonce"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/redistest"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The registry these tests run a store under: a run registry on a store,
// seen at the lifecycle's API, as a collector process uses it. Copied from
// internal/runs/fleet_redis_test.go, whose fleet tests use the same.

// keyedResource is the resource of a trainer that creates a run by key.
func keyedResource(key string) pcommon.Resource {
	res := pcommon.NewResource()
	res.Attributes().PutStr(runs.AttrRunKey, key)
	return res
}

// countingRuns is a platform that counts its creates and finalizes; a
// create takes delay, so that concurrent first data overlaps it.
type countingRuns struct {
	delay time.Duration

	mu        sync.Mutex
	creates   int
	finalized []string
}

func (c *countingRuns) CreateRun(context.Context, rft.CreateRunRequest, platform.Origin) (rft.Run, error) {
	time.Sleep(c.delay)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.creates++
	return rft.Run{ID: fmt.Sprintf("run-%d", c.creates)}, nil
}

func (c *countingRuns) AttachRun(context.Context, string, platform.Origin) error { return nil }

func (c *countingRuns) PostMetrics(context.Context, string, map[string]float64) error { return nil }

func (c *countingRuns) Finalize(_ context.Context, id string, _ int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finalized = append(c.finalized, id)
	return nil
}

func (c *countingRuns) SetStatus(context.Context, string, rft.Status, string) error { return nil }

func (c *countingRuns) counts() (creates int, finalized []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creates, append([]string(nil), c.finalized...)
}

// tally is the registry's self-telemetry, counted.
type tally struct {
	mu      sync.Mutex
	rejects map[reject.Reason]int
}

func (t *tally) Reject(_ string, reason reject.Reason, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rejects == nil {
		t.rejects = map[reject.Reason]int{}
	}
	t.rejects[reason] += n
}
func (*tally) Skip(string, reject.Reason, int) {}
func (*tally) RunEvent(string)                 {}
func (*tally) Post(string)                     {}

func (t *tally) rejected(reason reject.Reason) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rejects[reason]
}

// node is one run registry on the shared Redis, without the rest of the
// exporter: one collector process of a fleet, seen at the lifecycle's API.
type node struct {
	reg    *runs.Registry
	store  *runstore.RedisStore
	logs   *observer.ObservedLogs
	tel    *tally
	health chan error
}

func newNode(t *testing.T, srv *redistest.Server, api *countingRuns, edits ...func(*runs.Config)) *node {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	logger := zap.New(core)
	c := &node{logs: logs, tel: &tally{}, health: make(chan error, 16)}
	health := func(err error) {
		select {
		case c.health <- err:
		default:
		}
	}
	c.store = runstore.NewRedisStore(runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "test", Logger: logger, Health: health})
	cfg := runs.Config{
		RequireTeam: true, TeamID: "team-1", FinalizeTimeout: 5 * time.Second,
		Defaults: runs.Defaults{Model: "Qwen/Qwen3-8B"},
		Where:    func(string) zap.Field { return zap.Skip() },
	}
	for _, edit := range edits {
		edit(&cfg)
	}
	c.reg = runs.New(cfg, runs.Deps{API: api, Store: c.store, Logger: logger, Warn: logonce.New(logger, 0), Tel: c.tel})
	c.reg.Restore(context.Background())
	c.reg.Start()
	t.Cleanup(func() { require.NoError(t, c.reg.Shutdown(context.Background())) })
	return c
}

// redisClient is a test's own view of the shared Redis.
func redisClient(t *testing.T, srv *redistest.Server) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

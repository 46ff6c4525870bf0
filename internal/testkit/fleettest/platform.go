// Package fleettest is for tests only: a run registry as one collector
// process runs it (Node on a shared Redis, Collector alone on any store,
// or Start), on a platform that counts what it is asked (CountingRuns) or
// on the exporter's online backend over the spec-only fake platform
// (Online over NewPlatform: real HTTP), with self-telemetry that counts
// rejections and run events (Tally). The registry's tests in
// internal/runs and the stores' tests in internal/runstore drive the
// registry through it, so both see the lifecycle's API the way the
// exporter does.
package fleettest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/rft"
)

// KeyedResource is the resource of a trainer that creates a run by key.
func KeyedResource(key string) pcommon.Resource {
	res := pcommon.NewResource()
	res.Attributes().PutStr(runs.AttrRunKey, key)
	return res
}

// CountingRuns is a platform that counts its creates and finalizes; a
// create takes Delay, so that concurrent first data overlaps it. Runs are
// run-1, run-2, … in the order of their creates.
type CountingRuns struct {
	Delay time.Duration

	mu        sync.Mutex
	creates   int
	finalized []string
	statuses  []string
}

var _ platform.Runs = (*CountingRuns)(nil)

func (c *CountingRuns) CreateRun(context.Context, rft.CreateRunRequest, platform.Origin) (rft.Run, error) {
	time.Sleep(c.Delay)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.creates++
	return rft.Run{ID: fmt.Sprintf("run-%d", c.creates)}, nil
}

func (c *CountingRuns) AttachRun(context.Context, string, platform.Origin) error { return nil }

func (c *CountingRuns) PostMetrics(context.Context, string, map[string]float64) error { return nil }

func (c *CountingRuns) Finalize(_ context.Context, id string, _ int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finalized = append(c.finalized, id)
	return nil
}

func (c *CountingRuns) SetStatus(_ context.Context, id string, _ rft.Status, _ string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statuses = append(c.statuses, id)
	return nil
}

// Counts are the creates so far and the runs finalized, in order.
func (c *CountingRuns) Counts() (creates int, finalized []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.creates, append([]string(nil), c.finalized...)
}

// CloseOuts counts the terminal statuses sent, by either route: the
// finalizes and the status updates.
func (c *CountingRuns) CloseOuts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.finalized) + len(c.statuses)
}

// Tally is the registry's self-telemetry, with its rejections (per
// signal and reason) and run events counted.
type Tally struct {
	mu      sync.Mutex
	rejects map[signalReason]int
	events  map[string]int
}

type signalReason struct {
	signal string
	reason reject.Reason
}

var _ runs.Telemetry = (*Tally)(nil)

func (t *Tally) Reject(signal string, reason reject.Reason, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rejects == nil {
		t.rejects = map[signalReason]int{}
	}
	t.rejects[signalReason{signal, reason}] += n
}
func (*Tally) Skip(string, reject.Reason, int) {}
func (t *Tally) RunEvent(event string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.events == nil {
		t.events = map[string]int{}
	}
	t.events[event]++
}
func (*Tally) Post(string) {}

// Rejected is how many records were rejected for reason, of any signal.
func (t *Tally) Rejected(reason reject.Reason) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for k, v := range t.rejects {
		if k.reason == reason {
			n += v
		}
	}
	return n
}

// Rejections is how many records were rejected, for any reason.
func (t *Tally) Rejections() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, v := range t.rejects {
		n += v
	}
	return n
}

// RejectedOf is how many records of signal were rejected for reason.
func (t *Tally) RejectedOf(signal string, reason reject.Reason) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rejects[signalReason{signal, reason}]
}

// Events counts the run events of one kind (created, attached, closed, …).
func (t *Tally) Events(event string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.events[event]
}

package sharedcomponent

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
)

// Instance is what the pipelines share.
type Instance interface {
	// Start and Shutdown are called once each: Start with the first
	// pipeline's start, Shutdown after the last pipeline's shutdown.
	component.Component
	// BeginShutdown is called at every pipeline's shutdown, before that
	// pipeline drains its queue; it must return at once.
	BeginShutdown()
}

// Component is one key's instance as each pipeline starts and shuts it
// down: exporterhelper's start and shutdown functions (WithStart,
// WithShutdown) of every pipeline.
type Component[V Instance] struct {
	instance V
	status   *Status
	remove   func()

	mu     sync.Mutex
	starts int
}

// Unwrap returns the instance.
func (c *Component[V]) Unwrap() V { return c.instance }

// Start adds host to those that hear the status, and on the first call
// starts the instance on a host whose reports all of them hear.
func (c *Component[V]) Start(ctx context.Context, host component.Host) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts++
	c.status.attach(host)
	if c.starts > 1 {
		return nil
	}
	return c.instance.Start(ctx, c.status.host(host))
}

// Shutdown shuts the instance down once every start has had its shutdown,
// and takes it out of its Map. A shutdown without a start does nothing.
func (c *Component[V]) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.starts == 0 {
		return nil
	}
	c.starts--
	if c.starts > 0 {
		return nil
	}
	c.remove()
	return c.instance.Shutdown(ctx)
}

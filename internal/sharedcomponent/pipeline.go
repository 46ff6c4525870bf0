package sharedcomponent

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
)

// Metrics is one pipeline's metrics exporter on c's instance: m is
// exporterhelper's, built with c's Start and Shutdown as its own. Its
// Shutdown tells the instance that shutdown has begun before m drains its
// queue; m starts on host(h), or on h when host is nil.
func Metrics[V Instance](c *Component[V], m exporter.Metrics, host func(component.Host) component.Host) exporter.Metrics {
	return metricsPipeline{m, newPipeline(c, m, host)}
}

// Logs is Metrics for a logs pipeline.
func Logs[V Instance](c *Component[V], l exporter.Logs, host func(component.Host) component.Host) exporter.Logs {
	return logsPipeline{l, newPipeline(c, l, host)}
}

// metricsPipeline and logsPipeline are a signal's consumer beside its
// pipeline's lifecycle.
type metricsPipeline struct {
	consumer.Metrics
	pipeline
}

type logsPipeline struct {
	consumer.Logs
	pipeline
}

// pipeline is the lifecycle of one signal's exporter on the instance.
type pipeline struct {
	own           component.Component
	beginShutdown func()
	host          func(component.Host) component.Host
}

func newPipeline[V Instance](c *Component[V], own component.Component, host func(component.Host) component.Host) pipeline {
	if host == nil {
		host = func(h component.Host) component.Host { return h }
	}
	return pipeline{own: own, beginShutdown: c.instance.BeginShutdown, host: host}
}

func (p pipeline) Start(ctx context.Context, host component.Host) error {
	return p.own.Start(ctx, p.host(host))
}

func (p pipeline) Shutdown(ctx context.Context) error {
	p.beginShutdown()
	return p.own.Shutdown(ctx)
}

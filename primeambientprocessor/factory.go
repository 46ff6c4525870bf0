package primeambientprocessor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/primeintellect/primeexporter/primeambientprocessor/internal/metadata"
)

// NewFactory returns the prime_ambient processor's factory. The factory
// owns the binder each component ID's pipelines share.
func NewFactory() processor.Factory {
	s := &share{binders: map[component.ID]*binder{}}
	return processor.NewFactory(metadata.Type, createDefaultConfig,
		processor.WithMetrics(s.createMetrics, metadata.MetricsStability),
		processor.WithLogs(s.createLogs, metadata.LogsStability))
}

func createDefaultConfig() component.Config {
	return &Config{MaxPods: 4096, NodeRunTTL: 5 * time.Minute}
}

// share hands out one binder per component ID. A binder is small and a
// collector has few of them, so it lives as long as the factory.
type share struct {
	mu      sync.Mutex
	binders map[component.ID]*binder
}

func (s *share) binder(set processor.Settings, cfg component.Config) *binder {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.binders[set.ID]
	if !ok {
		c := cfg.(*Config)
		b = newBinder(c.MaxPods, c.NodeRunTTL, time.Now)
		s.binders[set.ID] = b
	}
	return b
}

var mutates = processorhelper.WithCapabilities(consumer.Capabilities{MutatesData: true})

func (s *share) createMetrics(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	return processorhelper.NewMetrics(ctx, set, cfg, next, s.binder(set, cfg).metrics, mutates)
}

func (s *share) createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	return processorhelper.NewLogs(ctx, set, cfg, next, s.binder(set, cfg).logs, mutates)
}

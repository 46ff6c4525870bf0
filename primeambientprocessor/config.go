package primeambientprocessor

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/component"
)

// Config is the prime_ambient processor's configuration.
type Config struct {
	// MaxPods bounds the trainer pods remembered.
	MaxPods int `mapstructure:"max_pods"`
	// NodeRunTTL is how long after its trainer's last data a run still gets
	// the node's own metrics.
	NodeRunTTL time.Duration `mapstructure:"node_run_ttl"`
}

var _ component.Config = (*Config)(nil)

// Validate names each key that is out of range.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxPods < 1 {
		errs = append(errs, fmt.Errorf("max_pods must be at least 1, got %d", c.MaxPods))
	}
	if c.NodeRunTTL <= 0 {
		errs = append(errs, fmt.Errorf("node_run_ttl must be positive, got %s", c.NodeRunTTL))
	}
	return errors.Join(errs...)
}

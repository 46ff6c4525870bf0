package ambient

import (
	"errors"
	"fmt"
	"time"
)

// Config bounds ambient metrics: the host's, the trainer
// processes', the GPUs' and an inference server's, which join the run
// their trainer opened and never open one (docs/system-metrics.md): the exporter's ambient::* keys.
type Config struct {
	// Wait is how long ambient data waits for its run to open (its
	// trainer's first data) before it is dropped (ambient_no_run).
	Wait time.Duration `mapstructure:"wait"`
	// MaxWaitingPoints bounds, over all runs, the points waiting; the
	// oldest go first.
	MaxWaitingPoints int `mapstructure:"max_waiting_points"`
	// MaxKeys bounds a run's distinct ambient keys; the rest are dropped
	// (ambient_key_cap), so that a node's many CPUs or a label that changes
	// every scrape cannot make thousands of charts.
	MaxKeys int `mapstructure:"max_keys"`
	// MaxPods bounds the trainer pods remembered for binding a node's
	// GPU metrics to their runs.
	MaxPods int `mapstructure:"max_pods"`
}

// Validate names each key out of range, under the exporter's ambient block.
func (ac *Config) Validate() error {
	var errs []error
	if ac.Wait < 0 {
		errs = append(errs, fmt.Errorf("ambient::wait must not be negative (0 drops ambient data that arrives before its run), got %s", ac.Wait))
	}
	if ac.MaxWaitingPoints < 1 {
		errs = append(errs, fmt.Errorf("ambient::max_waiting_points must be at least 1, got %d", ac.MaxWaitingPoints))
	}
	if ac.MaxKeys < 1 {
		errs = append(errs, fmt.Errorf("ambient::max_keys must be at least 1, got %d", ac.MaxKeys))
	}
	if ac.MaxPods < 1 {
		errs = append(errs, fmt.Errorf("ambient::max_pods must be at least 1, got %d", ac.MaxPods))
	}
	return errors.Join(errs...)
}

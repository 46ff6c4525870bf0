package primeauthextension

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"

	"github.com/primeintellect/primeexporter/rft"
)

// Config is the prime_auth extension's configuration.
type Config struct {
	// ClientConfig reaches the platform: endpoint is the API base (any
	// spelling the prime exporter's endpoint takes), with confighttp's TLS,
	// proxy and timeout.
	confighttp.ClientConfig `mapstructure:",squash"`
	Cache                   CacheConfig `mapstructure:"cache"`
}

// CacheConfig bounds what is remembered of the platform's answers.
type CacheConfig struct {
	// TTL is how long a good key is trusted without asking again: a key
	// revoked on the platform still gets in this long.
	TTL time.Duration `mapstructure:"ttl"`
	// RefusedTTL is how long a refused key stays refused without asking.
	RefusedTTL time.Duration `mapstructure:"refused_ttl"`
	// MaxStale is how long past ttl a good key still gets in while the
	// platform cannot be asked.
	MaxStale time.Duration `mapstructure:"max_stale"`
	// MaxKeys bounds the number of keys remembered.
	MaxKeys int `mapstructure:"max_keys"`
}

// Validate checks the endpoint and the cache bounds.
func (c *Config) Validate() error {
	var errs []error
	if _, err := rft.NormalizeBaseURL(c.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("endpoint: %w", err))
	}
	if c.Cache.TTL <= 0 {
		errs = append(errs, errors.New("cache::ttl must be positive: it is how long a key the platform accepted is trusted (e.g. 5m)"))
	}
	if c.Cache.RefusedTTL <= 0 {
		errs = append(errs, errors.New("cache::refused_ttl must be positive: it is how long a refused key stays refused (e.g. 30s)"))
	}
	if c.Cache.MaxStale < 0 {
		errs = append(errs, errors.New("cache::max_stale must not be negative"))
	}
	if c.Cache.MaxKeys <= 0 {
		errs = append(errs, errors.New("cache::max_keys must be positive"))
	}
	return errors.Join(errs...)
}

package primeexporter

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/primeintellect/primeexporter/internal/tenant"
)

// TenantsConfig makes a multi-tenant gateway: the exporter holds no key
// and sends each run's requests with the platform key of the sender whose
// data it is.
type TenantsConfig struct {
	// Enabled takes each request's key from its Authorization metadata
	// (the receiver's include_metadata: true, behind prime_auth).
	Enabled bool `mapstructure:"enabled"`
	// MaxOpenRuns bounds each tenant's runs not yet closed out.
	MaxOpenRuns int `mapstructure:"max_open_runs"`
	// MaxTenants bounds the tenants served since the start: each holds a
	// run registry.
	MaxTenants int `mapstructure:"max_tenants"`
	// KeyTTL is how long the exporter trusts a key's user without asking
	// the platform's whoami again.
	KeyTTL time.Duration `mapstructure:"key_ttl"`
}

// validate is called by Config.Validate, which knows the rest of the
// config the rules depend on.
func (tc *TenantsConfig) validate(cfg *Config) error {
	if !tc.Enabled {
		return nil
	}
	var errs []error
	if cfg.Mode != ModeOnline {
		errs = append(errs, fmt.Errorf("tenants::enabled needs mode: online (got %s): offline and disabled runs have no platform key to scope them", cfg.Mode))
	}
	if cfg.APIKey != "" {
		errs = append(errs, errors.New("api_key must be empty with tenants::enabled: each run's requests carry its sender's key, and a multi-tenant gateway holds none of its own"))
	}
	if cfg.SharedRegistry.HasValue() {
		errs = append(errs, errors.New("shared_registry is not supported with tenants::enabled: a multi-tenant gateway keeps its tenants' registries in storage (a file_storage extension)"))
	}
	if cfg.Traces.Enabled {
		errs = append(errs, errors.New("traces::enabled is not supported with tenants::enabled yet: Prime Traces uploads would need each tenant's key"))
	}
	if tc.MaxOpenRuns <= 0 {
		errs = append(errs, fmt.Errorf("tenants::max_open_runs must be positive, got %d", tc.MaxOpenRuns))
	}
	if tc.MaxTenants <= 0 {
		errs = append(errs, fmt.Errorf("tenants::max_tenants must be positive, got %d", tc.MaxTenants))
	}
	if tc.KeyTTL <= 0 {
		errs = append(errs, fmt.Errorf("tenants::key_ttl must be positive, got %s", tc.KeyTTL))
	}
	return errors.Join(errs...)
}

// queueConfig is sending_queue as the helper gets it. A multi-tenant
// gateway's batches are partitioned by the sender's key: a batch merged
// from two tenants' requests would keep one tenant's key for both, and
// without the partition a merged batch keeps no key at all.
func (cfg *Config) queueConfig() configoptional.Optional[exporterhelper.QueueBatchConfig] {
	q := cfg.QueueConfig.Get()
	if !cfg.Tenants.Enabled || q == nil || !q.Batch.HasValue() {
		return cfg.QueueConfig
	}
	qc := *q
	batch := *qc.Batch.Get()
	if !slices.ContainsFunc(batch.Partition.MetadataKeys, func(k string) bool { return strings.EqualFold(k, tenant.Header) }) {
		batch.Partition.MetadataKeys = append(slices.Clone(batch.Partition.MetadataKeys), tenant.Header)
	}
	qc.Batch = configoptional.Some(batch)
	return configoptional.Some(qc)
}

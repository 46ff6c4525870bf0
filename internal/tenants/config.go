package tenants

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

// Config makes a multi-tenant gateway: the exporter holds no key and sends
// each run's requests with the platform key of the sender whose data it
// is. It is the exporter's tenants::* keys.
type Config struct {
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
	// NamedInMetrics is how many tenants the rejection counter names by
	// user id at once (the ones that lost the most); the others are
	// "other" (Labels).
	NamedInMetrics int `mapstructure:"named_in_metrics"`
}

// Rest is what of the rest of the exporter's config a gateway's rules
// read.
type Rest struct {
	// Mode is the mode key's value; a gateway needs online.
	Mode string
	// APIKey says whether api_key is set.
	APIKey bool
}

// Validate names each rule a gateway's config breaks, by its key. It is
// not confmap's Validator because most rules read the rest of the config:
// the exporter's Config.Validate calls it once, where the collector would
// call a Validator a second time and double its errors.
func (c *Config) Validate(rest Rest) error {
	if !c.Enabled {
		return nil
	}
	var errs []error
	if rest.Mode != "online" {
		errs = append(errs, fmt.Errorf("tenants::enabled needs mode: online (got %s): offline and disabled runs have no platform key to scope them", rest.Mode))
	}
	if rest.APIKey {
		errs = append(errs, errors.New("api_key must be empty with tenants::enabled: each run's requests carry its sender's key, and a multi-tenant gateway holds none of its own"))
	}
	if c.MaxOpenRuns <= 0 {
		errs = append(errs, fmt.Errorf("tenants::max_open_runs must be positive, got %d", c.MaxOpenRuns))
	}
	if c.MaxTenants <= 0 {
		errs = append(errs, fmt.Errorf("tenants::max_tenants must be positive, got %d", c.MaxTenants))
	}
	if c.NamedInMetrics <= 0 {
		errs = append(errs, fmt.Errorf("tenants::named_in_metrics must be positive, got %d: it bounds the tenants the rejection counter names", c.NamedInMetrics))
	}
	if c.KeyTTL <= 0 {
		errs = append(errs, fmt.Errorf("tenants::key_ttl must be positive, got %s", c.KeyTTL))
	}
	return errors.Join(errs...)
}

// Queue is the sending queue q as exporterhelper gets it. A gateway's
// batches are partitioned by the sender's key: a batch merged from two
// tenants' requests would keep one tenant's key for both, and without the
// partition a merged batch keeps no key at all. q itself is left as the
// user wrote it.
func (c *Config) Queue(q configoptional.Optional[exporterhelper.QueueBatchConfig]) configoptional.Optional[exporterhelper.QueueBatchConfig] {
	qc := q.Get()
	if !c.Enabled || qc == nil || !qc.Batch.HasValue() {
		return q
	}
	partitioned := *qc
	batch := *partitioned.Batch.Get()
	if !slices.ContainsFunc(batch.Partition.MetadataKeys, func(k string) bool { return strings.EqualFold(k, tenant.Header) }) {
		batch.Partition.MetadataKeys = append(slices.Clone(batch.Partition.MetadataKeys), tenant.Header)
	}
	partitioned.Batch = configoptional.Some(batch)
	return configoptional.Some(partitioned)
}

package tenants

import (
	"errors"
	"fmt"
	"math"
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
	// "other" (Labels). The throttle counter names as many (those
	// throttled the most).
	NamedInMetrics int `mapstructure:"named_in_metrics"`
	// Limits bound each tenant's ingest rate (limits.go).
	Limits LimitsConfig `mapstructure:"limits"`
}

// LimitsConfig is tenants::limits: every tenant's ingest rate limit, and
// the file that overrides it for some.
type LimitsConfig struct {
	// Limit is every tenant's limit but those the overrides file names.
	Limit `mapstructure:",squash"`
	// OverridesFile maps user ids to limits of their own (overrides.go);
	// "" for none.
	OverridesFile string `mapstructure:"overrides_file"`
	// ReloadInterval is how often the overrides file is read again.
	ReloadInterval time.Duration `mapstructure:"reload_interval"`
}

// Limit is one tenant's ingest rate limit: a token bucket per unit, each
// holding BurstSeconds of its rate. A rate of 0 is no limit in that unit.
type Limit struct {
	// BytesPerSecond counts a request's OTLP protobuf size.
	BytesPerSecond float64 `mapstructure:"bytes_per_second"`
	// RecordsPerSecond counts its log records or metric data points.
	RecordsPerSecond float64 `mapstructure:"records_per_second"`
	BurstSeconds     float64 `mapstructure:"burst_seconds"`
}

// problems names each rule l breaks under the keys' prefix.
func (l Limit) problems(prefix string) []error {
	var errs []error
	for _, r := range []struct {
		key string
		v   float64
	}{{"bytes_per_second", l.BytesPerSecond}, {"records_per_second", l.RecordsPerSecond}} {
		if r.v < 0 || math.IsNaN(r.v) || math.IsInf(r.v, 0) {
			errs = append(errs, fmt.Errorf("%s%s must be a number of at least 0 (0: no limit), got %v", prefix, r.key, r.v))
		}
	}
	if !(l.BurstSeconds > 0) || math.IsInf(l.BurstSeconds, 0) {
		errs = append(errs, fmt.Errorf("%sburst_seconds must be positive: a full bucket holds that many seconds of the rate, got %v", prefix, l.BurstSeconds))
	}
	return errs
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
	errs = append(errs, c.Limits.problems("tenants::limits::")...)
	if c.Limits.ReloadInterval <= 0 {
		errs = append(errs, fmt.Errorf("tenants::limits::reload_interval must be positive, got %s", c.Limits.ReloadInterval))
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

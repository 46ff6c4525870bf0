package primeexporter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/primeintellect/primeexporter/internal/ambient"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/tenants"
	"github.com/primeintellect/primeexporter/rft"
)

// Mode says where the exporter sends what it builds.
type Mode string

const (
	// ModeOnline talks to the platform's RFT API.
	ModeOnline Mode = "online"
	// ModeOffline writes the same lifecycle to a local directory.
	ModeOffline Mode = "offline"
	// ModeDisabled accepts and drops everything without a request.
	ModeDisabled Mode = "disabled"
)

// UnmarshalText rejects an unknown mode while the config is read, so the
// error points at the key rather than at a later switch.
func (m *Mode) UnmarshalText(text []byte) error {
	switch s := Mode(text); s {
	case ModeOnline, ModeOffline, ModeDisabled:
		*m = s
		return nil
	default:
		return fmt.Errorf("unknown mode %q: use online, offline or disabled", string(text))
	}
}

// Routing says where episode documents go when Prime Traces is on.
type Routing string

const (
	// RoutingExclusive sends documents to Prime Traces only, as the
	// platform's newest SDK does; a run whose account has no Prime Traces
	// falls back to the sample table.
	RoutingExclusive Routing = "exclusive"
	// RoutingBoth also writes their rows to the sample table, as earlier
	// SDKs did.
	RoutingBoth Routing = "both"
)

// UnmarshalText rejects an unknown routing while the config is read.
func (r *Routing) UnmarshalText(text []byte) error {
	switch s := Routing(text); s {
	case RoutingExclusive, RoutingBoth:
		*r = s
		return nil
	default:
		return fmt.Errorf("unknown traces routing %q: use exclusive or both", string(text))
	}
}

// Config is the prime exporter's configuration.
type Config struct {
	// ClientConfig holds endpoint (the API base, any spelling rft-api.md
	// accepts), headers, TLS, timeout, proxy and compression.
	ClientConfig confighttp.ClientConfig                                  `mapstructure:",squash"`
	QueueConfig  configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig  configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`

	// APIKey is sent in both auth headers; configopaque keeps it out of
	// every printed config.
	APIKey      configopaque.String `mapstructure:"api_key"`
	TeamID      string              `mapstructure:"team_id"`
	FrontendURL string              `mapstructure:"frontend_url"`
	Mode        Mode                `mapstructure:"mode"`
	// Directory is where offline mode writes its runs.
	Directory string `mapstructure:"directory"`

	Run     RunConfig      `mapstructure:"run"`
	Eval    EvalConfig     `mapstructure:"eval"`
	Samples SamplesConfig  `mapstructure:"samples"`
	Metrics MetricsConfig  `mapstructure:"metrics"`
	Traces  TracesConfig   `mapstructure:"traces"`
	Ambient ambient.Config `mapstructure:"ambient"`

	// FinalizeGrace is how long after prime.run.end the run still accepts
	// data, since metrics and logs travel in separate pipelines.
	FinalizeGrace time.Duration `mapstructure:"finalize_grace"`
	// FinalizeTimeout bounds one close-out: the drain plus the requests.
	FinalizeTimeout time.Duration `mapstructure:"finalize_timeout"`
	// IdleTimeout marks a created run crashed after this long without
	// telemetry; 0 turns it off.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// Storage names a storage extension that keeps the run registry across
	// restarts.
	Storage *component.ID `mapstructure:"storage"`
	// SharedRegistry keeps the run registry in Redis, shared by every
	// collector configured with the same one; exclusive with Storage.
	SharedRegistry configoptional.Optional[SharedRegistryConfig] `mapstructure:"shared_registry"`
	// Tenants makes a multi-tenant gateway (internal/tenants).
	Tenants tenants.Config `mapstructure:"tenants"`
}

// SharedRegistryConfig shares the run registry between collectors: node
// collectors of one multi-node run, a load-balanced gateway fleet, a
// gateway restarted elsewhere.
type SharedRegistryConfig struct {
	Redis RedisConfig `mapstructure:"redis"`
}

// RedisConfig is the Redis the fleet's run registry lives in.
type RedisConfig struct {
	// Endpoint is host:port.
	Endpoint string              `mapstructure:"endpoint"`
	Password configopaque.String `mapstructure:"password"`
	DB       int                 `mapstructure:"db"`
	// Prefix starts every key, so that fleets can share one Redis.
	Prefix string `mapstructure:"prefix"`
	// TLS, when present, reaches Redis over TLS (Redis's tls-port): the
	// registry holds run identities and upload state, and a Redis off the
	// collector's host is reached across a network.
	TLS configoptional.Optional[configtls.ClientConfig] `mapstructure:"tls"`
}

// redisOptions are the shared registry's store options, its TLS loaded;
// nil without one.
func (cfg *Config) redisOptions(ctx context.Context) (*runstore.RedisOptions, error) {
	sr := cfg.SharedRegistry.Get()
	if sr == nil {
		return nil, nil
	}
	rc := sr.Redis
	o := &runstore.RedisOptions{Endpoint: rc.Endpoint, Password: string(rc.Password), DB: rc.DB, Prefix: rc.Prefix}
	if t := rc.TLS.Get(); t != nil {
		var err error
		// nil when insecure: true asks for no TLS at all.
		if o.TLS, err = t.LoadTLSConfig(ctx); err != nil {
			return nil, fmt.Errorf("shared_registry::redis::tls: %w", err)
		}
	}
	return o, nil
}

// validate is called by Config.Validate, which names the block.
func (sc *SharedRegistryConfig) validate() error {
	var errs []error
	if strings.TrimSpace(sc.Redis.Endpoint) == "" {
		errs = append(errs, errors.New("shared_registry::redis::endpoint is required: the host:port of the Redis every collector of the fleet uses"))
	} else if _, _, err := net.SplitHostPort(sc.Redis.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("shared_registry::redis::endpoint %q must be host:port: %w", sc.Redis.Endpoint, err))
	}
	if sc.Redis.DB < 0 {
		errs = append(errs, fmt.Errorf("shared_registry::redis::db must not be negative, got %d", sc.Redis.DB))
	}
	return errors.Join(errs...)
}

// EvalConfig is for evaluation runs (prime.run.kind=eval).
type EvalConfig struct {
	// ID attaches every evaluation to this existing one: a hosted
	// evaluation's sidecar sets it to ${env:EVALUATION_ID}. The run.id and
	// run.key keys are the training run's and do not apply to evaluations.
	ID string `mapstructure:"id"`
}

// RunConfig gives the identity and spec of resources that carry none of
// their own (run.id, run.key, run.model, …). A resource attribute always
// wins over these.
type RunConfig = runs.Defaults

// WandbConfig links a W&B run.
type WandbConfig = runs.Wandb

// SamplesConfig shapes the episode sample tables.
type SamplesConfig struct {
	// StepInterval uploads only steps with step % StepInterval == 0.
	StepInterval int64 `mapstructure:"step_interval"`
	// MaxEpisodeBytes rejects one episode whose encoded text is larger.
	MaxEpisodeBytes int64 `mapstructure:"max_episode_bytes"`
	// MaxObjectBytes splits a step's object when its episodes' text would
	// exceed it; every part is one more object with its own range.
	MaxObjectBytes int64 `mapstructure:"max_object_bytes"`
}

// TracesConfig sends episode documents (verifiers Episode.to_record()
// bodies) to Prime Traces, the platform's episode store.
type TracesConfig struct {
	// Enabled is off by default: a collector sends data nowhere unasked.
	Enabled bool `mapstructure:"enabled"`
	// Endpoint is the Prime Traces service, a different host from the API.
	Endpoint string `mapstructure:"endpoint"`
	// Routing is exclusive (Prime Traces only) or both (and the table).
	Routing Routing `mapstructure:"routing"`
}

// Validate checks the Prime Traces settings.
func (tc *TracesConfig) Validate() error {
	if !tc.Enabled {
		return nil
	}
	var errs []error
	if err := validateAbsoluteURL(tc.Endpoint); err != nil {
		errs = append(errs, fmt.Errorf("endpoint: %w", err))
	}
	if tc.Routing != RoutingExclusive && tc.Routing != RoutingBoth {
		errs = append(errs, fmt.Errorf("routing %q: use exclusive or both", tc.Routing))
	}
	return errors.Join(errs...)
}

// MetricsConfig shapes the step metrics.
type MetricsConfig struct {
	// StepMetric names the gauge or sum whose value gives a point's step
	// when the point has no prime.step attribute.
	StepMetric string `mapstructure:"step_metric"`
}

var _ component.Config = (*Config)(nil)

// Validate holds the cross-field rules; each error names its key and says
// what to do.
func (cfg *Config) Validate() error {
	var errs []error
	switch cfg.Mode {
	case ModeOnline:
		if cfg.APIKey == "" && !cfg.Tenants.Enabled {
			errs = append(errs, errors.New("api_key is required in online mode: set it (api_key: ${env:PRIME_API_KEY}) or use mode: offline to write runs to a local directory"))
		}
		if _, err := rft.NormalizeBaseURL(cfg.ClientConfig.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("endpoint: %w", err))
		}
		if err := validateAbsoluteURL(cfg.FrontendURL); err != nil {
			errs = append(errs, fmt.Errorf("frontend_url: %w", err))
		}
	case ModeOffline:
		if strings.TrimSpace(cfg.Directory) == "" {
			errs = append(errs, errors.New("directory is required in offline mode: set the folder runs are written to"))
		}
	case ModeDisabled:
	default:
		errs = append(errs, fmt.Errorf("mode %q: use online, offline or disabled", cfg.Mode))
	}
	if cfg.FinalizeGrace < 0 {
		errs = append(errs, fmt.Errorf("finalize_grace must not be negative, got %s", cfg.FinalizeGrace))
	}
	if cfg.FinalizeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("finalize_timeout must be positive, got %s", cfg.FinalizeTimeout))
	}
	if cfg.IdleTimeout < 0 {
		errs = append(errs, fmt.Errorf("idle_timeout must not be negative (0 turns it off), got %s", cfg.IdleTimeout))
	}
	if err := cfg.Run.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("run: %w", err))
	}
	if err := cfg.Samples.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("samples: %w", err))
	}
	if err := cfg.Metrics.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("metrics: %w", err))
	}
	if err := cfg.Traces.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("traces: %w", err))
	}
	if err := cfg.Ambient.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := cfg.Tenants.Validate(tenants.Rest{
		Mode: string(cfg.Mode), APIKey: cfg.APIKey != "",
	}); err != nil {
		errs = append(errs, err)
	}
	if sr := cfg.SharedRegistry.Get(); sr != nil {
		if cfg.Storage != nil {
			errs = append(errs, errors.New("storage and shared_registry are exclusive: the run registry lives in one of them; for a fleet of collectors keep shared_registry and remove storage (sending_queue::storage still keeps the queue)"))
		}
		if err := sr.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Validate checks the sample table settings.
func (sc *SamplesConfig) Validate() error {
	var errs []error
	if sc.StepInterval < 1 {
		errs = append(errs, fmt.Errorf("step_interval must be at least 1, got %d", sc.StepInterval))
	}
	if sc.MaxEpisodeBytes < 1 {
		errs = append(errs, fmt.Errorf("max_episode_bytes must be positive, got %d", sc.MaxEpisodeBytes))
	}
	if sc.MaxObjectBytes < sc.MaxEpisodeBytes {
		errs = append(errs, fmt.Errorf("max_object_bytes (%d) must be at least max_episode_bytes (%d): an object holds at least one episode", sc.MaxObjectBytes, sc.MaxEpisodeBytes))
	}
	return errors.Join(errs...)
}

// Validate checks the step metric settings.
func (mc *MetricsConfig) Validate() error {
	if strings.TrimSpace(mc.StepMetric) == "" {
		return errors.New("step_metric must name the gauge that carries the step (default \"step\")")
	}
	return nil
}

func validateAbsoluteURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an absolute http(s) URL", raw)
	}
	return nil
}

// queueConfig is sending_queue as the helper gets it: on a multi-tenant
// gateway, partitioned by the sender's key.
func (cfg *Config) queueConfig() configoptional.Optional[exporterhelper.QueueBatchConfig] {
	return cfg.Tenants.Queue(cfg.QueueConfig)
}

// queueFlush is the sending queue's batch flush_timeout, 0 without one.
func (c *Config) queueFlush() time.Duration {
	if q := c.QueueConfig.Get(); q != nil && q.Batch.HasValue() {
		return q.Batch.Get().FlushTimeout
	}
	return 0
}

// persistentQueue tells a sending queue kept in a storage extension, whose
// requests a restart replays.
func (c *Config) persistentQueue() bool {
	q := c.QueueConfig.Get()
	return q != nil && q.StorageID != nil
}

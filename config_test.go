package primeexporter

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.uber.org/zap/zapcore"

	"github.com/primeintellect/primeexporter/internal/tenants"
)

func loadConfig(t *testing.T, id string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	sub, err := cm.Sub(id)
	require.NoError(t, err)
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func TestAnEmptyConfigGivesExactlyTheDefaults(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.New().Unmarshal(cfg))
	assert.Equal(t, createDefaultConfig(), cfg)

	assert.Equal(t, "https://api.primeintellect.ai", cfg.ClientConfig.Endpoint)
	assert.Equal(t, "https://app.primeintellect.ai", cfg.FrontendURL)
	assert.Equal(t, ModeOnline, cfg.Mode)
	assert.Equal(t, int64(10), cfg.Samples.StepInterval)
	assert.Equal(t, "step", cfg.Metrics.StepMetric)
	assert.Equal(t, 10*time.Second, cfg.FinalizeGrace)
	assert.Equal(t, int64(32<<20), cfg.Samples.MaxEpisodeBytes)
	assert.Equal(t, int64(32<<20), cfg.Samples.MaxObjectBytes)
	assert.Equal(t, 4, cfg.QueueConfig.Get().NumConsumers, "consumers × batch max_size bound what is in flight")
	batch := cfg.QueueConfig.Get().Batch
	assert.Equal(t, int64(16<<20), batch.Get().MaxSize)
	assert.True(t, batch.HasValue(), "the queue batches by default")
	assert.Less(t, batch.Get().FlushTimeout, cfg.FinalizeGrace, "data batched when a run ends is still accepted")
	assert.Equal(t, time.Duration(0), cfg.IdleTimeout)
	assert.Nil(t, cfg.Storage)
	assert.True(t, cfg.QueueConfig.HasValue(), "the sending queue is on by default")
	assert.True(t, cfg.RetryConfig.Enabled)
	assert.Zero(t, cfg.RetryConfig.MaxElapsedTime, "retry_on_failure never gives up on a retryable failure")
	assert.Equal(t, TracesConfig{Endpoint: "https://prime-traces.pintel.dev", Routing: RoutingExclusive}, cfg.Traces, "Prime Traces is opt-in")
	assert.Equal(t, tenants.LimitsConfig{
		Limit:          tenants.Limit{BytesPerSecond: 15_000_000, RecordsPerSecond: 10_000, BurstSeconds: 2},
		ReloadInterval: 10 * time.Second,
	}, cfg.Tenants.Limits, "a tenant's ingest limit: Tempo's and Elastic's 15 MB/s, Mimir's 10,000 records/s, 2 s of burst")
}

func TestEveryKeyOfTheFullConfigIsRead(t *testing.T) {
	cfg, err := loadConfig(t, "prime/full")
	require.NoError(t, err)
	require.NoError(t, confmap.Validate(cfg))

	want := createDefaultConfig().(*Config)
	want.ClientConfig.Endpoint = "https://api.example.com/api/v1/rft"
	want.ClientConfig.Timeout = 10 * time.Second
	want.ClientConfig.Headers.Set("x-trace", "1")
	want.APIKey = configopaque.String("full-key")
	want.TeamID = "team-7"
	want.FrontendURL = "https://app.example.com"
	want.Mode = ModeOnline
	want.Directory = "/var/lib/prime"
	want.Run = RunConfig{
		Key: "run-key-1", Name: "my-run", Model: "Qwen/Qwen3-8B",
		Environments: []string{"primeintellect/vf-math", "env-123@v7"},
		MaxSteps:     100, BatchSize: 64, RolloutsPerExample: 8, SeqLen: 4096,
		Config: map[string]any{"trainer": map[string]any{"lr": 1e-06}},
		Wandb:  WandbConfig{Project: "p", Entity: "e", RunName: "r"},
	}
	want.Samples.StepInterval = 5
	want.Samples.MaxEpisodeBytes = 1 << 20
	want.Samples.MaxObjectBytes = 8 << 20
	want.Metrics.StepMetric = "train/step"
	want.Traces = TracesConfig{Enabled: true, Endpoint: "https://traces.example.com", Routing: RoutingBoth}
	want.FinalizeGrace = 2 * time.Second
	want.FinalizeTimeout = time.Minute
	want.IdleTimeout = 30 * time.Minute
	storage := component.MustNewIDWithName("file_storage", "prime")
	want.Storage = &storage
	want.RetryConfig = configretry.BackOffConfig{
		Enabled: true, InitialInterval: 2 * time.Second, MaxInterval: 20 * time.Second,
		MaxElapsedTime: 10 * time.Minute, RandomizationFactor: want.RetryConfig.RandomizationFactor,
		Multiplier: want.RetryConfig.Multiplier,
	}
	queue := defaultQueueConfig()
	queue.NumConsumers = 4
	queue.QueueSize = 500
	want.QueueConfig = configoptional.Some(queue)
	want.Tenants.Limits = tenants.LimitsConfig{
		Limit:         tenants.Limit{BytesPerSecond: 1_000_000, RecordsPerSecond: 500, BurstSeconds: 1.5},
		OverridesFile: "/etc/prime/limits.yaml", ReloadInterval: 30 * time.Second,
	}

	assert.Equal(t, want, cfg)
}

func TestOfflineAndDisabledModesNeedNoAPIKey(t *testing.T) {
	for _, id := range []string{"prime/offline", "prime/disabled"} {
		t.Run(id, func(t *testing.T) {
			cfg, err := loadConfig(t, id)
			require.NoError(t, err)
			assert.NoError(t, confmap.Validate(cfg))
		})
	}
}

func TestBadConfigIsRejectedWithAMessageThatNamesTheKeyAndTheFix(t *testing.T) {
	tests := []struct {
		id   string
		want []string // every fragment must appear in the error
	}{
		{"prime/missing_key", []string{"api_key is required in online mode", "${env:PRIME_API_KEY}", "mode: offline"}},
		{"prime/offline_no_directory", []string{"directory is required in offline mode"}},
		{"prime/bad_endpoint", []string{"endpoint:"}},
		{"prime/bad_interval", []string{"samples: step_interval must be at least 1, got 0"}},
		{"prime/object_smaller_than_episode", []string{"samples: max_object_bytes (10) must be at least max_episode_bytes (100)"}},
		{"prime/empty_step_metric", []string{"metrics: step_metric must name"}},
		{"prime/id_and_key", []string{"run: id and key are mutually exclusive"}},
		{"prime/negative_durations", []string{"finalize_grace must not be negative", "finalize_timeout must be positive", "idle_timeout must not be negative"}},
		{"prime/bad_environment", []string{"run: environments[1]: an environment must not be empty"}},
		{"prime/bad_frontend", []string{"frontend_url:", "absolute http(s) URL"}},
		{"prime/bad_traces_endpoint", []string{"traces: endpoint:", "absolute http(s) URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			cfg, err := loadConfig(t, tt.id)
			require.NoError(t, err)
			err = confmap.Validate(cfg)
			require.Error(t, err)
			for _, frag := range tt.want {
				assert.Contains(t, err.Error(), frag)
			}
		})
	}
}

func TestAnUnknownModeFailsWhileTheConfigIsRead(t *testing.T) {
	_, err := loadConfig(t, "prime/bad_mode")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown mode "sometimes": use online, offline or disabled`)
}

func TestAnUnknownTracesRoutingFailsWhileTheConfigIsRead(t *testing.T) {
	_, err := loadConfig(t, "prime/bad_routing")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown traces routing "sometimes": use exclusive or both`)
}

func TestTheAPIKeyIsRedactedWhenTheConfigIsPrinted(t *testing.T) {
	cfg, err := loadConfig(t, "prime/full")
	require.NoError(t, err)
	conf := confmap.New()
	require.NoError(t, conf.Marshal(cfg))
	assert.NotContains(t, conf.ToStringMap()["api_key"], "full-key")
	assert.Equal(t, "[REDACTED]", conf.ToStringMap()["api_key"])
}

func TestAHostedRunIsConfiguredFromTheLaunchersEnvironment(t *testing.T) {
	t.Setenv("PRIME_API_BASE", "https://h.example/api/internal/rft")
	t.Setenv("PRIME_API_KEY", "per-run-token")
	t.Setenv("RUN_ID", "run-42")
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + filepath.Join("testdata", "config.yaml")},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	require.NoError(t, err)
	conf, err := resolver.Resolve(context.Background())
	require.NoError(t, err)
	sub, err := conf.Sub("prime/hosted")
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))

	assert.Equal(t, "https://h.example/api/internal/rft", cfg.ClientConfig.Endpoint)
	assert.Equal(t, configopaque.String("per-run-token"), cfg.APIKey)
	assert.Equal(t, "run-42", cfg.Run.ID)
}

func TestTheSharedRegistryIsOffByDefaultAndAConfiguredBlockGetsItsDefaults(t *testing.T) {
	assert.False(t, createDefaultConfig().(*Config).SharedRegistry.HasValue(), "a collector shares nothing unasked")
	cfg, err := loadConfig(t, "prime/shared_registry_defaults")
	require.NoError(t, err)
	require.NoError(t, confmap.Validate(cfg))
	require.True(t, cfg.SharedRegistry.HasValue())
	assert.Equal(t, SharedRegistryConfig{Redis: RedisConfig{Endpoint: "127.0.0.1:6379", Prefix: "prime"}}, *cfg.SharedRegistry.Get())
}

func TestEveryKeyOfTheSharedRegistryBlockIsReadAndItsPasswordIsRedacted(t *testing.T) {
	t.Setenv("REDIS_PASSWORD", "redis-secret-5d1")
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + filepath.Join("testdata", "config.yaml")},
		ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
		DefaultScheme:     "env",
	})
	require.NoError(t, err)
	conf, err := resolver.Resolve(context.Background())
	require.NoError(t, err)
	sub, err := conf.Sub("prime/shared_registry")
	require.NoError(t, err)
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(cfg))
	require.NoError(t, confmap.Validate(cfg))
	tc := configtls.NewDefaultClientConfig()
	tc.CAFile = "/etc/prime/redis-ca.pem"
	assert.Equal(t, RedisConfig{Endpoint: "redis.example:6380", Password: "redis-secret-5d1", DB: 2, Prefix: "fleet-a", TLS: configoptional.Some(tc)},
		cfg.SharedRegistry.Get().Redis)

	printed := confmap.New()
	require.NoError(t, printed.Marshal(cfg))
	assert.NotContains(t, fmt.Sprint(printed.ToStringMap()), "redis-secret-5d1")
}

func TestSharedRegistryAndStorageAreRefusedTogetherNamingBoth(t *testing.T) {
	cfg, err := loadConfig(t, "prime/shared_registry_and_storage")
	require.NoError(t, err)
	err = confmap.Validate(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "storage and shared_registry are exclusive")
	assert.Contains(t, err.Error(), "sending_queue::storage still keeps the queue")
}

func TestASharedRegistryWithoutAnEndpointIsRefused(t *testing.T) {
	cfg, err := loadConfig(t, "prime/shared_registry_bad")
	require.NoError(t, err)
	err = confmap.Validate(cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "shared_registry::redis::endpoint is required")
	assert.Contains(t, err.Error(), "shared_registry::redis::db must not be negative, got -1")
}

// --- team_id ---

func TestARunWithoutATeamSendsNoCreateAndIsRejectedNamingBothKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TeamID = "" })
	ctx := context.Background()
	for range 3 {
		require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("teamless"), map[int64]map[string]float64{1: {"loss": 1}})))
	}
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("teamless"), episode(10, "a"), runEnd("completed", ""))))

	assert.Empty(t, h.platform.Requests(), "no create, nor anything else, is sent")
	assert.Equal(t, int64(3), h.count(metricRejected, map[string]string{"reason": "no_team", "signal": "metrics"}))
	assert.Equal(t, int64(2), h.count(metricRejected, map[string]string{"reason": "no_team", "signal": "logs"}))
	warnings := h.logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("Rejected data: the run cannot be created")
	require.Equal(t, 1, warnings.Len(), "logged once per run:\n%s", h.logText())
	msg := warnings.All()[0].ContextMap()["error"].(string)
	assert.Contains(t, msg, "prime.run.team_id")
	assert.Contains(t, msg, "team_id")
	assert.Contains(t, msg, `prime.run.key="teamless"`)
}

func TestOnlineModeWithoutATeamWarnsOnceAtStartUp(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TeamID = "" })
	assert.Equal(t, 1, h.logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("No team_id is configured").Len())

	withTeam := newHarness(t, nil)
	assert.Zero(t, withTeam.logs.FilterMessageSnippet("No team_id").Len())
}

func TestTheResourcesTeamCreatesTheRunWhenTheConfigHasNone(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TeamID = "" })
	res := trainRun("own-team")
	res["prime.run.team_id"] = "team-7"
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(res, map[int64]map[string]float64{1: {"loss": 1}})))
	assert.Equal(t, "team-7", h.onlyRun().Spec["team_id"])
}

func TestAnAttachedRunNeedsNoTeam(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TeamID = "" })
	h.platform.AddRun("run-att")
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(map[string]string{"prime.run.id": "run-att"}, map[int64]map[string]float64{1: {"loss": 1}})))
	run, _ := h.platform.Run("run-att")
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}}, run.Metrics)
	assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "no_team"}))
}

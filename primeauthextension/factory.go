package primeauthextension

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/extension"

	"github.com/primeintellect/primeexporter/internal/tenant"
	"github.com/primeintellect/primeexporter/primeauthextension/internal/metadata"
)

// defaultEndpoint is the platform's public API, as the prime exporter's.
const defaultEndpoint = "https://api.primeintellect.ai"

// NewFactory returns the prime_auth extension's factory.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	client := confighttp.NewDefaultClientConfig()
	client.Endpoint = defaultEndpoint
	// whoami is one small read; a platform slower than this counts as
	// unreachable, and a known key is let in from the cache meanwhile.
	client.Timeout = 10 * time.Second
	return &Config{
		ClientConfig: client,
		Cache: CacheConfig{
			TTL: tenant.DefaultTTL, RefusedTTL: tenant.DefaultRefusedTTL,
			MaxStale: tenant.DefaultMaxStale, MaxKeys: tenant.DefaultMaxKeys,
		},
	}
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newAuthExtension(cfg.(*Config), set), nil
}

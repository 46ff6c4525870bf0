package primestatusextension

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/extension"

	"github.com/primeintellect/primeexporter/primestatusextension/internal/metadata"
)

// NewFactory returns the prime_status extension's factory.
func NewFactory() extension.Factory {
	return extension.NewFactory(metadata.Type, createDefaultConfig, create, metadata.ExtensionStability)
}

func createDefaultConfig() component.Config {
	server := confighttp.NewDefaultServerConfig()
	server.NetAddr.Endpoint = defaultEndpoint
	gateways := confighttp.NewDefaultClientConfig()
	gateways.Timeout = defaultGatewayTimeout
	return &Config{ServerConfig: server, GatewayClient: gateways}
}

func create(_ context.Context, set extension.Settings, cfg component.Config) (extension.Extension, error) {
	return newStatusExtension(cfg.(*Config), set.TelemetrySettings), nil
}

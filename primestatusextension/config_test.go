package primestatusextension

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
)

func nopHost() component.Host { return componenttest.NewNopHost() }

func TestTheDefaultConfigListensOnLoopbackWithNoGateways(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Equal(t, "127.0.0.1:4320", cfg.NetAddr.Endpoint)
	assert.Empty(t, cfg.Gateways)
	assert.NoError(t, cfg.Validate())
}

func TestConfigIsReadFromYAMLKeys(t *testing.T) {
	for _, tc := range []struct {
		name     string
		raw      map[string]any
		endpoint string
		gateways []string
	}{
		{"endpoint and a list of gateways", map[string]any{"endpoint": "0.0.0.0:9000", "gateways": []any{"http://gw-0.gw:4320", "http://gw-1.gw:4320"}},
			"0.0.0.0:9000", []string{"http://gw-0.gw:4320", "http://gw-1.gw:4320"}},
		{"gateways from one comma-separated string, as an env var gives them", map[string]any{"gateways": "http://gw-0.gw:4320,http://gw-1.gw:4320"},
			"127.0.0.1:4320", []string{"http://gw-0.gw:4320", "http://gw-1.gw:4320"}},
		{"an empty string is no gateways", map[string]any{"gateways": ""}, "127.0.0.1:4320", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			require.NoError(t, confmap.NewFromStringMap(tc.raw).Unmarshal(cfg))
			assert.Equal(t, tc.endpoint, cfg.NetAddr.Endpoint)
			assert.ElementsMatch(t, tc.gateways, cfg.Gateways)
			assert.NoError(t, confmap.Validate(cfg))
		})
	}
}

func TestValidateNamesTheBadKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no endpoint", func(c *Config) { c.NetAddr.Endpoint = "" }, "endpoint is required"},
		{"a gateway without a scheme", func(c *Config) { c.Gateways = []string{"gw-0.gw:4320"} }, "gateways[0]"},
		{"a gateway of another scheme", func(c *Config) { c.Gateways = []string{"http://ok:1", "grpc://gw:4317"} }, "gateways[1]"},
		{"a gateway with a query", func(c *Config) { c.Gateways = []string{"http://gw:4320/?key=a"} }, "base URL"},
		{"a gateway client with an endpoint", func(c *Config) { c.GatewayClient.Endpoint = "http://gw:4320" }, "gateway_client::endpoint"},
		{"a gateway client without a timeout", func(c *Config) { c.GatewayClient.Timeout = 0 }, "gateway_client::timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tc.edit(cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTheGatewayClientIsReadFromYAMLAndKeepsItsDefaultTimeout(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, confmap.NewFromStringMap(map[string]any{
		"gateways": "https://gw-0.gw:4320",
		"gateway_client": map[string]any{
			"tls":  map[string]any{"ca_file": "/etc/prime/gateway-ca.crt"},
			"auth": map[string]any{"authenticator": "prime_auth"},
		},
	}).Unmarshal(cfg))
	assert.Equal(t, "/etc/prime/gateway-ca.crt", cfg.GatewayClient.TLS.CAFile)
	require.True(t, cfg.GatewayClient.Auth.HasValue())
	assert.Equal(t, component.MustNewID("prime_auth"), cfg.GatewayClient.Auth.Get().AuthenticatorID)
	assert.Equal(t, defaultGatewayTimeout, cfg.GatewayClient.Timeout)
	assert.NoError(t, confmap.Validate(cfg))
}

package primestatusextension

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"
)

// defaultEndpoint keeps the route on loopback: off loopback it answers
// anyone who can reach it, unless auth is configured.
const defaultEndpoint = "127.0.0.1:4320"

// defaultGatewayTimeout bounds the agent's question to its gateways: a
// trainer polls, and a gateway that does not answer at once is asked
// again on the next poll.
const defaultGatewayTimeout = 2 * time.Second

// Config is the prime_status extension's configuration.
type Config struct {
	// ServerConfig is where the route listens, with confighttp's TLS,
	// auth and the rest.
	confighttp.ServerConfig `mapstructure:",squash"`
	// Gateways are the base URLs of other collectors' status routes
	// (http://gw-0.gw:4320), asked when this collector's own exporters
	// know nothing of a run: the agent tier's gateways.
	Gateways []string `mapstructure:"gateways"`
	// GatewayClient is how the gateways are asked: confighttp's tls (the
	// gateways' CA), auth (prime_auth sends the caller's own key on, which
	// a multi-tenant gateway's route requires; the route then needs
	// include_metadata: true) and timeout (each question's bound).
	GatewayClient confighttp.ClientConfig `mapstructure:"gateway_client"`
}

// Validate checks the endpoint, that each gateway is an http(s) URL with
// a host, and that the gateway client has a timeout and no endpoint of
// its own.
func (c *Config) Validate() error {
	if c.NetAddr.Endpoint == "" {
		return errors.New("endpoint is required: set it to a host:port, e.g. endpoint: " + defaultEndpoint)
	}
	var errs []error
	if c.GatewayClient.Endpoint != "" {
		errs = append(errs, errors.New("gateway_client::endpoint must be empty: the gateways' base URLs are listed in gateways"))
	}
	if c.GatewayClient.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("gateway_client::timeout must be positive: it bounds each question to the gateways (e.g. %s)", defaultGatewayTimeout))
	}
	for i, g := range c.Gateways {
		u, err := url.Parse(g)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("gateways[%d]: %w", i, err))
		case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
			errs = append(errs, fmt.Errorf("gateways[%d]: %q is not an http:// or https:// URL with a host, such as http://gw-0.gw:4320", i, g))
		case u.RawQuery != "" || u.Fragment != "":
			errs = append(errs, fmt.Errorf("gateways[%d]: %q must be a base URL, without a query or fragment", i, g))
		}
	}
	return errors.Join(errs...)
}

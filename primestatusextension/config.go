package primestatusextension

import (
	"errors"
	"fmt"
	"net/url"

	"go.opentelemetry.io/collector/config/confighttp"
)

// defaultEndpoint keeps the route on loopback: off loopback it answers
// anyone who can reach it, unless auth is configured.
const defaultEndpoint = "127.0.0.1:4320"

// Config is the prime_status extension's configuration.
type Config struct {
	// ServerConfig is where the route listens, with confighttp's TLS,
	// auth and the rest.
	confighttp.ServerConfig `mapstructure:",squash"`
	// Gateways are the base URLs of other collectors' status routes
	// (http://gw-0.gw:4320), asked when this collector's own exporters
	// know nothing of a run: the agent tier's gateways.
	Gateways []string `mapstructure:"gateways"`
}

// Validate checks the endpoint and that each gateway is an http(s) URL
// with a host.
func (c *Config) Validate() error {
	if c.NetAddr.Endpoint == "" {
		return errors.New("endpoint is required: set it to a host:port, e.g. endpoint: " + defaultEndpoint)
	}
	var errs []error
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

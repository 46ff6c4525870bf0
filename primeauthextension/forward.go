package primeauthextension

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"google.golang.org/grpc/credentials"

	"github.com/primeintellect/primeexporter/internal/tenant"
)

// prime_auth as a client authenticator: a collector that forwards a
// trainer's request (the agent tier in front of multi-tenant gateways)
// sends it on with the key the trainer sent, read from the request's
// client metadata, as contrib's headers_setter does with
// from_context: authorization. The forwarding collector holds no key of
// its own, so there is none to lose, and the next hop checks the key
// itself.

var (
	_ extensionauth.GRPCClient = (*authExtension)(nil)
	_ extensionauth.HTTPClient = (*authExtension)(nil)
)

// Errors of a request that cannot be sent on. None repeats the key.
var (
	errNoKeyToForward = errors.New("prime_auth has no key to send on: this request's client metadata has no Authorization header; " +
		"the receiver it came through needs include_metadata: true and an authenticator (auth: {authenticator: prime_auth})")
	errClearText = errors.New("prime_auth sends a key in clear text to no host but loopback: use https")
)

// PerRPCCredentials sends each RPC with the key of the request it
// forwards.
func (a *authExtension) PerRPCCredentials() (credentials.PerRPCCredentials, error) {
	return forwardedKeyCredentials{}, nil
}

// RoundTripper sends each HTTP request with the key of the request it
// forwards.
func (a *authExtension) RoundTripper(base http.RoundTripper) (http.RoundTripper, error) {
	return forwardedKeyTransport{base: base}, nil
}

// forwardedKeyCredentials reads the key from the RPC's context, which gRPC
// hands to GetRequestMetadata: the exporter's, carrying the client.Info
// the receiver made (and the persistent queue restored).
type forwardedKeyCredentials struct{}

func (forwardedKeyCredentials) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	v, err := forwardedAuthorization(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]string{tenant.Header: v}, nil
}

// RequireTransportSecurity keeps the key off plain connections: gRPC then
// refuses the RPC on one.
func (forwardedKeyCredentials) RequireTransportSecurity() bool { return true }

type forwardedKeyTransport struct{ base http.RoundTripper }

// RoundTrip sends a copy of req with the forwarded key as its
// Authorization header, over TLS or to loopback only.
func (t forwardedKeyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !isLoopback(req.URL.Hostname()) {
		closeBody(req)
		return nil, errClearText
	}
	v, err := forwardedAuthorization(req.Context())
	if err != nil {
		closeBody(req)
		return nil, err
	}
	// A RoundTripper must not change the request it was given.
	out := req.Clone(req.Context())
	out.Header.Set("Authorization", v)
	return t.base.RoundTrip(out)
}

// forwardedAuthorization is the Authorization value to send on: the one
// Bearer key of ctx's client metadata, as the receiver's prime_auth
// checked it.
func forwardedAuthorization(ctx context.Context) (string, error) {
	key, err := tenant.ParseBearer(client.FromContext(ctx).Metadata.Get(tenant.Header))
	switch {
	case errors.Is(err, tenant.ErrNoKey):
		return "", errNoKeyToForward
	case err != nil:
		return "", fmt.Errorf("prime_auth cannot send this request's key on: %w", err)
	}
	return "Bearer " + key, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// closeBody closes a request's body, as a RoundTripper must even when it
// fails.
func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

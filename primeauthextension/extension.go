package primeauthextension

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensionauth"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/tenant"
	"github.com/primeintellect/primeexporter/rft"
)

// UserIDAttribute is the client.Info.Auth attribute holding the user id
// the platform gave for the sender's key.
const UserIDAttribute = tenant.UserIDAttribute

// Errors a refused sender reads. None repeats what was presented.
var (
	errRefused     = errors.New("the platform refused this key: send the trainer's own platform key (the one prime_runs takes, PRIME_API_KEY) as Authorization: Bearer <key>")
	errUnreachable = errors.New("the platform could not be asked whose this key is, and it was not seen good before: try again shortly")
	errNotStarted  = errors.New("prime_auth is not started")
)

// placeholderKey fills the base client's key: every check speaks for the
// key in question (rft.Client.WithKey), so it is never sent.
const placeholderKey = "unused"

type authExtension struct {
	cfg    *Config
	set    extension.Settings
	logger *zap.Logger

	refused metric.Int64Counter
	// verifier is set by Start; Authenticate is only called after it.
	verifier *tenant.Verifier
}

var (
	_ extension.Extension  = (*authExtension)(nil)
	_ extensionauth.Server = (*authExtension)(nil)
)

// RevokeKey refuses key from now on, for cache::refused_ttl, though the
// cache took it as good: the prime exporter of a multi-tenant gateway calls
// it when the platform refuses a tenant's key mid-run, so that the
// tenant's trainer is told at its next request instead of for up to
// cache::ttl. Before Start it does nothing.
func (a *authExtension) RevokeKey(key string) {
	if a.verifier != nil {
		a.verifier.Revoke(key)
	}
}

func newAuthExtension(cfg *Config, set extension.Settings) *authExtension {
	return &authExtension{cfg: cfg, set: set, logger: set.Logger}
}

func (a *authExtension) Start(ctx context.Context, host component.Host) error {
	hc, err := a.cfg.ToClient(ctx, host.GetExtensions(), a.set.TelemetrySettings)
	if err != nil {
		return err
	}
	c, err := rft.New(rft.Options{
		BaseURL: a.cfg.Endpoint, APIKey: placeholderKey, HTTPClient: hc,
		// One attempt: a sender is waiting, and a known key is let in
		// from the cache while the platform does not answer.
		MaxAttempts: 1,
		UserAgent:   "otelcol-prime-auth/" + a.set.BuildInfo.Version,
	})
	if err != nil {
		return err
	}
	a.refused, err = a.set.MeterProvider.Meter("github.com/primeintellect/primeexporter/primeauthextension").Int64Counter(
		"otelcol_prime_auth_refused",
		metric.WithDescription("OTLP requests prime_auth refused, by reason (no_key, malformed, refused, unreachable)."),
		metric.WithUnit("{requests}"))
	if err != nil {
		return err
	}
	check := tenant.Whoami(c)
	a.verifier = tenant.NewVerifier(func(ctx context.Context, key string) (string, error) {
		user, err := check(ctx, key)
		if err != nil && !errors.Is(err, tenant.ErrRefused) {
			// rft's errors never carry the key.
			a.logger.Warn("prime_auth: the platform's whoami did not answer; keys seen good are let in from the cache meanwhile", zap.Error(err))
		}
		return user, err
	}, tenant.Options{
		TTL: a.cfg.Cache.TTL, RefusedTTL: a.cfg.Cache.RefusedTTL, MaxStale: a.cfg.Cache.MaxStale, MaxKeys: a.cfg.Cache.MaxKeys,
	})
	a.logger.Info("prime_auth: senders are let in by their platform key, checked with the platform's whoami", zap.String("api", c.APIPrefix()))
	return nil
}

func (a *authExtension) Shutdown(context.Context) error { return nil }

// Authenticate lets in a request whose Authorization header carries a key
// the platform accepts, and puts the key's user into client.Info.Auth.
func (a *authExtension) Authenticate(ctx context.Context, sources map[string][]string) (context.Context, error) {
	if a.verifier == nil {
		return ctx, errNotStarted
	}
	key, err := tenant.ParseBearer(headerValues(sources, tenant.Header))
	if err != nil {
		a.count(ctx, reasonOf(err))
		return ctx, err
	}
	user, err := a.verifier.Verify(ctx, key)
	switch {
	case errors.Is(err, tenant.ErrRefused):
		a.count(ctx, "refused")
		return ctx, errRefused
	case err != nil:
		a.count(ctx, "unreachable")
		return ctx, errUnreachable
	}
	info := client.FromContext(ctx)
	info.Auth = authData{user: user}
	return client.NewContext(ctx, info), nil
}

func (a *authExtension) count(ctx context.Context, reason string) {
	a.refused.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}

func reasonOf(err error) string {
	if errors.Is(err, tenant.ErrNoKey) {
		return "no_key"
	}
	return "malformed"
}

// headerValues reads a header whatever its case: HTTP sources are
// canonical ("Authorization"), gRPC metadata lower case.
func headerValues(sources map[string][]string, name string) []string {
	if v, ok := sources[name]; ok {
		return v
	}
	var out []string
	for k, v := range sources {
		if strings.EqualFold(k, name) {
			out = append(out, v...)
		}
	}
	return out
}

// authData is what client.Info.Auth says of a let-in sender: its user,
// never its key.
type authData struct{ user string }

func (d authData) GetAttribute(name string) any {
	if name == UserIDAttribute {
		return d.user
	}
	return nil
}

func (authData) GetAttributeNames() []string { return []string{UserIDAttribute} }

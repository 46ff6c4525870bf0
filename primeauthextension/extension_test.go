package primeauthextension

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/client"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"

	authmeta "github.com/primeintellect/primeexporter/primeauthextension/internal/metadata"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// started is a prime_auth extension started against a fake platform.
func started(t testing.TB, s *rfttest.Server, mutate func(*Config)) *authExtension {
	t.Helper()
	cfg := createDefaultConfig().(*Config)
	cfg.Endpoint = s.BaseURL()
	if mutate != nil {
		mutate(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(authmeta.Type), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ext.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ext.Shutdown(context.Background()) })
	return ext.(*authExtension)
}

func TestASenderGetsInOnlyWithAKeyThePlatformAccepts(t *testing.T) {
	s := rfttest.NewServer(rfttest.Options{})
	defer s.Close()
	a := started(t, s, nil)
	good := "Bearer " + s.APIKey()
	tests := []struct {
		name    string
		sources map[string][]string
		want    error // nil: let in as rfttest.UserID
	}{
		{"a good key over HTTP", map[string][]string{"Authorization": {good}}, nil},
		{"a good key over gRPC", map[string][]string{"authorization": {good}}, nil},
		{"a good key with an odd-cased scheme", map[string][]string{"authorization": {"bearer " + s.APIKey()}}, nil},
		{"no header", map[string][]string{"Content-Type": {"application/x-protobuf"}}, nil},
		{"a key the platform refuses", map[string][]string{"Authorization": {"Bearer wrong-key-1234"}}, errRefused},
		{"two keys", map[string][]string{"Authorization": {good, good}}, nil},
		{"basic auth", map[string][]string{"Authorization": {"Basic dTpw"}}, nil},
	}
	wantErr := map[string]bool{"no header": true, "two keys": true, "basic auth": true}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, err := a.Authenticate(context.Background(), tt.sources)
			if tt.want != nil || wantErr[tt.name] {
				if err == nil {
					t.Fatal("let in")
				}
				if tt.want != nil && !errors.Is(err, tt.want) {
					t.Fatalf("err = %v, want %v", err, tt.want)
				}
				for _, vs := range tt.sources {
					for _, v := range vs {
						if k := strings.TrimPrefix(v, "Bearer "); len(k) > 4 && strings.Contains(err.Error(), k) {
							t.Fatalf("the error repeats what was sent: %v", err)
						}
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := client.FromContext(ctx).Auth.GetAttribute(UserIDAttribute); got != rfttest.UserID {
				t.Fatalf("Auth %s = %v, want %s", UserIDAttribute, got, rfttest.UserID)
			}
		})
	}
}

func TestAKeyIsCheckedWithThePlatformOncePerTTL(t *testing.T) {
	s := rfttest.NewServer(rfttest.Options{})
	defer s.Close()
	a := started(t, s, nil)
	for range 5 {
		if _, err := a.Authenticate(context.Background(), map[string][]string{"authorization": {"Bearer " + s.APIKey()}}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, "/user/whoami") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("whoami asked %d times for 5 requests, want 1", n)
	}
}

func TestAKnownKeyGetsInWhileThePlatformIsDownAndAnUnknownOneIsToldToRetry(t *testing.T) {
	s := rfttest.NewServer(rfttest.Options{})
	defer s.Close()
	a := started(t, s, func(c *Config) { c.Cache.TTL = time.Nanosecond })
	known := map[string][]string{"authorization": {"Bearer " + s.APIKey()}}
	if _, err := a.Authenticate(context.Background(), known); err != nil {
		t.Fatal(err)
	}
	s.SetOutage(&rfttest.Fault{Status: http.StatusServiceUnavailable})
	defer s.SetOutage(nil)
	time.Sleep(time.Millisecond)
	if _, err := a.Authenticate(context.Background(), known); err != nil {
		t.Fatalf("a key seen good, platform down: %v", err)
	}
	_, err := a.Authenticate(context.Background(), map[string][]string{"authorization": {"Bearer never-seen-key"}})
	if !errors.Is(err, errUnreachable) {
		t.Fatalf("an unknown key, platform down: %v, want errUnreachable", err)
	}
}

func TestTheConfigNamesEachBadKey(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no endpoint", func(c *Config) { c.Endpoint = "" }, "endpoint"},
		{"no ttl", func(c *Config) { c.Cache.TTL = 0 }, "cache::ttl"},
		{"no refused ttl", func(c *Config) { c.Cache.RefusedTTL = 0 }, "cache::refused_ttl"},
		{"negative max_stale", func(c *Config) { c.Cache.MaxStale = -time.Second }, "cache::max_stale"},
		{"no max_keys", func(c *Config) { c.Cache.MaxKeys = 0 }, "cache::max_keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			tt.mutate(cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want it to name %s", err, tt.want)
			}
		})
	}
	if err := createDefaultConfig().(*Config).Validate(); err != nil {
		t.Fatalf("the default config: %v", err)
	}
}

// BenchmarkACachedKeyCheck is what prime_auth adds to every request of a
// sender whose key it has seen within ttl: the multi-tenant gateway's cost
// per request beside the single-key gateway's (docs/performance.md, The
// gateway tiers, sets it against a request's own work).
func BenchmarkACachedKeyCheck(b *testing.B) {
	s := rfttest.NewServer(rfttest.Options{})
	defer s.Close()
	a := started(b, s, nil)
	sources := map[string][]string{"authorization": {"Bearer " + s.APIKey()}}
	if _, err := a.Authenticate(context.Background(), sources); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(context.Background(), sources); err != nil {
			b.Fatal(err)
		}
	}
}

func TestARevokedKeyIsRefusedAtItsNextRequestThoughTheCacheTookItAsGood(t *testing.T) {
	s := rfttest.NewServer(rfttest.Options{})
	defer s.Close()
	a := started(t, s, nil)
	sources := map[string][]string{"authorization": {"Bearer " + s.APIKey()}}
	if _, err := a.Authenticate(context.Background(), sources); err != nil {
		t.Fatal(err)
	}
	// What the prime exporter of a multi-tenant gateway finds via the
	// host's extensions when the platform refuses a tenant's key.
	var revoker interface{ RevokeKey(string) } = a
	revoker.RevokeKey(s.APIKey())
	if _, err := a.Authenticate(context.Background(), sources); err == nil || !strings.Contains(err.Error(), "refused this key") {
		t.Fatalf("a revoked key within cache::ttl: %v, want the refusal", err)
	}
}

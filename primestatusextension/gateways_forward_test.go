package primestatusextension

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/extension/extensiontest"

	"github.com/primeintellect/primeexporter/primeauthextension"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The agent tier in front of multi-tenant gateways: the agent's route lets
// a caller in by its own platform key (prime_auth) and asks the gateways
// with that key (gateway_client's auth: prime_auth), because a
// multi-tenant gateway's route answers each caller about its own runs.

const (
	aliceKey = "sk-alice-status-77aa"
	bobKey   = "sk-bob-status-31cd"
)

// hostWith is a host that holds the given extensions.
type hostWith map[component.ID]component.Component

func (h hostWith) GetExtensions() map[component.ID]component.Component { return h }

// tenantGateway is a multi-tenant gateway's status route: alice's run key
// "alice-run" is running for alice's key, and every other question is
// unknown. It records the Authorization of each question.
func tenantGateway(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, auth)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if auth == "Bearer "+aliceKey && r.URL.Query().Get("key") == "alice-run" {
			_, _ = w.Write([]byte(runningBody))
			return
		}
		_, _ = w.Write([]byte(unknownBody))
	}))
	t.Cleanup(s.Close)
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// startAgentRoute starts prime_auth against a fake platform that knows
// alice's and bob's keys, and a status route behind it that asks gateway
// with the caller's key; includeMetadata is the route's include_metadata.
func startAgentRoute(t *testing.T, gateway string, includeMetadata bool) string {
	t.Helper()
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{{Key: aliceKey, ID: "alice"}, {Key: bobKey, ID: "bob"}}})
	t.Cleanup(platform.Close)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	authID := component.MustNewID("prime_auth")
	authCfg := primeauthextension.NewFactory().CreateDefaultConfig().(*primeauthextension.Config)
	authCfg.Endpoint = platform.BaseURL()
	auth, err := primeauthextension.NewFactory().Create(context.Background(), extensiontest.NewNopSettings(authID.Type()), authCfg)
	require.NoError(t, err)
	host := hostWith{authID: auth}
	require.NoError(t, auth.Start(context.Background(), host))
	t.Cleanup(func() { assert.NoError(t, auth.Shutdown(context.Background())) })

	cfg := createDefaultConfig().(*Config)
	cfg.NetAddr.Endpoint = freeAddr(t)
	cfg.Auth = configoptional.Some(confighttp.AuthConfig{Config: configauth.Config{AuthenticatorID: authID}})
	cfg.IncludeMetadata = includeMetadata
	cfg.Gateways = []string{gateway}
	cfg.GatewayClient.Auth = configoptional.Some(configauth.Config{AuthenticatorID: authID})
	require.NoError(t, cfg.Validate())
	var x extension.Extension = newTestExtension(cfg)
	require.NoError(t, x.Start(context.Background(), host))
	t.Cleanup(func() { assert.NoError(t, x.Shutdown(context.Background())) })
	return "http://" + cfg.NetAddr.Endpoint + Path
}

// askWithKey asks the route about a run key with key as a Bearer token.
func askWithKey(t *testing.T, url, key, runKey string) (int, Status) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"?key="+runKey, http.NoBody)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var st Status
	_ = json.Unmarshal(body, &st)
	for _, k := range []string{aliceKey, bobKey} {
		assert.NotContains(t, string(body), k, "the answer repeats a key")
	}
	return resp.StatusCode, st
}

func TestTheAgentsRouteAsksTheGatewaysWithItsCallersOwnKey(t *testing.T) {
	gw, seen := tenantGateway(t)
	url := startAgentRoute(t, gw.URL, true)

	code, st := askWithKey(t, url, aliceKey, "alice-run")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, StateRunning, st.State, "alice asking about her run")
	code, st = askWithKey(t, url, bobKey, "alice-run")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, StateUnknown, st.State, "bob asking about alice's run key")
	assert.Empty(t, st.ID)
	assert.Equal(t, []string{"Bearer " + aliceKey, "Bearer " + bobKey}, seen(), "each question went with its caller's key")

	// A key the platform refuses is refused at the agent: the gateways
	// are not asked.
	code, _ = askWithKey(t, url, "sk-not-a-key-0000", "alice-run")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Len(t, seen(), 2, "a refused caller's question reached a gateway")
}

func TestARouteWithoutIncludeMetadataSaysSoInsteadOfAskingWithoutAKey(t *testing.T) {
	gw, seen := tenantGateway(t)
	url := startAgentRoute(t, gw.URL, false)

	code, st := askWithKey(t, url, aliceKey, "alice-run")
	assert.Equal(t, http.StatusBadGateway, code)
	assert.Equal(t, StateUnavailable, st.State)
	assert.True(t, strings.Contains(st.Error, "include_metadata: true"), "the error should name include_metadata: %q", st.Error)
	assert.Empty(t, seen(), "a question went to a gateway without the caller's key")
}

package deploy

import (
	"context"
	"maps"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// plainConfig is a collector config under deploy/ that users run as a file
// (not inside a manifest), with the least env its header asks for, and
// the variables whose absence must stop it.
type plainConfig struct {
	file string // relative to deploy/
	dist distribution
	env  map[string]string
	// required maps a variable of env to what validate says without it:
	// the config fails closed rather than running unguarded.
	required map[string]string
}

// tlsEnv is a receiver's certificate and key; validate reads neither file.
var tlsEnv = map[string]string{"PRIME_TLS_CERT_FILE": "/run/secrets/prime/tls.crt", "PRIME_TLS_KEY_FILE": "/run/secrets/prime/tls.key"}

const noCertificate = "TLS configuration must include both certificate and key"

func withTLS(env map[string]string) map[string]string {
	out := maps.Clone(env)
	maps.Copy(out, tlsEnv)
	return out
}

var plainConfigs = []plainConfig{
	{file: "gateway.yaml", dist: gatewayDist,
		env:      withTLS(map[string]string{"PRIME_API_KEY": "k", "REDIS_ENDPOINT": "redis:6379", "PRIME_INGEST_TOKEN_FILE": "/run/secrets/prime/token"}),
		required: map[string]string{"REDIS_ENDPOINT": "shared_registry::redis::endpoint is required", "PRIME_INGEST_TOKEN_FILE": "no bearer token provided"}},
	{file: "agent.yaml", dist: agentDist,
		env:      map[string]string{"PRIME_GATEWAYS": "gw-0.gw:4317", "PRIME_GATEWAY_TOKEN_FILE": "/run/secrets/prime/token"},
		required: map[string]string{"PRIME_GATEWAY_TOKEN_FILE": "no bearer token provided"}},
	{file: "multitenant/gateway.yaml", dist: gatewayDist,
		env:      withTLS(map[string]string{"PRIME_STORAGE_DIR": "/var/lib/otelcol-prime"}),
		required: map[string]string{"PRIME_TLS_CERT_FILE": noCertificate}},
	{file: "multitenant/agent.yaml", dist: agentDist,
		env: withTLS(map[string]string{"PRIME_GATEWAYS": "gw-0.gw:4317", "PRIME_STATUS_GATEWAYS": "https://gw-0.gw:4320"}),
		required: map[string]string{
			"PRIME_TLS_KEY_FILE": noCertificate,
			"PRIME_GATEWAYS":     "no endpoints specified for the static resolver",
		}},
}

// runValidate runs the built collector's validate on a deploy/ file with env.
func runValidate(t *testing.T, bin, file string, env map[string]string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "validate", "--config="+filepath.Join(".", file))
	cmd.Env = validateEnv(t, env)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestThePlainDeployConfigsPassTheBuiltCollectorsValidateAndFailClosedWithoutWhatTheyRequire(t *testing.T) {
	for _, pc := range plainConfigs {
		t.Run(pc.file, func(t *testing.T) {
			bin := builtCollector(t, pc.dist)
			out, err := runValidate(t, bin, pc.file, pc.env)
			require.NoError(t, err, "%s validate --config=deploy/%s:\n%s", filepath.Base(pc.dist.binary), pc.file, out)
			for name, want := range pc.required {
				env := maps.Clone(pc.env)
				delete(env, name)
				out, err := runValidate(t, bin, pc.file, env)
				require.Error(t, err, "deploy/%s passes validate without %s:\n%s", pc.file, name, out)
				require.Contains(t, out, want, "without %s", name)
			}
		})
	}
}

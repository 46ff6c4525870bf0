package deploy

import (
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// embeddedConfig is a collector config shipped inside a manifest, with the
// env its collector gets there.
type embeddedConfig struct {
	where string
	dist  distribution
	text  string
	env   map[string]string
}

func embeddedConfigs(t *testing.T) []embeddedConfig {
	t.Helper()
	var out []embeddedConfig
	c := loadCluster(t)
	for _, w := range collectorWorkloads {
		spec := &podTemplate(t, c.get(t, w.kind, w.name)).Spec
		ctr := findContainer(t, spec, w.container, w.initContainer)
		out = append(out, embeddedConfig{
			where: "kubernetes: " + w.kind + "/" + w.name,
			dist:  w.dist,
			text:  configFromMount(t, c, spec, ctr, configArg(t, ctr)),
			env:   containerEnv(ctr.Env),
		})
	}
	for _, r := range helmReleases {
		values := releaseValues(t, r)
		text, _ := releaseConfig(t, values)
		_, env := releaseEnv(t, values)
		out = append(out, embeddedConfig{where: "helm: " + path.Base(r.file), dist: r.dist, text: text, env: env})
	}
	col, _ := operatorSidecar(t)
	text, _ := operatorConfig(t, col)
	out = append(out, embeddedConfig{where: "operator: " + col.Metadata.Name, dist: gatewayDist, text: text, env: containerEnv(col.Spec.Env)})
	return out
}

// builtCollector is the binary named by the distribution's env var.
func builtCollector(t *testing.T, d distribution) string {
	t.Helper()
	bin := os.Getenv(d.binaryEnv)
	require.NotEmpty(t, bin, "set %s to the built %s (%s): every embedded collector config is checked with its validate",
		d.binaryEnv, path.Base(d.binary), d.build)
	info, err := os.Stat(bin)
	require.NoError(t, err, "%s=%s", d.binaryEnv, bin)
	require.False(t, info.IsDir(), "%s=%s is a binary", d.binaryEnv, bin)
	return bin
}

// validateEnv is the collector's environment for validate: the pod's, and no
// more of the test's than PATH.
func validateEnv(t *testing.T, env map[string]string) []string {
	t.Helper()
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range env {
		if k == "PRIME_HOST_ROOT" {
			// The pod mounts its node's / there (host_metrics checks that
			// it exists); the node here is this machine, whose / is /.
			v = "/"
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func TestEveryEmbeddedCollectorConfigPassesTheBuiltCollectorsValidate(t *testing.T) {
	bins := map[string]string{}
	for _, d := range []distribution{gatewayDist, agentDist} {
		bins[d.binaryEnv] = builtCollector(t, d)
	}
	for _, ec := range embeddedConfigs(t) {
		t.Run(ec.where, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(file, []byte(ec.text), 0o600))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bins[ec.dist.binaryEnv], "validate", "--config="+file)
			cmd.Env = validateEnv(t, ec.env)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s validate --config=<%s's config>:\n%s", path.Base(ec.dist.binary), ec.where, out)
		})
	}
}

// validate must refuse a broken config, or passing it means nothing.
func TestTheBuiltCollectorsValidateRefusesABrokenConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dist    distribution
		edit    func(text string, env map[string]string) string
		wantOut string
	}{
		{"the gateway, given the chart's batch processor it lacks", gatewayDist, func(s string, _ map[string]string) string {
			return strings.Replace(s, "\nprocessors:\n", "\nprocessors:\n  batch: {}\n", 1)
		}, `unknown type: "batch"`},
		{"the agent, given the prime exporter it lacks", agentDist, func(s string, _ map[string]string) string {
			return strings.Replace(s, "\nexporters:\n", "\nexporters:\n  prime: {}\n", 1)
		}, `unknown type: "prime"`},
		{"the gateway, with no REDIS_ENDPOINT in its env", gatewayDist, func(s string, env map[string]string) string {
			delete(env, "REDIS_ENDPOINT")
			return s
		}, "shared_registry::redis::endpoint is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := builtCollector(t, tc.dist)
			var ec embeddedConfig
			for _, e := range embeddedConfigs(t) {
				if e.dist == tc.dist && strings.HasPrefix(e.where, "kubernetes: ") {
					ec = e
					break
				}
			}
			text := tc.edit(ec.text, ec.env)
			file := filepath.Join(t.TempDir(), "config.yaml")
			require.NoError(t, os.WriteFile(file, []byte(text), 0o600))
			cmd := exec.Command(bin, "validate", "--config="+file)
			cmd.Env = validateEnv(t, ec.env)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "validate passes a broken config:\n%s", out)
			require.Contains(t, string(out), tc.wantOut)
		})
	}
}

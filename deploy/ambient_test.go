package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The system metrics overlays users add with --config (docs/system-metrics.md).
var ambientOverlays = []string{"system-metrics.yaml", "gpu-metrics.yaml", "vllm-metrics.yaml"}

func readOverlay(t *testing.T, name string) collectorConfig {
	t.Helper()
	text, err := os.ReadFile(name)
	require.NoError(t, err)
	return parseCollectorConfig(t, string(text), name)
}

func TestEveryAmbientOverlayPassesTheBuiltCollectorsValidateOnTheDemoConfig(t *testing.T) {
	bin := builtCollector(t, gatewayDist)
	env := validateEnv(t, map[string]string{"PRIME_RUN_KEY": "run-1"})
	for _, overlay := range ambientOverlays {
		t.Run(overlay, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "validate", "--config="+filepath.Join(repoRoot, "testdata", "demo-offline.yaml"), "--config="+overlay)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "validate with %s:\n%s", overlay, out)
		})
	}
}

// validate must refuse an overlay that names what it does not define, or
// passing it means nothing.
func TestTheBuiltCollectorsValidateRefusesAnOverlayOfAPipelineWithAMissingProcessor(t *testing.T) {
	bin := builtCollector(t, gatewayDist)
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("service:\n  pipelines:\n    metrics/prime-system:\n      processors: [resource/nowhere]\n"), 0o600))
	cmd := exec.Command(bin, "validate", "--config="+filepath.Join(repoRoot, "testdata", "demo-offline.yaml"), "--config=system-metrics.yaml", "--config="+broken)
	cmd.Env = validateEnv(t, map[string]string{"PRIME_RUN_KEY": "run-1"})
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "validate passes a pipeline naming a processor nobody defines:\n%s", out)
	assert.Contains(t, string(out), "resource/nowhere")
}

// embedded is the config a Kubernetes workload's collector runs.
func embedded(t *testing.T, where string) embeddedConfig {
	t.Helper()
	for _, ec := range embeddedConfigs(t) {
		if ec.where == where {
			return ec
		}
	}
	t.Fatalf("no embedded config %s", where)
	return embeddedConfig{}
}

// holdsOverlay checks that cfg defines the overlay's receivers and
// processors as the overlay does, and runs its pipelines as it does.
func holdsOverlay(t *testing.T, where string, cfg collectorConfig, overlay string) {
	t.Helper()
	o := readOverlay(t, overlay)
	for _, section := range []string{"receivers", "processors"} {
		want, _ := o.get(section)
		for id, def := range want.(map[string]any) {
			got, ok := cfg.get(section, id)
			if assert.True(t, ok, "%s lacks %s's %s %s", where, overlay, section, id) {
				assert.Equal(t, def, got, "%s's %s %s differs from %s's", where, section, id, overlay)
			}
		}
	}
	pipelines, _ := o.get("service", "pipelines")
	for id, def := range pipelines.(map[string]any) {
		for _, part := range []string{"receivers", "exporters"} {
			want, ok := def.(map[string]any)[part]
			if !ok {
				continue
			}
			got, _ := cfg.get("service", "pipelines", id, part)
			assert.Equal(t, want, got, "%s's pipeline %s %s", where, id, part)
		}
	}
}

// The sidecar Job carries the host and GPU overlays inline (a pod has no
// repository): its receivers and processors are theirs, unchanged, and
// its pipelines send them to the prime exporter.
func TestTheSidecarJobSamplesItsNodeAndGPUsAsTheShippedOverlaysDo(t *testing.T) {
	c := loadCluster(t)
	job := embedded(t, "kubernetes: Job/trainer")
	cfg := parseCollectorConfig(t, job.text, job.where)
	for _, overlay := range []string{"system-metrics.yaml", "gpu-metrics.yaml"} {
		holdsOverlay(t, job.where, cfg, overlay)
	}
	pod := podTemplate(t, c.get(t, "Job", "trainer"))
	require.NotNil(t, pod.Spec.ShareProcessNamespace, "the sidecar sees the trainer's processes")
	assert.True(t, *pod.Spec.ShareProcessNamespace)
	for _, name := range []string{"PRIME_RUN_KEY", "PRIME_SYSTEM_HOST", "PRIME_DCGM_ENDPOINT", "PRIME_DCGM_POD"} {
		assert.Contains(t, job.env, name, "the sidecar's env")
	}
}

// The agent DaemonSet carries deploy/agent-ambient.yaml inline, with the
// node's filesystem and its dcgm-exporter's address.
func TestTheAgentDaemonSetSendsItsNodesAmbientMetricsAsTheShippedOverlayDoes(t *testing.T) {
	c := loadCluster(t)
	agent := embedded(t, "kubernetes: DaemonSet/prime-agent")
	cfg := parseCollectorConfig(t, agent.text, agent.where)
	holdsOverlay(t, agent.where, cfg, "agent-ambient.yaml")
	for _, id := range []string{"logs", "metrics"} {
		processors, _ := cfg.get("service", "pipelines", id, "processors")
		assert.Contains(t, processors, "prime_ambient", "the trainers' %s pipeline teaches prime_ambient their pods", id)
	}
	assert.Equal(t, "/hostfs", agent.env["PRIME_HOST_ROOT"])
	assert.Equal(t, "10.0.0.7:9400", agent.env["PRIME_DCGM_ENDPOINT"], "the node's address")
	pod := podTemplate(t, c.get(t, "DaemonSet", "prime-agent"))
	var hostfs bool
	for _, v := range pod.Spec.Volumes {
		hostfs = hostfs || (v.Name == "hostfs" && v.HostPath != nil && v.HostPath.Path == "/")
	}
	assert.True(t, hostfs, "the node's / is a volume")
}

// The Helm agent and the Operator's sidecar carry the same overlays as
// their Kubernetes counterparts.
func TestTheHelmAgentAndTheOperatorSidecarSampleAsTheShippedOverlaysDo(t *testing.T) {
	helm := embedded(t, "helm: agent-values.yaml")
	holdsOverlay(t, helm.where, parseCollectorConfig(t, helm.text, helm.where), "agent-ambient.yaml")
	assert.Equal(t, "/hostfs", helm.env["PRIME_HOST_ROOT"])
	col, _ := operatorSidecar(t)
	op := embedded(t, "operator: "+col.Metadata.Name)
	cfg := parseCollectorConfig(t, op.text, op.where)
	for _, overlay := range []string{"system-metrics.yaml", "gpu-metrics.yaml"} {
		holdsOverlay(t, op.where, cfg, overlay)
	}
	for _, name := range []string{"PRIME_RUN_KEY", "PRIME_SYSTEM_HOST", "PRIME_DCGM_ENDPOINT", "PRIME_DCGM_POD"} {
		assert.Contains(t, op.env, name, "the operator sidecar's env")
	}
}

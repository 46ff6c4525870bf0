package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// chartDir holds the upstream chart's values.yaml and values.schema.json,
// the release the values files are written for.
const chartDir = "helm/testdata/opentelemetry-collector-0.170.0"

// helmRelease is one values file for the upstream opentelemetry-collector chart.
type helmRelease struct {
	file, mode, fullname string
	dist                 distribution
}

var helmReleases = []helmRelease{
	{file: "helm/gateway-values.yaml", mode: "deployment", fullname: "prime-gateway", dist: gatewayDist},
	{file: "helm/agent-values.yaml", mode: "daemonset", fullname: "prime-agent", dist: agentDist},
}

// chartPodEnv is what the chart's pod template sets for every collector
// (templates/_pod.tpl), before extraEnvs.
var chartPodEnv = map[string]string{
	"MY_POD_IP": "10.0.0.7", "OTEL_K8S_NODE_NAME": "node-1", "OTEL_K8S_NODE_IP": "10.0.0.1",
	"OTEL_K8S_NAMESPACE": namespace, "OTEL_K8S_POD_NAME": "pod-1", "OTEL_K8S_POD_IP": "10.0.0.7",
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	body, err := os.ReadFile(file)
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, yaml.Unmarshal(body, &v), file)
	return v
}

// coalesce merges values over the chart's defaults as Helm does for a chart
// installed directly: maps merge key by key, a null removes the key, and
// anything else (lists included) replaces the default whole.
func coalesce(defaults, values map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range values {
		switch {
		case v == nil:
			delete(out, k)
		default:
			dm, dok := out[k].(map[string]any)
			vm, vok := v.(map[string]any)
			if dok && vok {
				out[k] = coalesce(dm, vm)
			} else {
				out[k] = v
			}
		}
	}
	return out
}

// releaseValues are the chart's defaults with the release's values file over them.
func releaseValues(t *testing.T, r helmRelease) map[string]any {
	t.Helper()
	return coalesce(readValues(t, filepath.Join(chartDir, "values.yaml")), readValues(t, r.file))
}

func chartSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join(chartDir, "values.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("values.schema.json", doc))
	sch, err := c.Compile("values.schema.json")
	require.NoError(t, err)
	return sch
}

// validateValues checks values against the chart's schema, as helm install does.
func validateValues(t *testing.T, sch *jsonschema.Schema, values map[string]any) error {
	t.Helper()
	body, err := json.Marshal(values)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err)
	return sch.Validate(inst)
}

func TestTheHelmValuesPassTheChartsSchemaAfterHelmsMerge(t *testing.T) {
	sch := chartSchema(t)
	for _, r := range helmReleases {
		t.Run(path.Base(r.file), func(t *testing.T) {
			assert.NoError(t, validateValues(t, sch, releaseValues(t, r)))
		})
	}
}

// The schema check must refuse what the chart cannot render, or passing it
// means nothing.
func TestTheChartsSchemaRefusesValuesTheChartCannotRender(t *testing.T) {
	sch := chartSchema(t)
	for _, tc := range []struct{ name, values string }{
		{"a tcpSocket liveness probe (the chart writes httpGet only)", "livenessProbe: {tcpSocket: {port: 13133}}"},
		{"a misspelled top-level key", "extraEnv: [{name: A, value: b}]"},
		{"a port number as a string", "ports: {health: {enabled: true, containerPort: '13133'}}"},
		{"a mode the chart lacks", "mode: sidecar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tc.values), &v))
			values := coalesce(readValues(t, filepath.Join(chartDir, "values.yaml")), coalesce(readValues(t, "helm/gateway-values.yaml"), v))
			assert.Error(t, validateValues(t, sch, values))
		})
	}
}

func TestHelmsMergeRemovesNullsMergesMapsAndReplacesLists(t *testing.T) {
	got := coalesce(
		map[string]any{"a": map[string]any{"x": 1, "y": 2}, "l": []any{1, 2}, "gone": "v"},
		map[string]any{"a": map[string]any{"y": nil, "z": 3}, "l": []any{3}, "gone": nil},
	)
	assert.Equal(t, map[string]any{"a": map[string]any{"x": 1, "z": 3}, "l": []any{3}}, got)
}

// dig walks keys through nested maps of Helm values.
func dig(t *testing.T, values map[string]any, keys ...string) any {
	t.Helper()
	v, ok := collectorConfig(values).get(keys...)
	require.True(t, ok, "the values have %s", strings.Join(keys, "."))
	return v
}

func digStr(t *testing.T, values map[string]any, keys ...string) string {
	t.Helper()
	return fmt.Sprint(dig(t, values, keys...))
}

// releaseConfig is the collector config the chart renders: the merged
// `config` (no presets are enabled, and the values hold no templates).
func releaseConfig(t *testing.T, values map[string]any) (string, collectorConfig) {
	t.Helper()
	body, err := yaml.Marshal(dig(t, values, "config"))
	require.NoError(t, err)
	assert.NotContains(t, string(body), "{{", "the config holds no Helm templates")
	return string(body), parseCollectorConfig(t, string(body), "config")
}

// releaseEnv is the collector's env in the chart's pod: the chart's own,
// GOMEMLIMIT, then extraEnvs (decoded strictly).
func releaseEnv(t *testing.T, values map[string]any) ([]corev1.EnvVar, map[string]string) {
	t.Helper()
	var extra []corev1.EnvVar
	if v, ok := values["extraEnvs"]; ok {
		body, err := json.Marshal(v)
		require.NoError(t, err)
		require.NoError(t, decodeStrict(body, &extra), "extraEnvs are EnvVars")
	}
	env := containerEnv(extra)
	for k, v := range chartPodEnv {
		env[k] = v
	}
	if values["useGOMEMLIMIT"] == true {
		if l, ok := collectorConfig(values).get("resources", "limits", "memory"); ok {
			q := resource.MustParse(fmt.Sprint(l))
			env["GOMEMLIMIT"] = fmt.Sprintf("%dMiB", q.Value()*8/10>>20)
		}
	}
	return extra, env
}

func TestTheHelmReleasesFitTheirImageConfigAndProbes(t *testing.T) {
	images := scriptImages(t)
	for _, r := range helmReleases {
		t.Run(path.Base(r.file), func(t *testing.T) {
			values := releaseValues(t, r)
			assert.Equal(t, r.mode, values["mode"])
			assert.Equal(t, r.fullname, values["fullnameOverride"])
			image := digStr(t, values, "image", "repository") + ":" + digStr(t, values, "image", "tag")
			assert.Equal(t, images[r.dist.imageVar], image, "the image is scripts/image.sh's %s", r.dist.imageVar)
			assert.Equal(t, r.dist.binary, "/"+digStr(t, values, "command", "name"), "command.name is the image's binary (the chart runs /<name>)")

			text, cfg := releaseConfig(t, values)
			extra, env := releaseEnv(t, values)
			for _, name := range requiredEnv(text) {
				assert.Contains(t, env, name, "the config reads ${env:%s} with no default: the pod sets it", name)
			}
			endpoint, statusPath := cfg.healthEndpoint(t)
			healthPort := portOf(t, resolveEnv(endpoint, env))
			assert.Equal(t, statusPath, digStr(t, values, "readinessProbe", "httpGet", "path"))
			assert.Equal(t, fmt.Sprint(healthPort), digStr(t, values, "readinessProbe", "httpGet", "port"), "readiness asks the health check's port")
			metricsPort := resolveEnv(cfg.metricsPort(t), env)
			assert.Equal(t, metricsPort, digStr(t, values, "livenessProbe", "httpGet", "port"),
				"liveness asks the collector's metrics endpoint, which a permanent error does not fail")
			assert.Equal(t, "/metrics", digStr(t, values, "livenessProbe", "httpGet", "path"))
			// The chart's NetworkPolicy admits allowIngressFrom to every
			// enabled port: only the receivers' are enabled, and metrics have
			// a rule of their own (listeners_test.go checks who it admits).
			for name, p := range dig(t, values, "ports").(map[string]any) {
				if p.(map[string]any)["enabled"] == true {
					assert.Contains(t, []string{"otlp", "otlp-http"}, name, "no port for a receiver the config lacks, and none for health or metrics")
				}
			}
			assert.Equal(t, true, dig(t, values, "networkPolicy", "enabled"), "the chart renders its NetworkPolicy")

			for _, e := range extra {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Name == "PRIME_API_KEY" {
					assert.Equal(t, []string{apiKeySecret, apiKeyKey}, []string{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key})
				}
			}
			if r.dist == gatewayDist {
				assert.Contains(t, env, "PRIME_API_KEY")
			}
			assert.Contains(t, env, "GOMEMLIMIT", "useGOMEMLIMIT with a memory limit sets GOMEMLIMIT")

			if dig(t, values, "securityContext", "readOnlyRootFilesystem") == true {
				var mounts []corev1.VolumeMount
				body, err := json.Marshal(values["extraVolumeMounts"])
				require.NoError(t, err)
				require.NoError(t, decodeStrict(body, &mounts))
				for _, dir := range cfg.storageDirs() {
					dir = resolveEnv(dir, env)
					assert.True(t, slices.ContainsFunc(mounts, func(m corev1.VolumeMount) bool { return !m.ReadOnly && under(dir, m.MountPath) }),
						"file_storage's directory %s is on a writable volume", dir)
				}
			}
		})
	}
}

func TestTheHelmAgentsResolveTheHelmGatewaysHeadlessService(t *testing.T) {
	gw := releaseValues(t, helmReleases[0])
	agent := releaseValues(t, helmReleases[1])
	_, cfg := releaseConfig(t, agent)
	assert.Equal(t, digStr(t, gw, "fullnameOverride"), cfg.str(t, "exporters", "load_balancing", "resolver", "dns", "hostname"),
		"the chart names the gateways' Service after fullnameOverride")
	assert.Equal(t, "None", digStr(t, gw, "service", "clusterIP"), "the gateways' Service is headless: one address per ready gateway")
	assert.Equal(t, digStr(t, gw, "ports", "otlp", "containerPort"), cfg.str(t, "exporters", "load_balancing", "resolver", "dns", "port"))
	assert.Equal(t, true, dig(t, gw, "podDisruptionBudget", "enabled"))
}

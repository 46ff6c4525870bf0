package deploy

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// shippedConfig is one collector config users run, with the env and the
// NetworkPolicies of where it runs.
type shippedConfig struct {
	where  string
	cfg    collectorConfig
	env    map[string]string
	admits admission
}

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = ".."

// alsoShipped are configs outside deploy/ that users are told to run.
var alsoShipped = []string{"testdata/demo-offline.yaml"}

// docsToRead are the pages whose file references and YAML blocks count as
// configs users run.
func docsToRead(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	return append(docs, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "deploy", "README.md"))
}

// isCollectorConfig tells a collector config from the other YAML here (ocb
// manifests, chart values, Kubernetes objects).
func isCollectorConfig(m map[string]any) bool {
	_, recv := m["receivers"]
	_, svc := m["service"]
	_, kind := m["kind"]
	_, dist := m["dist"]
	return (recv || svc) && !kind && !dist
}

// manifests is every Kubernetes object under deploy/ that the rule needs.
type manifests struct {
	configMaps []*corev1.ConfigMap
	pods       []podOf // the workloads' pod templates
	policies   []*networkingv1.NetworkPolicy
	operators  []*openTelemetryCollector
}

type podOf struct {
	where string
	ns    string
	tmpl  *corev1.PodTemplateSpec
}

// addManifest decodes what the rule reads of one Kubernetes object; other
// kinds are skipped (the strict decoding is kubernetes_test.go's).
func (m *manifests) addManifest(t *testing.T, file string, doc []byte) {
	t.Helper()
	var tm metav1.TypeMeta
	require.NoError(t, decodeLoose(doc, &tm), file)
	decode := func(v any) { require.NoError(t, decodeLoose(doc, v), "%s: %s", file, tm.Kind) }
	switch tm.Kind {
	case "ConfigMap":
		cm := &corev1.ConfigMap{}
		decode(cm)
		m.configMaps = append(m.configMaps, cm)
	case "NetworkPolicy":
		p := &networkingv1.NetworkPolicy{}
		decode(p)
		m.policies = append(m.policies, p)
	case "OpenTelemetryCollector":
		col := &openTelemetryCollector{}
		decode(col)
		m.operators = append(m.operators, col)
	case "Deployment", "DaemonSet", "StatefulSet", "Job":
		var obj metav1.Object
		switch tm.Kind {
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "DaemonSet":
			obj = &appsv1.DaemonSet{}
		case "StatefulSet":
			obj = &appsv1.StatefulSet{}
		default:
			obj = &batchv1.Job{}
		}
		decode(obj)
		m.pods = append(m.pods, podOf{where: tm.Kind + "/" + obj.GetName(), ns: obj.GetNamespace(), tmpl: podTemplate(t, obj)})
	}
}

// shippedConfigs finds every collector config under deploy/ (but testdata),
// those the docs point to, and testdata/demo-offline.yaml, each with where
// it runs. A YAML file that mentions receivers but holds no config the test
// can read fails: a new shape needs a reader here.
func shippedConfigs(t *testing.T) []shippedConfig {
	t.Helper()
	var out []shippedConfig
	var mf manifests
	seen := map[string]bool{}
	addRaw := func(where string, body []byte) bool {
		var m map[string]any
		if yaml.Unmarshal(body, &m) != nil || !isCollectorConfig(m) {
			return false
		}
		out = append(out, shippedConfig{where: where, cfg: collectorConfig(m)})
		return true
	}
	require.NoError(t, filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		where := "deploy/" + filepath.ToSlash(path)
		seen[filepath.Clean(filepath.Join(repoRoot, "deploy", path))] = true
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		if strings.HasSuffix(path, "-values.yaml") && filepath.Dir(path) == "helm" {
			out = append(out, helmShipped(t, where, helmRelease{file: path}))
			return nil
		}
		found := false
		for _, doc := range splitDocuments(t, strings.NewReader(string(body)), where) {
			var probe map[string]any
			require.NoError(t, yaml.Unmarshal(doc, &probe), where)
			if _, ok := probe["apiVersion"]; ok {
				mf.addManifest(t, where, doc)
				found = found || strings.Contains(string(doc), "receivers:")
				continue
			}
			if _, ok := probe["dist"]; ok {
				found = true // an ocb manifest
				continue
			}
			found = addRaw(where, doc) || found
		}
		require.True(t, found || !strings.Contains(string(body), "receivers:"),
			"%s mentions receivers: but holds no collector config this test can read: teach shippedConfigs its shape", where)
		return nil
	}))
	out = append(out, mf.configs(t)...)

	for _, rel := range alsoShipped {
		file := filepath.Join(repoRoot, rel)
		body, err := os.ReadFile(file)
		require.NoError(t, err)
		require.True(t, addRaw(rel, body), "%s is a collector config", rel)
		seen[filepath.Clean(file)] = true
	}
	// What the docs tell users to run: a .yaml file they name, and a YAML
	// block that is a whole config.
	fileRef := regexp.MustCompile(`[A-Za-z0-9_./-]+\.ya?ml`)
	block := regexp.MustCompile("(?s)```ya?ml\n(.*?)```")
	for _, doc := range docsToRead(t) {
		body, err := os.ReadFile(doc)
		require.NoError(t, err)
		rel, _ := filepath.Rel(repoRoot, doc)
		for _, ref := range fileRef.FindAllString(string(body), -1) {
			for _, file := range []string{filepath.Join(repoRoot, ref), filepath.Join(filepath.Dir(doc), ref)} {
				file = filepath.Clean(file)
				if seen[file] {
					continue
				}
				if cfgBody, err := os.ReadFile(file); err == nil {
					seen[file] = true
					r, _ := filepath.Rel(repoRoot, file)
					addRaw(r+" (named in "+rel+")", cfgBody)
				}
			}
		}
		for i, m := range block.FindAllStringSubmatch(string(body), -1) {
			var cfg map[string]any
			err := yaml.Unmarshal([]byte(m[1]), &cfg)
			if strings.Contains(m[1], "\nreceivers:") || strings.HasPrefix(m[1], "receivers:") {
				require.NoError(t, err, "%s: YAML block %d holds receivers but does not parse: a user copying it gets an error", rel, i+1)
			}
			if err == nil && cfg["receivers"] != nil && cfg["service"] != nil {
				out = append(out, shippedConfig{where: rel + ": YAML block " + strconv.Itoa(i+1), cfg: collectorConfig(cfg)})
			}
		}
	}
	return out
}

// configs are the collector configs of the manifests: each ConfigMap's, in
// the env and behind the policies of every pod that mounts it, and each
// Operator collector's, in the pods that ask for it.
func (m *manifests) configs(t *testing.T) []shippedConfig {
	t.Helper()
	var out []shippedConfig
	for _, cm := range m.configMaps {
		for _, key := range sortedKeys(anyMap(cm.Data)) {
			var cfg map[string]any
			if yaml.Unmarshal([]byte(cm.Data[key]), &cfg) != nil || !isCollectorConfig(cfg) {
				continue
			}
			where := "ConfigMap/" + cm.Name + "[" + key + "]"
			mounted := false
			for _, p := range m.pods {
				for _, ctr := range slices.Concat(p.tmpl.Spec.InitContainers, p.tmpl.Spec.Containers) {
					if !mountsConfigMap(p.tmpl.Spec, ctr, cm.Name) {
						continue
					}
					mounted = true
					out = append(out, shippedConfig{where: where + " in " + p.where + "/" + ctr.Name, cfg: collectorConfig(cfg),
						env: containerEnv(ctr.Env), admits: policyAdmission(t, m.policies, p.ns, p.tmpl.Labels, ctr.Ports)})
				}
			}
			if !mounted {
				out = append(out, shippedConfig{where: where + " (mounted by no workload)", cfg: collectorConfig(cfg)})
			}
		}
	}
	for _, col := range m.operators {
		where := "OpenTelemetryCollector/" + col.Metadata.Name
		injected := false
		for _, p := range m.pods {
			if p.tmpl.Annotations[injectAnnotation] != col.Metadata.Name {
				continue
			}
			injected = true
			out = append(out, shippedConfig{where: where + " in " + p.where, cfg: collectorConfig(col.Spec.Config),
				env: containerEnv(col.Spec.Env), admits: policyAdmission(t, m.policies, p.ns, p.tmpl.Labels, nil)})
		}
		if !injected {
			out = append(out, shippedConfig{where: where + " (injected into no pod here)", cfg: collectorConfig(col.Spec.Config), env: containerEnv(col.Spec.Env)})
		}
	}
	return out
}

func anyMap(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mountsConfigMap(spec corev1.PodSpec, ctr corev1.Container, name string) bool {
	for _, vm := range ctr.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == name {
				return true
			}
		}
	}
	return false
}

// helmShipped is a values file's config in the chart's pod, behind the
// NetworkPolicy the chart renders from the values.
func helmShipped(t *testing.T, where string, r helmRelease) shippedConfig {
	t.Helper()
	values := releaseValues(t, r)
	_, cfg := releaseConfig(t, values)
	_, env := releaseEnv(t, values)
	pod := map[string]string{"app.kubernetes.io/instance": "release"}
	var policies []*networkingv1.NetworkPolicy
	if p := chartNetworkPolicy(t, values, pod); p != nil {
		policies = append(policies, p)
	}
	return shippedConfig{where: where, cfg: cfg, env: env, admits: policyAdmission(t, policies, namespace, pod, nil)}
}

// chartNetworkPolicy renders the chart's templates/networkpolicy.yaml
// (opentelemetry-collector 0.170.0) from values: when networkPolicy.enabled,
// one rule for every enabled port from allowIngressFrom (from everyone when
// that is empty), then extraIngressRules as written.
func chartNetworkPolicy(t *testing.T, values map[string]any, pod map[string]string) *networkingv1.NetworkPolicy {
	t.Helper()
	np, _ := values["networkPolicy"].(map[string]any)
	if np["enabled"] != true {
		return nil
	}
	var rendered struct {
		Ports []networkingv1.NetworkPolicyPort        `json:"ports"`
		From  []networkingv1.NetworkPolicyPeer        `json:"from"`
		Extra []networkingv1.NetworkPolicyIngressRule `json:"extra"`
	}
	var ports []map[string]any
	for _, name := range sortedKeys(values["ports"]) {
		p := asMap(asMap(values["ports"])[name])
		if p["enabled"] == true {
			ports = append(ports, map[string]any{"port": p["containerPort"], "protocol": p["protocol"]})
		}
	}
	body, err := json.Marshal(map[string]any{"ports": ports, "from": np["allowIngressFrom"], "extra": np["extraIngressRules"]})
	require.NoError(t, err)
	require.NoError(t, decodeStrict(body, &rendered), "networkPolicy's rules are NetworkPolicy ingress rules")
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "chart", Namespace: namespace},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: pod},
			Ingress:     append([]networkingv1.NetworkPolicyIngressRule{{Ports: rendered.Ports, From: rendered.From}}, rendered.Extra...),
		},
	}
}

func TestEveryShippedCollectorConfigAuthenticatesWhatListensOffLoopback(t *testing.T) {
	configs := shippedConfigs(t)
	var wheres []string
	for _, sc := range configs {
		wheres = append(wheres, sc.where)
		t.Run(sc.where, func(t *testing.T) {
			assert.Empty(t, violations(sc.cfg, sc.env, sc.admits))
		})
	}
	// The walk found what is known to ship; anything new is found the same way.
	for _, want := range []string{"deploy/gateway.yaml", "deploy/agent.yaml", "deploy/image/gateway.yaml", "deploy/image/agent.yaml",
		"deploy/multitenant/gateway.yaml", "deploy/multitenant/agent.yaml",
		"ConfigMap/prime-gateway-config[config.yaml] in Deployment/prime-gateway/otelcol-prime",
		"ConfigMap/prime-agent-config[config.yaml] in DaemonSet/prime-agent/otelcol-prime-agent",
		"ConfigMap/prime-sidecar-config[config.yaml] in Job/trainer/otelcol-prime",
		"deploy/helm/gateway-values.yaml", "deploy/helm/agent-values.yaml",
		"OpenTelemetryCollector/prime in Job/trainer-with-operator-sidecar", "testdata/demo-offline.yaml"} {
		assert.Contains(t, wheres, want, "the walk finds %s", want)
	}
	t.Logf("checked %d configs: %s", len(configs), strings.Join(wheres, "; "))
}

// The rule must refuse a config that breaks it, or passing it means nothing.
func TestTheListenerRuleRefusesWhatListensOffLoopbackUnguarded(t *testing.T) {
	const authExt = "extensions:\n  bearertokenauth/in: {filename: /t}\n"
	const runsAuth = "service:\n  extensions: [bearertokenauth/in]\n"
	grpc := func(body string) string {
		return "receivers:\n  otlp:\n    protocols:\n      grpc:\n" + body
	}
	restricted := func(int) (bool, string) { return true, "" }
	open := func(port int) (bool, string) { return false, "a policy admits everyone" }
	for _, tc := range []struct {
		name    string
		config  string
		env     map[string]string
		admits  admission
		wantErr string // "" when the config keeps the rule
	}{
		{"a receiver on 0.0.0.0 without auth", grpc("        endpoint: 0.0.0.0:4317\n"), nil, nil, "without auth"},
		{"a receiver whose env default is 0.0.0.0", grpc("        endpoint: ${env:PRIME_OTLP_GRPC:-0.0.0.0:4317}\n"), nil, nil, "without auth"},
		{"a receiver on every interface (no host)", grpc("        endpoint: :4317\n"), nil, nil, "without auth"},
		{"a receiver on an unset env var's host", grpc("        endpoint: ${env:MY_POD_IP}:4317\n"), nil, nil, "without auth"},
		{"a receiver on the pod IP from the workload's env", grpc("        endpoint: ${env:MY_POD_IP}:4317\n"), map[string]string{"MY_POD_IP": "10.0.0.7"}, restricted, "without auth"},
		{"a receiver whose env default is loopback", grpc("        endpoint: ${env:PRIME_OTLP_GRPC:-127.0.0.1:4317}\n"), nil, nil, ""},
		{"a receiver on localhost", grpc("        endpoint: localhost:4317\n"), nil, nil, ""},
		{"a receiver on [::1]", grpc("        endpoint: \"[::1]:4317\"\n"), nil, nil, ""},
		{"a receiver on loopback by env though its default is 0.0.0.0", grpc("        endpoint: ${env:PRIME_OTLP_GRPC:-0.0.0.0:4317}\n"), map[string]string{"PRIME_OTLP_GRPC": "127.0.0.1:1"}, nil, ""},
		{"a receiver with a token but no TLS", authExt + runsAuth + grpc("        endpoint: 0.0.0.0:4317\n        auth: {authenticator: bearertokenauth/in}\n"), nil, nil, "no TLS"},
		{"a receiver whose authenticator does not run", authExt + grpc("        endpoint: 0.0.0.0:4317\n        tls: {cert_file: c, key_file: k}\n        auth: {authenticator: bearertokenauth/in}\n"), nil, nil, "not in service::extensions"},
		{"a receiver with a token over TLS", authExt + runsAuth + grpc("        endpoint: 0.0.0.0:4317\n        tls: {cert_file: c, key_file: k}\n        auth: {authenticator: bearertokenauth/in}\n"), nil, nil, ""},
		{"a receiver with client certificates", grpc("        endpoint: 0.0.0.0:4317\n        tls: {cert_file: c, key_file: k, client_ca_file: ca}\n"), nil, nil, ""},
		{"health on 0.0.0.0 with no policy", "extensions:\n  healthcheckv2:\n    http: {endpoint: 0.0.0.0:13133}\n", nil, nil, "no NetworkPolicy"},
		{"health on the pod IP behind a policy that admits everyone", "extensions:\n  healthcheckv2:\n    http: {endpoint: \"${env:MY_POD_IP}:13133\"}\n", map[string]string{"MY_POD_IP": "10.0.0.7"}, open, "admits everyone"},
		{"health on the pod IP behind a restricting policy", "extensions:\n  healthcheckv2:\n    http: {endpoint: \"${env:MY_POD_IP}:13133\"}\n", map[string]string{"MY_POD_IP": "10.0.0.7"}, restricted, ""},
		{"health's env default off loopback", "extensions:\n  healthcheckv2:\n    http: {endpoint: \"${env:PRIME_HEALTH_ENDPOINT:-0.0.0.0:13133}\"}\n", nil, nil, "no NetworkPolicy"},
		{"health on loopback", "extensions:\n  healthcheckv2:\n    http: {endpoint: \"${env:PRIME_HEALTH_ENDPOINT:-127.0.0.1:13133}\"}\n", nil, nil, ""},
		{"pprof on 0.0.0.0", "extensions:\n  pprof: {endpoint: 0.0.0.0:1777}\n", nil, nil, "no NetworkPolicy"},
		{"prime_status on 0.0.0.0", "extensions:\n  prime_status: {endpoint: 0.0.0.0:4320}\n", nil, nil, "no NetworkPolicy"},
		{"prime_status on 0.0.0.0 behind an authenticator over TLS", authExt + "  prime_status: {endpoint: 0.0.0.0:4320, tls: {cert_file: c, key_file: k}, auth: {authenticator: bearertokenauth/in}}\n" + runsAuth, nil, nil, ""},
		{"prime_status on 0.0.0.0 behind an authenticator without TLS", authExt + "  prime_status: {endpoint: 0.0.0.0:4320, auth: {authenticator: bearertokenauth/in}}\n" + runsAuth, nil, nil, "no TLS"},
		{"the collector's metrics on 0.0.0.0", "service:\n  telemetry:\n    metrics:\n      readers:\n        - pull: {exporter: {prometheus: {host: 0.0.0.0, port: 8888}}}\n", nil, nil, "no NetworkPolicy"},
		{"the collector's metrics on loopback", "service:\n  telemetry:\n    metrics:\n      readers:\n        - pull: {exporter: {prometheus: {host: 127.0.0.1, port: 8888}}}\n", nil, nil, ""},
		{"an exporter's endpoint is no listener", "exporters:\n  prime: {endpoint: https://api.example.com}\n", nil, nil, ""},
		{"an extension's URL it calls is no listener", "extensions:\n  prime_auth: {endpoint: \"${env:PRIME_API_BASE:-https://api.example.com}\"}\n", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg collectorConfig
			require.NoError(t, yaml.Unmarshal([]byte(tc.config), &cfg))
			got := violations(cfg, tc.env, tc.admits)
			if tc.wantErr == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "one violation")
			assert.Contains(t, got[0], tc.wantErr)
		})
	}
}

// The shipped gateway keeps the rule only through its auth: without it, or
// with its health check back on 0.0.0.0, the same check fails.
func TestTheShippedGatewayBreaksTheRuleWithoutItsAuth(t *testing.T) {
	body, err := os.ReadFile("gateway.yaml")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, wantErr string
		edit          func(cfg collectorConfig)
	}{
		{"no auth on the receiver", "without auth", func(cfg collectorConfig) {
			grpc, _ := cfg.get("receivers", "otlp", "protocols", "grpc")
			delete(asMap(grpc), "auth")
		}},
		{"no TLS on the receiver", "no TLS", func(cfg collectorConfig) {
			grpc, _ := cfg.get("receivers", "otlp", "protocols", "grpc")
			delete(asMap(grpc), "tls")
		}},
		{"health on 0.0.0.0", "no NetworkPolicy", func(cfg collectorConfig) {
			http, _ := cfg.get("extensions", "healthcheckv2", "http")
			asMap(http)["endpoint"] = "${env:PRIME_HEALTH_ENDPOINT:-0.0.0.0:13133}"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg collectorConfig
			require.NoError(t, yaml.Unmarshal(body, &cfg))
			require.Empty(t, violations(cfg, nil, nil), "deploy/gateway.yaml as shipped keeps the rule")
			tc.edit(cfg)
			got := violations(cfg, nil, nil)
			require.Len(t, got, 1)
			assert.Contains(t, got[0], tc.wantErr)
		})
	}
}

// The multi-tenant agent keeps the rule only through prime_auth over TLS on
// each of its listeners off loopback: the receivers and the status route.
func TestTheMultitenantAgentBreaksTheRuleWithoutItsAuth(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("multitenant", "agent.yaml"))
	require.NoError(t, err)
	for _, tc := range []struct {
		path    []string
		wantErr string
	}{
		{[]string{"receivers", "otlp", "protocols", "grpc"}, "without auth"},
		{[]string{"receivers", "otlp", "protocols", "http"}, "without auth"},
		{[]string{"extensions", "prime_status"}, "no NetworkPolicy"},
	} {
		t.Run(strings.Join(tc.path, "::"), func(t *testing.T) {
			var cfg collectorConfig
			require.NoError(t, yaml.Unmarshal(body, &cfg))
			require.Empty(t, violations(cfg, nil, nil), "deploy/multitenant/agent.yaml as shipped keeps the rule")
			node, ok := cfg.get(tc.path...)
			require.True(t, ok)
			delete(asMap(node), "auth")
			got := violations(cfg, nil, nil)
			require.Len(t, got, 1)
			assert.Contains(t, got[0], tc.wantErr)
		})
	}
}

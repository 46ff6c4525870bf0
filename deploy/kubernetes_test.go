package deploy

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const kubernetesDir = "kubernetes"

// newObject gives the k8s.io/api type a manifest's apiVersion and kind
// decode into; a kind the manifests do not use is an error.
func newObject(apiVersion, kind string) (metav1.Object, error) {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}, nil
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1/Secret":
		return &corev1.Secret{}, nil
	case "v1/Service":
		return &corev1.Service{}, nil
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1/DaemonSet":
		return &appsv1.DaemonSet{}, nil
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "batch/v1/Job":
		return &batchv1.Job{}, nil
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, nil
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}, nil
	}
	return nil, fmt.Errorf("apiVersion %q kind %q is not a type these manifests use", apiVersion, kind)
}

// decodeManifest decodes one YAML document strictly into its k8s.io/api type.
func decodeManifest(doc []byte) (metav1.Object, error) {
	var tm metav1.TypeMeta
	if err := decodeLoose(doc, &tm); err != nil {
		return nil, err
	}
	obj, err := newObject(tm.APIVersion, tm.Kind)
	if err != nil {
		return nil, err
	}
	if err := decodeStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// cluster is every object of the manifests in deploy/kubernetes, by kind and name.
type cluster map[string]metav1.Object

func key(kind, name string) string { return kind + "/" + name }

func kindOf(obj metav1.Object) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
}

// manifestFiles are the YAML files of deploy/kubernetes but the kustomization.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(kubernetesDir, "*.yaml"))
	require.NoError(t, err)
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "kustomization.yaml" })
	require.NotEmpty(t, files)
	return files
}

func loadCluster(t *testing.T) cluster {
	t.Helper()
	c := cluster{}
	for _, file := range manifestFiles(t) {
		for i, doc := range yamlDocuments(t, file) {
			obj, err := decodeManifest(doc)
			require.NoError(t, err, "%s, document %d", file, i+1)
			k := key(kindOf(obj), obj.GetName())
			require.NotContains(t, c, k, "%s: %s is declared twice", file, k)
			c[k] = obj
		}
	}
	return c
}

func TestEveryManifestDecodesStrictlyIntoItsKubernetesType(t *testing.T) {
	for _, file := range manifestFiles(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			docs := yamlDocuments(t, file)
			require.NotEmpty(t, docs)
			for i, doc := range docs {
				obj, err := decodeManifest(doc)
				require.NoError(t, err, "document %d", i+1)
				if _, clusterScoped := obj.(*corev1.Namespace); !clusterScoped {
					assert.Equal(t, namespace, obj.GetNamespace(), "%s %s is in the namespace %s", kindOf(obj), obj.GetName(), namespace)
				}
			}
		})
	}
}

// The decoding must be strict for the test above to mean anything.
func TestAManifestWithAnUnknownOrMistypedFieldIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, doc, wantErr string
	}{
		{"a misspelled field", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  clusterIp: None\n", `unknown field "spec.clusterIp"`},
		{"a probe type Kubernetes lacks", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          livenessProbe: {tcp: {port: 1}}\n", `unknown field "spec.template.spec.containers[0].livenessProbe.tcp"`},
		{"a field written twice", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\ndata: {c: d}\n", `"data" already set`},
		{"a number where a string goes", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: 1}\n", "cannot unmarshal number"},
		{"a kind these manifests do not use", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "not a type these manifests use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeManifest([]byte(tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

// collectorWorkload is a workload of deploy/kubernetes that runs one of our
// collectors.
type collectorWorkload struct {
	kind, name, container string
	dist                  distribution
	initContainer         bool // a native sidecar
}

var collectorWorkloads = []collectorWorkload{
	{kind: "Deployment", name: "prime-gateway", container: "otelcol-prime", dist: gatewayDist},
	{kind: "DaemonSet", name: "prime-agent", container: "otelcol-prime-agent", dist: agentDist},
	{kind: "Job", name: "trainer", container: "otelcol-prime", dist: gatewayDist, initContainer: true},
}

func podTemplate(t *testing.T, obj metav1.Object) *corev1.PodTemplateSpec {
	t.Helper()
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *batchv1.Job:
		return &o.Spec.Template
	}
	t.Fatalf("%T has no pod template", obj)
	return nil
}

func (c cluster) get(t *testing.T, kind, name string) metav1.Object {
	t.Helper()
	obj, ok := c[key(kind, name)]
	require.True(t, ok, "deploy/kubernetes declares %s %s", kind, name)
	return obj
}

func findContainer(t *testing.T, spec *corev1.PodSpec, name string, init bool) *corev1.Container {
	t.Helper()
	list := spec.Containers
	if init {
		list = spec.InitContainers
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	t.Fatalf("no container %q (init: %v)", name, init)
	return nil
}

// containerEnv is the container's env as the collector would see it:
// literal values as written, values from elsewhere as placeholders.
func containerEnv(env []corev1.EnvVar) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = expandEnvRefs(e.Value, out)
		case e.ValueFrom.SecretKeyRef != nil:
			out[e.Name] = "placeholder-" + e.ValueFrom.SecretKeyRef.Key
		case e.ValueFrom.FieldRef != nil:
			out[e.Name] = "10.0.0.7"
		default:
			out[e.Name] = "placeholder"
		}
	}
	return out
}

// expandEnvRefs replaces $(NAME) with the value of a variable declared
// before it, as the kubelet does; other references stay as they are.
func expandEnvRefs(v string, declared map[string]string) string {
	for name, val := range declared {
		v = strings.ReplaceAll(v, "$("+name+")", val)
	}
	return v
}

// portNumber resolves a probe's or Service's port (a number or a container
// port's name) against the container's ports.
func portNumber(t *testing.T, p intstr.IntOrString, ports []corev1.ContainerPort) int {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntValue()
	}
	for _, cp := range ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort)
		}
	}
	t.Fatalf("no container port named %q", p.StrVal)
	return 0
}

// configFromMount finds the ConfigMap key behind a file path in the
// container: the mount whose directory holds it, that volume's ConfigMap,
// and the key projected to the file's name.
func configFromMount(t *testing.T, c cluster, spec *corev1.PodSpec, ctr *corev1.Container, file string) string {
	t.Helper()
	var mount *corev1.VolumeMount
	for i := range ctr.VolumeMounts {
		if ctr.VolumeMounts[i].MountPath == path.Dir(file) {
			mount = &ctr.VolumeMounts[i]
		}
	}
	require.NotNil(t, mount, "a volume is mounted at %s, the directory of --config=%s", path.Dir(file), file)
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == mount.Name {
			vol = &spec.Volumes[i]
		}
	}
	require.NotNil(t, vol, "the pod declares the volume %q its container mounts", mount.Name)
	require.NotNil(t, vol.ConfigMap, "the volume %q at %s is a ConfigMap", vol.Name, mount.MountPath)
	cm := c.get(t, "ConfigMap", vol.ConfigMap.Name).(*corev1.ConfigMap)
	cmKey := path.Base(file)
	for _, item := range vol.ConfigMap.Items {
		if item.Path == path.Base(file) {
			cmKey = item.Key
		}
	}
	text, ok := cm.Data[cmKey]
	require.True(t, ok, "ConfigMap %s has the key %q that becomes %s", cm.Name, cmKey, file)
	return text
}

// configArg is the path in the container's --config= argument.
func configArg(t *testing.T, ctr *corev1.Container) string {
	t.Helper()
	var files []string
	for _, a := range slices.Concat(ctr.Command, ctr.Args) {
		if f, ok := strings.CutPrefix(a, "--config="); ok {
			files = append(files, f)
		}
	}
	require.Len(t, files, 1, "the container has one --config= argument")
	return files[0]
}

// checkSecretRefs: a reference that must resolve names a Secret shipped
// here (secret.example.yaml) and one of its keys; an optional one, when it
// names a shipped Secret, one of its keys.
func checkSecretRefs(t *testing.T, c cluster, env []corev1.EnvVar) {
	t.Helper()
	for _, e := range env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		obj, shipped := c[key("Secret", ref.Name)]
		if !shipped {
			assert.True(t, optional, "env %s: the Secret %q is neither shipped nor optional", e.Name, ref.Name)
			continue
		}
		s := obj.(*corev1.Secret)
		_, inData := s.Data[ref.Key]
		_, inString := s.StringData[ref.Key]
		assert.True(t, inData || inString, "env %s: Secret %s has no key %q", e.Name, ref.Name, ref.Key)
	}
}

func TestTheCollectorWorkloadsFitTheirImageConfigProbesAndSecrets(t *testing.T) {
	c := loadCluster(t)
	images := scriptImages(t)
	for _, w := range collectorWorkloads {
		t.Run(w.kind+"/"+w.name, func(t *testing.T) {
			spec := &podTemplate(t, c.get(t, w.kind, w.name)).Spec
			ctr := findContainer(t, spec, w.container, w.initContainer)
			if w.initContainer {
				require.NotNil(t, ctr.RestartPolicy, "a native sidecar is an init container with restartPolicy: Always")
				assert.Equal(t, corev1.ContainerRestartPolicyAlways, *ctr.RestartPolicy)
			}
			assert.Equal(t, images[w.dist.imageVar], ctr.Image, "the image is scripts/image.sh's %s", w.dist.imageVar)
			assert.Empty(t, ctr.Command, "the image's entrypoint (%s) runs", w.dist.binary)

			file := configArg(t, ctr)
			assert.Equal(t, w.dist.configPath, file, "the config is where the image looks for it")
			text := configFromMount(t, c, spec, ctr, file)
			cfg := parseCollectorConfig(t, text, w.name)
			env := containerEnv(ctr.Env)
			for _, name := range requiredEnv(text) {
				assert.Contains(t, env, name, "the config reads ${env:%s} with no default: the container sets it", name)
			}

			endpoint, statusPath := cfg.healthEndpoint(t)
			healthPort := portOf(t, resolveEnv(endpoint, env))
			require.NotNil(t, ctr.ReadinessProbe, "readiness probe")
			require.NotNil(t, ctr.ReadinessProbe.HTTPGet, "readiness is GET %s", statusPath)
			assert.Equal(t, statusPath, ctr.ReadinessProbe.HTTPGet.Path)
			assert.Equal(t, healthPort, portNumber(t, ctr.ReadinessProbe.HTTPGet.Port, ctr.Ports), "readiness asks the health check's port")
			require.NotNil(t, ctr.LivenessProbe, "liveness probe")
			require.NotNil(t, ctr.LivenessProbe.TCPSocket, "liveness only opens the port: a permanent error must not restart the pod")
			assert.Equal(t, healthPort, portNumber(t, ctr.LivenessProbe.TCPSocket.Port, ctr.Ports), "liveness opens the health check's port")
			if p := ctr.StartupProbe; p != nil && p.HTTPGet != nil {
				assert.Equal(t, healthPort, portNumber(t, p.HTTPGet.Port, ctr.Ports), "the startup probe asks the health check's port")
			}
			assert.Equal(t, healthPort, portNumber(t, intstr.FromString("health"), ctr.Ports), "the container port named health is the health check's")
			assert.Equal(t, atoi(t, resolveEnv(cfg.metricsPort(t), env)), portNumber(t, intstr.FromString("metrics"), ctr.Ports),
				"the container port named metrics is the collector's own metrics")

			checkSecretRefs(t, c, ctr.Env)
			if w.dist == gatewayDist {
				require.Contains(t, env, "PRIME_API_KEY")
				ref := slices.IndexFunc(ctr.Env, func(e corev1.EnvVar) bool { return e.Name == "PRIME_API_KEY" })
				sk := ctr.Env[ref].ValueFrom.SecretKeyRef
				require.NotNil(t, sk, "PRIME_API_KEY comes from a Secret")
				assert.Equal(t, []string{apiKeySecret, apiKeyKey}, []string{sk.Name, sk.Key})
			}

			// The root filesystem is read-only: file_storage writes into a mounted volume.
			if ctr.SecurityContext != nil && ctr.SecurityContext.ReadOnlyRootFilesystem != nil && *ctr.SecurityContext.ReadOnlyRootFilesystem {
				for _, dir := range cfg.storageDirs() {
					dir = resolveEnv(dir, env)
					assert.True(t, slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool {
						return !m.ReadOnly && under(dir, m.MountPath)
					}), "file_storage's directory %s is on a writable volume", dir)
				}
			}

			limit := ctr.Resources.Limits.Memory()
			require.False(t, limit.IsZero(), "the container has a memory limit")
			gml, ok := env["GOMEMLIMIT"]
			require.True(t, ok, "GOMEMLIMIT is set")
			ratio := float64(goMemLimit(t, gml)) / float64(limit.Value())
			assert.InDelta(t, 0.8, ratio, 0.05, "GOMEMLIMIT=%s is about 80 %% of limits.memory %s", gml, limit)
		})
	}
}

// selects returns the workloads whose pods the selector picks.
func (c cluster) selects(t *testing.T, selector map[string]string) []metav1.Object {
	t.Helper()
	var out []metav1.Object
	for _, obj := range c {
		switch obj.(type) {
		case *appsv1.Deployment, *appsv1.DaemonSet, *appsv1.StatefulSet, *batchv1.Job:
			if len(selector) > 0 && labels.SelectorFromSet(selector).Matches(labels.Set(podTemplate(t, obj).Labels)) {
				out = append(out, obj)
			}
		}
	}
	return out
}

func TestEveryServiceSelectsOneWorkloadAndItsNamedPorts(t *testing.T) {
	c := loadCluster(t)
	for k, obj := range c {
		svc, ok := obj.(*corev1.Service)
		if !ok {
			continue
		}
		t.Run(k, func(t *testing.T) {
			targets := c.selects(t, svc.Spec.Selector)
			require.Len(t, targets, 1, "the Service selects the pods of one workload")
			spec := podTemplate(t, targets[0]).Spec
			for _, p := range svc.Spec.Ports {
				found := slices.ContainsFunc(spec.Containers, func(ctr corev1.Container) bool {
					return slices.ContainsFunc(ctr.Ports, func(cp corev1.ContainerPort) bool {
						return (p.TargetPort.Type == intstr.String && cp.Name == p.TargetPort.StrVal) ||
							(p.TargetPort.Type == intstr.Int && cp.ContainerPort == p.TargetPort.IntVal)
					})
				})
				assert.True(t, found, "port %s: target %s is a port of %s", p.Name, p.TargetPort.String(), targets[0].GetName())
			}
		})
	}
}

// The agents find the gateways by resolving the headless Service; the
// gateways find Redis by its Service.
func TestTheAgentsResolveTheGatewaysHeadlessServiceAndTheGatewaysReachRedis(t *testing.T) {
	c := loadCluster(t)
	agent := podTemplate(t, c.get(t, "DaemonSet", "prime-agent")).Spec
	ctr := findContainer(t, &agent, "otelcol-prime-agent", false)
	cfg := parseCollectorConfig(t, configFromMount(t, c, &agent, ctr, configArg(t, ctr)), "prime-agent")

	hostname := cfg.str(t, "exporters", "load_balancing", "resolver", "dns", "hostname")
	port := atoi(t, cfg.str(t, "exporters", "load_balancing", "resolver", "dns", "port"))
	svc := c.get(t, "Service", hostname).(*corev1.Service)
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "the agents resolve a headless Service: one address per ready gateway")
	targets := c.selects(t, svc.Spec.Selector)
	require.Len(t, targets, 1)
	assert.Equal(t, "prime-gateway", targets[0].GetName(), "the headless Service selects the gateways")
	assert.True(t, slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return int(p.Port) == port }),
		"the headless Service has the port the agents dial (%d)", port)
	gw := podTemplate(t, targets[0]).Spec
	gwCtr := findContainer(t, &gw, "otelcol-prime", false)
	gwCfg := parseCollectorConfig(t, configFromMount(t, c, &gw, gwCtr, configArg(t, gwCtr)), "prime-gateway")
	gwEnv := containerEnv(gwCtr.Env)
	assert.Equal(t, port, portOf(t, resolveEnv(gwCfg.str(t, "receivers", "otlp", "protocols", "grpc", "endpoint"), gwEnv)),
		"the gateways' OTLP/gRPC receiver listens where the agents dial")

	redis := resolveEnv(gwCfg.str(t, "exporters", "prime", "shared_registry", "redis", "endpoint"), gwEnv)
	host, redisPort, _ := strings.Cut(redis, ":")
	rsvc := c.get(t, "Service", host).(*corev1.Service)
	assert.True(t, slices.ContainsFunc(rsvc.Spec.Ports, func(p corev1.ServicePort) bool { return fmt.Sprint(p.Port) == redisPort }),
		"the Redis Service has the port the gateways dial (%s)", redisPort)
	pdb := c.get(t, "PodDisruptionBudget", "prime-gateway").(*policyv1.PodDisruptionBudget)
	assert.True(t, labels.SelectorFromSet(pdb.Spec.Selector.MatchLabels).Matches(labels.Set(podTemplate(t, targets[0]).Labels)),
		"the PodDisruptionBudget covers the gateways")
}

func TestRedisPersistsItsAppendOnlyFileOnTheVolumeClaim(t *testing.T) {
	c := loadCluster(t)
	sts := c.get(t, "StatefulSet", "prime-redis").(*appsv1.StatefulSet)
	c.get(t, "Service", sts.Spec.ServiceName)
	ctr := findContainer(t, &sts.Spec.Template.Spec, "redis", false)
	args := strings.Join(ctr.Args, " ")
	assert.Contains(t, args, "--appendonly yes")
	assert.Contains(t, args, "--maxmemory-policy noeviction", "the registry is never evicted")
	dir := ctr.Args[slices.Index(ctr.Args, "--dir")+1]
	require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
	claim := sts.Spec.VolumeClaimTemplates[0].Name
	assert.True(t, slices.ContainsFunc(ctr.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == claim && m.MountPath == dir }),
		"the volume claim %q is mounted at Redis's --dir %s", claim, dir)
}

// kustomization is the part of kustomize's Kustomization these files use.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
}

func TestTheKustomizationTiesTheTwoTiersAndRedisInOneNamespace(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(kubernetesDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k kustomization
	require.NoError(t, decodeStrict(body, &k))
	assert.Equal(t, "kustomize.config.k8s.io/v1beta1", k.APIVersion)
	assert.Equal(t, "Kustomization", k.Kind)
	assert.Equal(t, namespace, k.Namespace)

	kinds := map[string]bool{}
	for _, r := range k.Resources {
		file := filepath.Join(kubernetesDir, r)
		require.FileExists(t, file, "a resource of kustomization.yaml")
		for _, doc := range yamlDocuments(t, file) {
			obj, err := decodeManifest(doc)
			require.NoError(t, err, file)
			kinds[key(kindOf(obj), obj.GetName())] = true
		}
	}
	for _, want := range []string{"Namespace/" + namespace, "Deployment/prime-gateway", "Service/prime-gateway-headless",
		"StatefulSet/prime-redis", "Service/prime-redis", "DaemonSet/prime-agent",
		"NetworkPolicy/prime-gateway", "NetworkPolicy/prime-agent", "NetworkPolicy/prime-redis"} {
		assert.True(t, kinds[want], "kustomization.yaml brings %s", want)
	}
	for k := range kinds {
		assert.False(t, strings.HasPrefix(k, "Secret/"), "%s: keys, tokens, passwords and certificates are created out of band, never applied from the repository", k)
	}
}

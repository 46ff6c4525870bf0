package deploy

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const operatorFile = "operator/sidecar.yaml"

// openTelemetryCollector is the part of the Operator's v1beta1
// OpenTelemetryCollector (apis/v1beta1: OpenTelemetryCollectorSpec with its
// inlined OpenTelemetryCommonFields) this repository uses; decoding it
// strictly refuses any other field.
type openTelemetryCollector struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		Mode            string                      `json:"mode"`
		Image           string                      `json:"image"`
		UpgradeStrategy string                      `json:"upgradeStrategy"`
		Env             []corev1.EnvVar             `json:"env"`
		Resources       corev1.ResourceRequirements `json:"resources"`
		SecurityContext *corev1.SecurityContext     `json:"securityContext"`
		Volumes         []corev1.Volume             `json:"volumes"`
		VolumeMounts    []corev1.VolumeMount        `json:"volumeMounts"`
		Config          map[string]any              `json:"config"`
	} `json:"spec"`
}

const injectAnnotation = "sidecar.opentelemetry.io/inject"

// operatorSidecar decodes operator/sidecar.yaml: the collector resource,
// the Job it is injected into and the NetworkPolicy of the Job's pods.
func operatorSidecar(t *testing.T) (*openTelemetryCollector, *batchv1.Job) {
	t.Helper()
	col, job, _ := operatorFileObjects(t)
	return col, job
}

func operatorFileObjects(t *testing.T) (*openTelemetryCollector, *batchv1.Job, *networkingv1.NetworkPolicy) {
	t.Helper()
	docs := yamlDocuments(t, operatorFile)
	require.Len(t, docs, 3, "%s: the OpenTelemetryCollector, a Job and its NetworkPolicy", operatorFile)
	var col openTelemetryCollector
	require.NoError(t, decodeStrict(docs[0], &col), "the OpenTelemetryCollector")
	var job batchv1.Job
	require.NoError(t, decodeStrict(docs[1], &job), "the Job")
	var policy networkingv1.NetworkPolicy
	require.NoError(t, decodeStrict(docs[2], &policy), "the NetworkPolicy")
	return &col, &job, &policy
}

func operatorConfig(t *testing.T, col *openTelemetryCollector) (string, collectorConfig) {
	t.Helper()
	body, err := yaml.Marshal(col.Spec.Config)
	require.NoError(t, err)
	return string(body), parseCollectorConfig(t, string(body), "spec.config")
}

func TestTheOperatorInjectsTheSidecarIntoTheAnnotatedJob(t *testing.T) {
	col, job := operatorSidecar(t)
	assert.Equal(t, "opentelemetry.io/v1beta1", col.APIVersion)
	assert.Equal(t, "OpenTelemetryCollector", col.Kind)
	assert.Equal(t, "sidecar", col.Spec.Mode)
	assert.Equal(t, "none", col.Spec.UpgradeStrategy, "the Operator does not rewrite another distribution's config")
	assert.Equal(t, col.Metadata.Name, job.Spec.Template.Annotations[injectAnnotation], "the Job's pods name the collector to inject")
	assert.Equal(t, col.Metadata.Namespace, job.Namespace, "the Operator injects collectors of the pod's namespace")
	assert.Equal(t, scriptImages(t)[gatewayDist.imageVar], col.Spec.Image)
}

func TestTheOperatorSidecarsConfigFindsItsEnvSecretAndVolumes(t *testing.T) {
	col, _ := operatorSidecar(t)
	text, cfg := operatorConfig(t, col)
	env := containerEnv(col.Spec.Env)
	for _, name := range requiredEnv(text) {
		assert.Contains(t, env, name, "the config reads ${env:%s} with no default: spec.env sets it", name)
	}
	i := slices.IndexFunc(col.Spec.Env, func(e corev1.EnvVar) bool { return e.Name == "PRIME_API_KEY" })
	require.GreaterOrEqual(t, i, 0)
	ref := col.Spec.Env[i].ValueFrom.SecretKeyRef
	require.NotNil(t, ref)
	assert.Equal(t, []string{apiKeySecret, apiKeyKey}, []string{ref.Name, ref.Key})
	endpoint, _ := cfg.healthEndpoint(t)
	assert.Equal(t, 13133, portOf(t, resolveEnv(endpoint, env)))

	for _, m := range col.Spec.VolumeMounts {
		assert.True(t, slices.ContainsFunc(col.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }),
			"the mount %q has its volume in spec.volumes", m.Name)
	}
	require.NotNil(t, col.Spec.SecurityContext)
	require.True(t, *col.Spec.SecurityContext.ReadOnlyRootFilesystem)
	for _, dir := range cfg.storageDirs() {
		dir = resolveEnv(dir, env)
		assert.True(t, slices.ContainsFunc(col.Spec.VolumeMounts, func(m corev1.VolumeMount) bool { return !m.ReadOnly && under(dir, m.MountPath) }),
			"file_storage's directory %s is on a writable volume", dir)
	}
}

// The sidecar's health and metrics listen on the pod IP: the Job's pods are
// selected by the NetworkPolicy shipped with them, which admits the
// monitoring namespace to metrics and nobody to health.
func TestTheOperatorSidecarsPodsAreBehindTheirNetworkPolicy(t *testing.T) {
	col, job, policy := operatorFileObjects(t)
	assert.Equal(t, job.Namespace, policy.Namespace)
	policies := []*networkingv1.NetworkPolicy{policy}
	pod := job.Spec.Template.Labels
	require.NotEmpty(t, selectingPolicies(t, policies, job.Namespace, pod), "the NetworkPolicy selects the Job's pods")
	_, cfg := operatorConfig(t, col)
	env := containerEnv(col.Spec.Env)
	metrics := atoi(t, resolveEnv(cfg.metricsPort(t), env))
	health, _ := cfg.healthEndpoint(t)
	assert.True(t, admittedFrom(t, policies, job.Namespace, pod, metrics, "monitoring", monitoringNS, unlabelledPod), "monitoring scrapes the metrics")
	assert.False(t, admittedFrom(t, policies, job.Namespace, pod, portOf(t, resolveEnv(health, env)), namespace, telemetryNSLabel, unlabelledPod), "no pod reaches health")
}

package deploy

import (
	"encoding/json"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// fileEnvs are the env vars that name a credential file the collector reads:
// certificates, keys and tokens (docs/security.md). Each must be a file of a
// Secret volume the container mounts.
var fileEnvs = []string{"PRIME_TLS_CERT_FILE", "PRIME_TLS_KEY_FILE", "PRIME_INGEST_TOKEN_FILE", "PRIME_GATEWAY_CA_FILE", "PRIME_GATEWAY_TOKEN_FILE"}

// secretFile is the Secret and key behind a path in the container, or ok
// false when no Secret volume projects that file.
func secretFile(volumes []corev1.Volume, mounts []corev1.VolumeMount, file string) (secret, key string, ok bool) {
	for _, m := range mounts {
		if path.Dir(file) != path.Clean(m.MountPath) {
			continue
		}
		for _, v := range volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			for _, item := range v.Secret.Items {
				if item.Path == path.Base(file) {
					return v.Secret.SecretName, item.Key, m.ReadOnly
				}
			}
			if len(v.Secret.Items) == 0 {
				return v.Secret.SecretName, path.Base(file), m.ReadOnly
			}
		}
	}
	return "", "", false
}

// checkSecretFiles: each credential file the config reads (through
// fileEnvs) is a key of a shipped Secret, mounted read-only; a Secret volume
// names a shipped Secret and its keys.
func checkSecretFiles(t *testing.T, c cluster, text string, env []corev1.EnvVar, volumes []corev1.Volume, mounts []corev1.VolumeMount) {
	t.Helper()
	values := containerEnv(env)
	for _, name := range fileEnvs {
		if !strings.Contains(text, "${env:"+name) {
			continue
		}
		file, ok := values[name]
		require.True(t, ok, "the config reads %s: the container sets it", name)
		secret, key, ok := secretFile(volumes, mounts, file)
		if assert.True(t, ok, "%s=%s is a file of a Secret volume mounted read-only", name, file) {
			assertShippedSecretKey(t, c, secret, key)
		}
	}
	for _, v := range volumes {
		if v.Secret == nil {
			continue
		}
		for _, item := range v.Secret.Items {
			assertShippedSecretKey(t, c, v.Secret.SecretName, item.Key)
		}
		if v.Secret.DefaultMode != nil {
			assert.Zero(t, *v.Secret.DefaultMode&0o007, "the Secret volume %q is not world-readable", v.Name)
		}
	}
}

func assertShippedSecretKey(t *testing.T, c cluster, name, k string) {
	t.Helper()
	obj, ok := c[key("Secret", name)]
	if !assert.True(t, ok, "the Secret %s is in secret.example.yaml", name) {
		return
	}
	s := obj.(*corev1.Secret)
	_, inData := s.Data[k]
	_, inString := s.StringData[k]
	assert.True(t, inData || inString, "the Secret %s has the key %q", name, k)
}

func TestEveryCredentialFileIsAShippedSecretMountedReadOnly(t *testing.T) {
	c := loadCluster(t)
	for _, w := range collectorWorkloads {
		t.Run("kubernetes: "+w.kind+"/"+w.name, func(t *testing.T) {
			spec := &podTemplate(t, c.get(t, w.kind, w.name)).Spec
			ctr := findContainer(t, spec, w.container, w.initContainer)
			text := configFromMount(t, c, spec, ctr, configArg(t, ctr))
			checkSecretFiles(t, c, text, ctr.Env, spec.Volumes, ctr.VolumeMounts)
		})
	}
	for _, r := range helmReleases {
		t.Run("helm: "+path.Base(r.file), func(t *testing.T) {
			values := releaseValues(t, r)
			text, _ := releaseConfig(t, values)
			extra, _ := releaseEnv(t, values)
			var volumes []corev1.Volume
			var mounts []corev1.VolumeMount
			for k, into := range map[string]any{"extraVolumes": &volumes, "extraVolumeMounts": &mounts} {
				body, err := json.Marshal(values[k])
				require.NoError(t, err)
				require.NoError(t, decodeStrict(body, into), k)
			}
			checkSecretFiles(t, c, text, extra, volumes, mounts)
		})
	}
}

// A file env pointing anywhere but a Secret's file must fail the check.
func TestACredentialFileOutsideASecretVolumeIsFound(t *testing.T) {
	volumes := []corev1.Volume{{Name: "tok", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s",
		Items: []corev1.KeyToPath{{Key: "token", Path: "token"}}}}}, {Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
	mounts := []corev1.VolumeMount{{Name: "tok", MountPath: "/run/tok", ReadOnly: true}, {Name: "cfg", MountPath: "/etc/cfg", ReadOnly: true}}
	for _, tc := range []struct {
		file   string
		wantOK bool
	}{
		{"/run/tok/token", true},
		{"/run/tok/other", false},
		{"/etc/cfg/token", false},
		{"/nowhere/token", false},
	} {
		_, _, ok := secretFile(volumes, mounts, tc.file)
		assert.Equal(t, tc.wantOK, ok, tc.file)
	}
	writable := slices.Clone(mounts)
	writable[0].ReadOnly = false
	_, _, ok := secretFile(volumes, writable, "/run/tok/token")
	assert.False(t, ok, "a Secret mounted writable does not count")
}

// Redis asks for the password of the Secret prime-redis, and the gateways
// present that same password.
func TestRedisRequiresThePasswordTheGatewaysPresent(t *testing.T) {
	c := loadCluster(t)
	sts := c.get(t, "StatefulSet", "prime-redis")
	redis := findContainer(t, &podTemplate(t, sts).Spec, "redis", false)
	i := slices.Index(redis.Args, "--requirepass")
	require.GreaterOrEqual(t, i, 0, "redis-server runs with --requirepass")
	require.Less(t, i+1, len(redis.Args))
	ref := strings.TrimSuffix(strings.TrimPrefix(redis.Args[i+1], "$("), ")")
	require.NotEqual(t, redis.Args[i+1], ref, "the password is $(VAR), expanded from the env, never written in the manifest")
	secretOf := func(env []corev1.EnvVar, name string) *corev1.SecretKeySelector {
		j := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
		require.GreaterOrEqual(t, j, 0, "env %s", name)
		require.NotNil(t, env[j].ValueFrom, "env %s comes from a Secret", name)
		require.NotNil(t, env[j].ValueFrom.SecretKeyRef, "env %s comes from a Secret", name)
		return env[j].ValueFrom.SecretKeyRef
	}
	server := secretOf(redis.Env, ref)
	assert.Nil(t, server.Optional, "Redis does not start without its password")
	assert.Equal(t, *server, *secretOf(redis.Env, "REDISCLI_AUTH"), "the readiness probe's redis-cli authenticates with it")

	gw := podTemplate(t, c.get(t, "Deployment", "prime-gateway")).Spec
	gwCtr := findContainer(t, &gw, "otelcol-prime", false)
	client := secretOf(gwCtr.Env, "REDIS_PASSWORD")
	assert.Equal(t, []string{server.Name, server.Key}, []string{client.Name, client.Key}, "the gateways present Redis's password")
	assert.Nil(t, client.Optional, "a gateway without the password would not reach Redis: it does not start")
	cfg := parseCollectorConfig(t, configFromMount(t, c, &gw, gwCtr, configArg(t, gwCtr)), "prime-gateway")
	assert.Contains(t, cfg.str(t, "exporters", "prime", "shared_registry", "redis", "password"), "${env:REDIS_PASSWORD")
	assertShippedSecretKey(t, c, server.Name, server.Key)
}

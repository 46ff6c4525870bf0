// Package deploy holds the tests of the deployable shapes under deploy/: the
// plain Kubernetes manifests (kubernetes/), the upstream Helm chart's values
// (helm/) and the OpenTelemetry Operator's sidecar (operator/). Its own
// module keeps k8s.io out of the component's go.mod.
//
// There is no cluster in CI: the manifests are decoded strictly into the
// k8s.io/api types (an unknown or misspelled field fails), the pieces are
// checked against each other (probes against the health check's port,
// mounts against config paths, Secret and Service names against their
// references, images against scripts/image.sh), and every embedded
// collector config goes through the built collector's `validate`
// (PRIME_OTELCOL, PRIME_AGENT: the binaries' paths, required).
package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// distribution is what the image contract (issue 20) fixes for one of the
// two collector distributions.
type distribution struct {
	imageVar   string // its line in scripts/image.sh
	binary     string // the image's entrypoint
	configPath string // the config file the image starts with
	binaryEnv  string // the env var that names the built binary for validate
	build      string // how to build it
}

var (
	gatewayDist = distribution{
		imageVar:   "GATEWAY_IMAGE",
		binary:     "/otelcol-prime",
		configPath: "/etc/otelcol-prime/config.yaml",
		binaryEnv:  "PRIME_OTELCOL",
		build:      "bash -c 'source scripts/lib.sh; build_collector' builds _build/otelcol-prime/otelcol-prime",
	}
	agentDist = distribution{
		imageVar:   "AGENT_IMAGE",
		binary:     "/otelcol-prime-agent",
		configPath: "/etc/otelcol-prime-agent/config.yaml",
		binaryEnv:  "PRIME_AGENT",
		build:      "bash -c 'source scripts/agent.sh; build_agent' builds _build/agent/otelcol-prime-agent/otelcol-prime-agent",
	}
)

// The Secret every collector that talks to the platform reads its key from.
const (
	apiKeySecret = "prime-api-key"
	apiKeyKey    = "api-key"
	namespace    = "prime-telemetry"
)

// imageLine is the shape of the image names' lines in scripts/image.sh:
// GATEWAY_IMAGE="${GATEWAY_IMAGE:-ghcr.io/primeintellect/otelcol-prime:0.1.0}".
var imageLine = regexp.MustCompile(`^([A-Z_]+_IMAGE)="\$\{([A-Z_]+_IMAGE):-([^}"]+)\}"$`)

// scriptImages reads the default image names from scripts/image.sh.
func scriptImages(t *testing.T) map[string]string {
	t.Helper()
	body, err := os.ReadFile("../scripts/image.sh")
	require.NoError(t, err, "scripts/image.sh defines the images the manifests must use (GATEWAY_IMAGE=, AGENT_IMAGE= lines)")
	images := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if m := imageLine.FindStringSubmatch(strings.TrimSpace(sc.Text())); m != nil && m[1] == m[2] {
			images[m[1]] = m[3]
		}
	}
	for _, v := range []string{gatewayDist.imageVar, agentDist.imageVar} {
		require.NotEmpty(t, images[v], `scripts/image.sh has no line %s="${%s:-<image>}"`, v, v)
	}
	return images
}

// yamlDocuments splits a multi-document YAML file, dropping empty documents.
func yamlDocuments(t *testing.T, file string) [][]byte {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	return splitDocuments(t, f, file)
}

func splitDocuments(t *testing.T, r io.Reader, name string) [][]byte {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err, name)
		var probe map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &probe), name)
		if len(probe) > 0 {
			docs = append(docs, doc)
		}
	}
}

// decodeStrict decodes YAML into v as the API server decodes a request:
// YAML to JSON, then JSON with field names matched case-sensitively, and
// unknown or duplicate fields, and values of the wrong type, refused.
func decodeStrict(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strictErrs, err := sigsjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// collectorConfig is a collector config as a map, with the lookups the
// checks need.
type collectorConfig map[string]any

func parseCollectorConfig(t *testing.T, text, where string) collectorConfig {
	t.Helper()
	var cfg collectorConfig
	require.NoError(t, yaml.Unmarshal([]byte(text), &cfg), "%s: the collector config", where)
	require.NotEmpty(t, cfg, "%s: the collector config is empty", where)
	return cfg
}

// get walks keys through nested maps; ok is false when one is missing.
func (c collectorConfig) get(keys ...string) (any, bool) {
	var cur any = map[string]any(c)
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func (c collectorConfig) str(t *testing.T, keys ...string) string {
	t.Helper()
	v, ok := c.get(keys...)
	require.True(t, ok, "the collector config has no %s", strings.Join(keys, "::"))
	return fmt.Sprint(v)
}

// healthEndpoint is the healthcheckv2 extension's HTTP endpoint and status path.
func (c collectorConfig) healthEndpoint(t *testing.T) (endpoint, statusPath string) {
	t.Helper()
	endpoint = c.str(t, "extensions", "healthcheckv2", "http", "endpoint")
	require.Equal(t, "true", c.str(t, "extensions", "healthcheckv2", "use_v2"), "healthcheckv2 runs its v2 service (use_v2: true)")
	require.Equal(t, "true", c.str(t, "extensions", "healthcheckv2", "component_health", "include_permanent_errors"),
		"readiness fails on a permanent error (component_health::include_permanent_errors: true)")
	statusPath = "/status"
	if p, ok := c.get("extensions", "healthcheckv2", "http", "status", "path"); ok {
		statusPath = fmt.Sprint(p)
	}
	exts, _ := c.get("service", "extensions")
	require.Contains(t, exts, "healthcheckv2", "service::extensions runs healthcheckv2")
	return endpoint, statusPath
}

// metricsPort is the port of the collector's own Prometheus metrics.
func (c collectorConfig) metricsPort(t *testing.T) string {
	t.Helper()
	readers, ok := c.get("service", "telemetry", "metrics", "readers")
	require.True(t, ok, "the collector config has service::telemetry::metrics::readers")
	list, _ := readers.([]any)
	require.Len(t, list, 1, "one metrics reader")
	reader := collectorConfig(list[0].(map[string]any))
	return reader.str(t, "pull", "exporter", "prometheus", "port")
}

// storageDirs are file_storage's directories (its own and compaction's)
// when the config has file_storage.
func (c collectorConfig) storageDirs() []string {
	var dirs []string
	if d, ok := c.get("extensions", "file_storage", "directory"); ok {
		dirs = append(dirs, fmt.Sprint(d))
	}
	if d, ok := c.get("extensions", "file_storage", "compaction", "directory"); ok {
		dirs = append(dirs, fmt.Sprint(d))
	}
	return dirs
}

// envRef is ${env:NAME} or ${env:NAME:-default} in a collector config.
var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// resolveEnv expands envRef in s as the collector would with env.
func resolveEnv(s string, env map[string]string) string {
	return envRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := envRef.FindStringSubmatch(ref)
		if v, ok := env[m[1]]; ok && (v != "" || m[2] == "") {
			return v
		}
		return m[3]
	})
}

// requiredEnv lists the variables the config uses with no default.
func requiredEnv(text string) []string {
	var names []string
	for _, m := range envRef.FindAllStringSubmatch(text, -1) {
		if m[2] == "" {
			names = append(names, m[1])
		}
	}
	return names
}

// portOf is the port of a host:port endpoint.
func portOf(t *testing.T, endpoint string) int {
	t.Helper()
	i := strings.LastIndex(endpoint, ":")
	require.Positive(t, i, "%q is host:port", endpoint)
	p, err := strconv.Atoi(endpoint[i+1:])
	require.NoError(t, err, "%q is host:port", endpoint)
	return p
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// under reports whether dir is mountPath or inside it.
func under(dir, mountPath string) bool {
	rel, err := filepath.Rel(path.Clean(mountPath), path.Clean(dir))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// goMemLimit parses GOMEMLIMIT's syntax (a byte count with an optional
// B, KiB, MiB, GiB or TiB suffix).
func goMemLimit(t *testing.T, v string) int64 {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)(B|KiB|MiB|GiB|TiB)?$`).FindStringSubmatch(v)
	require.NotNil(t, m, "GOMEMLIMIT=%q is a byte count with an optional KiB/MiB/GiB/TiB suffix", v)
	n, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	shift := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[m[2]]
	return n << shift
}

// decodeLoose decodes YAML into v, ignoring fields v lacks.
func decodeLoose(doc []byte, v any) error {
	return yaml.Unmarshal(doc, v)
}

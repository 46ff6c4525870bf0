package e2e

import (
	"os"
	"strings"
	"testing"
	"text/template"

	"go.yaml.in/yaml/v3"
)

// configsDir holds the templates the tests' collector configs are rendered
// from: node.yaml.tmpl (a collector beside the trainers) and
// gateway.yaml.tmpl (a gateway behind the shipped agent), sharing the prime
// exporter, its pipelines and the telemetry of prime.tmpl. The shipped
// configs (deploy/…) are run as they are, never through these.
const configsDir = "testdata/configs"

// collectorParams fills a template. A zero field leaves its key out, so the
// exporter's or the collector's default holds; strings go into the YAML as
// they are, so a value may be ${env:…}.
type collectorParams struct {
	// Offline writes runs to ${env:PRIME_OFFLINE_DIR}; otherwise the
	// exporter sends to ${env:PRIME_API_BASE} with ${env:PRIME_API_KEY}.
	Offline bool
	Team    string // team_id
	RunID   string // run::id
	EvalID  string // eval::id
	// Storage puts the run registry and the sending queue on file_storage
	// in ${env:PRIME_STORAGE_DIR}.
	Storage bool
	// SharedRedis is the shared run registry on ${env:REDIS_ENDPOINT}.
	SharedRedis     bool
	FinalizeGrace   string
	FinalizeTimeout string
	StepInterval    string // samples::step_interval
	// Traces sends native documents to Prime Traces at ${env:PRIME_TRACES_URL}.
	Traces        bool
	TracesRouting string
	Retry         *retryParams // retry_on_failure, when set
	Queue         queueParams  // sending_queue
	// Debug adds the debug exporter (verbosity detailed) to the pipelines.
	Debug bool
	// LogsOnly leaves the metrics pipeline out.
	LogsOnly bool

	// The node template's extras.
	Pprof  bool // the pprof extension on ${env:PRIME_PPROF}
	Status bool // the prime_status route on ${env:PRIME_STATUS_ENDPOINT}
	// MemoryLimitMiB puts memory_limiter (checked every 100ms) in both
	// pipelines; 0 leaves it out.
	MemoryLimitMiB, SpikeLimitMiB int
	// PrimeAuth adds the prime_auth extension (checking keys with the
	// platform at ${env:PRIME_API_BASE}) and a second OTLP/HTTP receiver
	// behind it, otlp/auth on ${env:PRIME_OTLP_AUTH_HTTP} with
	// include_metadata, which both pipelines take from as well.
	PrimeAuth bool

	// SelfMetrics serves the collector's own metrics at level normal in the
	// Prometheus text format on ${env:PRIME_METRICS_PORT}, named as the
	// collector names them by default (no unit or type suffix); otherwise
	// the level is none.
	SelfMetrics bool
	// MetricsLevel, with SelfMetrics, is the level in place of normal.
	MetricsLevel string
	// LogsUnsampled keeps every log line (the collector samples them by
	// default).
	LogsUnsampled bool
}

// retryParams is retry_on_failure; "" leaves a key at its default.
type retryParams struct {
	Enabled                                      bool
	InitialInterval, MaxInterval, MaxElapsedTime string
}

// queueParams is sending_queue; "" or 0 leaves a key at its default, and
// FlushTimeout, when set, turns batching on.
type queueParams struct {
	Enabled       bool
	WaitForResult string
	NumConsumers  int
	Size          string
	FlushTimeout  string
}

// ExtensionList is service::extensions of the node template, "" for none;
// file_storage comes first because the exporter's storage needs it started.
func (p collectorParams) ExtensionList() string {
	var names []string
	for _, e := range []struct {
		on   bool
		name string
	}{{p.Storage, "file_storage"}, {p.Pprof, "pprof"}, {p.Status, "prime_status"}, {p.PrimeAuth, "prime_auth"}} {
		if e.on {
			names = append(names, e.name)
		}
	}
	return strings.Join(names, ", ")
}

// collectorConfig renders testdata/configs/<name>.yaml.tmpl with p.
func collectorConfig(t *testing.T, name string, p collectorParams) string {
	t.Helper()
	tpl, err := template.New(name).Option("missingkey=error").ParseFS(os.DirFS(configsDir), "*.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := tpl.ExecuteTemplate(&b, name+".yaml.tmpl", p); err != nil {
		t.Fatalf("rendering %s/%s.yaml.tmpl: %v", configsDir, name, err)
	}
	return b.String()
}

func TestEveryConfigTemplateRendersToYAMLWithBareAndFullParameters(t *testing.T) {
	full := collectorParams{
		Team: "team-e2e", RunID: "${env:RUN_ID:-}", EvalID: "${env:EVAL_ID:-}", Storage: true, SharedRedis: true,
		FinalizeGrace: "2s", FinalizeTimeout: "1m", StepInterval: "2", Traces: true, TracesRouting: "all",
		Retry: &retryParams{Enabled: true, InitialInterval: "1s", MaxInterval: "5s", MaxElapsedTime: "0"},
		Queue: queueParams{Enabled: true, WaitForResult: "true", NumConsumers: 2, Size: "5000", FlushTimeout: "300ms"},
		Debug: true, Pprof: true, Status: true, MemoryLimitMiB: 400, SpikeLimitMiB: 100, PrimeAuth: true,
		SelfMetrics: true, MetricsLevel: "detailed", LogsUnsampled: true,
	}
	for _, name := range []string{"node", "gateway"} {
		for _, p := range []collectorParams{{}, {Offline: true}, full} {
			config := collectorConfig(t, name, p)
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
				t.Fatalf("%s with %+v is not YAML: %v\n%s", name, p, err, config)
			}
			for _, key := range []string{"receivers", "exporters", "service"} {
				if doc[key] == nil {
					t.Fatalf("%s with %+v has no %s:\n%s", name, p, key, config)
				}
			}
			if strings.Contains(config, "<no value>") {
				t.Fatalf("%s with %+v left a value out:\n%s", name, p, config)
			}
		}
	}
}

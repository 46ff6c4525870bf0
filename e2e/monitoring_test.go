package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The operators' rules and dashboard (deploy/monitoring, deploy/README.md)
// must query only metrics the collector really exports, under the names and
// labels it really gives them. This test reads those names from a running
// collector's /metrics, not from a list: the built collector, the fake
// platform and the demo trainer, with the failures the rules alert on
// provoked so that their counters exist, and the open-run gauges read
// while a run is open and after it is closed out.

const monitoringDir = "../deploy/monitoring"

// monitoringConfig is a gateway-shaped config at the telemetry level
// ${env:PRIME_METRICS_LEVEL}: a memory sending queue small enough that an
// outage fills it (its size and capacity gauges, and its failed offers),
// Prime Traces on (its upload counters), and a second OTLP receiver behind
// prime_auth, so that a request without a key is refused and counted
// (otelcol_prime_auth_refused).
func monitoringConfig(t *testing.T) string {
	t.Helper()
	return collectorConfig(t, "node", collectorParams{
		Team: "team-e2e", FinalizeGrace: "1s", StepInterval: "2", Traces: true, TracesRouting: "both",
		Retry:     &retryParams{InitialInterval: "200ms"},
		Queue:     queueParams{Enabled: true, Size: "3", FlushTimeout: "200ms"},
		PrimeAuth: true, SelfMetrics: true, MetricsLevel: "${env:PRIME_METRICS_LEVEL}",
	})
}

// scrapeTargetLabels are the labels Prometheus adds to every scraped series.
var scrapeTargetLabels = []string{"instance", "job"}

// detailedOnly is how a dashboard panel says that its metrics exist only at
// service::telemetry::metrics::level: detailed.
const detailedOnly = "level: detailed"

func TestTheAlertRulesAndTheDashboardQueryOnlyMetricsAndLabelsTheBuiltCollectorExports(t *testing.T) {
	otelcol, trainer := binaries(t)
	rules := readRuleExprs(t)
	panels := readDashboardExprs(t)

	scrapes := map[string]map[string][]string{}
	for _, level := range []string{"normal", "detailed"} {
		scrapes[level] = exportedNames(t, otelcol, trainer, level)
	}
	// The multi-tenant gateway's names (its rejections' tenant label) at
	// the default level, which the shipped gateway uses.
	for name, labels := range multitenantExportedNames(t, otelcol) {
		for _, l := range labels {
			if !slices.Contains(scrapes["normal"][name], l) {
				scrapes["normal"][name] = append(scrapes["normal"][name], l)
			}
		}
	}
	// The rules run on the shipped configs, at the default level.
	for _, r := range rules {
		checkExported(t, "rule "+r.name, r.expr, scrapes["normal"])
	}
	for _, p := range panels {
		if strings.Contains(p.description, detailedOnly) {
			checkExported(t, "panel "+p.title, p.expr, scrapes["detailed"])
			continue
		}
		checkExported(t, "panel "+p.title+" (its description does not say "+detailedOnly+")", p.expr, scrapes["normal"])
	}
	if t.Failed() {
		for _, level := range slices.Sorted(maps.Keys(scrapes)) {
			for _, name := range slices.Sorted(maps.Keys(scrapes[level])) {
				t.Logf("exported at level %s: %s %v", level, name, scrapes[level][name])
			}
		}
	}
}

// checkExported fails unless every metric expr reads is in scrape, and every
// label it names is one of those metrics' labels or a target label.
func checkExported(t *testing.T, what, expr string, scrape map[string][]string) {
	t.Helper()
	names, err := readPromQL(expr)
	if err != nil {
		t.Errorf("%s: cannot read %q: %v", what, expr, err)
		return
	}
	if len(names.metrics) == 0 {
		t.Errorf("%s: %q queries no metric", what, expr)
	}
	known := slices.Clone(scrapeTargetLabels)
	for _, m := range names.metrics {
		labels, ok := scrape[m]
		if !ok {
			t.Errorf("%s: %s is not a metric the collector exports (expr %q)", what, m, expr)
		}
		known = append(known, labels...)
	}
	for _, l := range names.labels {
		if !slices.Contains(known, l) {
			t.Errorf("%s: label %s is on none of %v (expr %q)", what, l, names.metrics, expr)
		}
	}
}

// exportedNames runs the built collector at the telemetry level given, puts
// a demo run and the failures the rules watch through it, and returns every
// metric name of its /metrics with the label names its series carry.
func exportedNames(t *testing.T, otelcol, trainer, level string) map[string][]string {
	t.Helper()
	platform := rfttest.NewServer(rfttest.Options{APIKey: e2eKey, AllowedTeams: []string{"team-e2e"}})
	defer platform.Close()
	// The platform refuses the first post for good (outcome="rejected",
	// reason="platform_rejected").
	platform.Inject(rfttest.RouteMetrics, rfttest.Fault{Status: http.StatusBadRequest})

	addr, authAddr := freeAddr(t), freeAddr(t)
	_, metricsPort, _ := strings.Cut(freeAddr(t), ":")
	c := startCollector(t, otelcol, monitoringConfig(t),
		"PRIME_OTLP_HTTP="+addr, "PRIME_OTLP_AUTH_HTTP="+authAddr, "PRIME_METRICS_PORT="+metricsPort,
		"PRIME_METRICS_LEVEL="+level, "PRIME_API_BASE="+platform.BaseURL()+"/rft", "PRIME_API_KEY="+e2eKey,
		"PRIME_TRACES_URL="+platform.URL())

	runKey := "monitoring-" + level
	runTrainer(t, trainer, addr, "-steps", "4", "-run-key", runKey, "-step-delay", "5ms", "-status", "none", "-export-timeout", "60s")
	eventually(t, "the first steps on the platform", func() bool {
		runs := platform.Runs()
		return len(runs) == 1 && len(runs[0].Metrics) > 0
	}, c.out.String)
	// The stuck-run alert and the open-runs panel read the open-run gauges:
	// the demo run counts while it is open, and no longer once closed out
	// (below).
	eventually(t, "the demo run counted open", func() bool {
		return scrapeCounters(t, c, metricsPort).sum("otelcol_exporter_prime_runs_open") == 1
	}, c.out.String)
	// Then the platform goes down while the trainer goes on: the next
	// steps' posts fail after the client's in-place attempts
	// (outcome="failed", the platform-down signal), and the queues fill
	// until they refuse what the trainer sends (enqueue_failed), which its
	// SDK retries until the platform is back.
	platform.SetOutage(&rfttest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1"})
	played := make(chan string, 1)
	go func() {
		cmd := exec.Command(trainer, "-endpoint", addr, "-steps", "8", "-start-step", "5", "-run-key", runKey,
			"-step-delay", "5ms", "-export-timeout", "60s")
		out, err := cmd.CombinedOutput()
		if err != nil {
			played <- fmt.Sprintf("demo trainer failed: %v\n%s", err, out)
			return
		}
		played <- ""
	}()
	// The logs queue takes the trainer's records in few requests: more
	// records (ordinary log lines, skipped) until the queue refuses one.
	logLine := []byte(`{"resourceLogs":[{"resource":{"attributes":[{"key":"prime.run.key","value":{"stringValue":"` + runKey +
		`"}}]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1767225600000000000","body":{"stringValue":"hello"}}]}]}]}`)
	eventually(t, "the logs queue refusing a request in the outage", func() bool {
		resp, err := http.Post("http://"+addr+"/v1/logs", "application/json", bytes.NewReader(logLine))
		if err != nil {
			fatalf(t, c, "POST /v1/logs: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode != http.StatusOK
	}, c.out.String)
	eventually(t, "a failed post and both queues refusing in the outage", func() bool {
		s := scrapeCounters(t, c, metricsPort)
		return s.sum("otelcol_exporter_prime_metric_posts", "outcome", "failed") > 0 &&
			s.sum("otelcol_exporter_enqueue_failed_log_records") > 0 &&
			s.sum("otelcol_exporter_enqueue_failed_metric_points") > 0
	}, c.out.String)
	platform.SetOutage(nil)
	if msg := <-played; msg != "" {
		fatalf(t, c, "%s", msg)
	}

	// A verifiers episode document goes to Prime Traces as well.
	doc, err := os.ReadFile(filepath.Join("testdata", "verifiers-episode", "episode.json"))
	if err != nil {
		t.Fatal(err)
	}
	postOTLPJSON(t, c, "/v1/logs", nativeEpisodeRequest("monitoring-native-"+level, map[string]any{"stringValue": string(doc)}))
	// Bad input: a point with no run identity is rejected (no_identity).
	postOTLPJSON(t, c, "/v1/metrics", map[string]any{"resourceMetrics": []any{map[string]any{
		"resource": map[string]any{"attributes": []any{}},
		"scopeMetrics": []any{map[string]any{"metrics": []any{map[string]any{
			"name": "loss", "gauge": map[string]any{"dataPoints": []any{map[string]any{
				"timeUnixNano": "1767225600000000000", "asDouble": 0.5,
				"attributes": []any{map[string]any{"key": "prime.step", "value": map[string]any{"intValue": "1"}}},
			}}},
		}}}},
	}}})
	// A sender without a key at the receiver behind prime_auth.
	var resp *http.Response
	resp, err = http.Post("http://"+authAddr+"/v1/logs", "application/json", bytes.NewReader([]byte(`{"resourceLogs":[]}`)))
	if err != nil {
		fatalf(t, c, "POST without a key: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		fatalf(t, c, "a request without a key got %s, want 401", resp.Status)
	}

	eventually(t, "the runs' close-out", func() bool {
		runs := platform.Runs()
		return len(runs) == 2 && runs[0].Status == rfttest.StatusCompleted && runs[1].Status == rfttest.StatusCompleted
	}, c.out.String)
	var scrape counters
	eventually(t, "every provoked counter", func() bool {
		scrape = scrapeCounters(t, c, metricsPort)
		return scrape.sum("otelcol_exporter_prime_metric_posts", "outcome", "rejected") > 0 &&
			scrape.sum("otelcol_prime_auth_refused", "reason", "no_key") > 0 &&
			scrape.sum("otelcol_exporter_prime_records_rejected", "reason", "no_identity") > 0 &&
			scrape.sum("otelcol_exporter_prime_trace_documents_uploaded") > 0 &&
			scrape.sum("otelcol_exporter_prime_runs_open") == 0 &&
			scrape.sum("otelcol_exporter_prime_run_idle_seconds_max") == 0
	}, func() string { return c.out.String() + "\nscrape:\n" + strings.Join(scrape.lines(), "\n") })
	c.stop()
	return namesOf(scrape)
}

// multitenantExportedNames runs deploy/multitenant/gateway.yaml as shipped
// (with an overrides file) and has a tenant's run refused (a team the
// platform does not give her), so that a rejection carries its tenant
// label, and a request of hers throttled; it returns every metric name of
// the gateway's /metrics with the label names its series carry.
func multitenantExportedNames(t *testing.T, otelcol string) map[string][]string {
	t.Helper()
	platform := rfttest.NewServer(rfttest.Options{Users: []rfttest.User{{Key: mtAliceKey, ID: "alice", Teams: []string{"team-alice"}}}})
	defer platform.Close()
	// Alice's limit is a record a second: her first request (two
	// records) is taken, her second is over it (throttled).
	g, _ := startLimitedGateway(t, otelcol, platform, "alice:\n  records_per_second: 1\n  burst_seconds: 1\n")
	if code, body := g.postLogs(t, mtAliceKey, intruderLogs("monitoring", "team-not-hers")); code != http.StatusOK {
		fatalf(t, g.c, "alice's request: %d %s", code, body)
	}
	if code, body := g.postLogs(t, mtAliceKey, intruderLogs("monitoring", "team-not-hers")); code != http.StatusTooManyRequests {
		fatalf(t, g.c, "alice's request over her limit: %d %s, want 429", code, body)
	}
	var scrape counters
	eventually(t, "alice's refused run and her throttled request counted under her name", func() bool {
		scrape = scrapeCounters(t, g.c, g.metricsPort)
		return scrape.sum("otelcol_exporter_prime_records_rejected", "reason", "run_refused", "tenant", "alice") > 0 &&
			scrape.sum("otelcol_exporter_prime_records_throttled", "tenant", "alice") > 0
	}, func() string { return g.c.out.String() + "\nscrape:\n" + strings.Join(scrape.lines(), "\n") })
	g.c.stop()
	return namesOf(scrape)
}

// namesOf is every metric name of a scrape with the label names its series
// carry.
func namesOf(scrape counters) map[string][]string {
	out := map[string][]string{}
	for _, s := range scrape {
		labels := out[s.name]
		for l := range s.labels {
			if !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		out[s.name] = labels
	}
	return out
}

// lines prints a scrape back, for failure messages.
func (cs counters) lines() []string {
	var out []string
	for _, s := range cs {
		out = append(out, s.name+" "+strings.Join(slices.Sorted(maps.Keys(s.labels)), ","))
	}
	return out
}

// ruleExpr is one alert of deploy/monitoring/prime-rules.yaml.
type ruleExpr struct{ name, expr string }

func readRuleExprs(t *testing.T) []ruleExpr {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(monitoringDir, "prime-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(body, &file); err != nil {
		t.Fatalf("prime-rules.yaml: %v", err)
	}
	var out []ruleExpr
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out = append(out, ruleExpr{name: r.Alert + r.Record, expr: r.Expr})
		}
	}
	if len(out) == 0 {
		t.Fatal("prime-rules.yaml has no rules")
	}
	return out
}

// panelExpr is one query of deploy/monitoring/prime-dashboard.json (a
// panel's target, or a template variable's query).
type panelExpr struct{ title, description, expr string }

func readDashboardExprs(t *testing.T) []panelExpr {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(monitoringDir, "prime-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(body, &dash); err != nil {
		t.Fatalf("prime-dashboard.json: %v", err)
	}
	var out []panelExpr
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				out = append(out, panelExpr{title: p.Title, description: p.Description, expr: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		// label_values(metric, label) is Grafana's, not PromQL: the
		// metric and the label are what it reads.
		if inner, ok := strings.CutPrefix(q, "label_values("); ok {
			metric, label, _ := strings.Cut(strings.TrimSuffix(inner, ")"), ",")
			q = strings.TrimSpace(metric) + "{" + strings.TrimSpace(label) + `=~".+"}`
		}
		out = append(out, panelExpr{title: "variable " + v.Name, expr: q})
	}
	if len(out) == 0 {
		t.Fatal("prime-dashboard.json has no queries")
	}
	return out
}

type dashboardPanel struct {
	Title       string           `json:"title"`
	Description string           `json:"description"`
	Panels      []dashboardPanel `json:"panels"`
	Targets     []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

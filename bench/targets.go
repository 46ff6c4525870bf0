package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The configurations, in the order every rep runs them; prime-tenants
// (the multi-tenant gateway) only when asked for (-configs).
var configurations = []string{"prime", "debug", "otlphttp"}

// primeTenants is prime as the multi-tenant gateway runs it: prime_auth
// checks each request's key (cached after the first), tenants::enabled
// gives the key's user a backend of its own, and the queue's batches are
// partitioned by key.
const primeTenants = "prime-tenants"

// primeAgent is prime behind the agent tier: the senders send to an agent
// collector (-agent, deploy/agent's build) whose load_balancing exporter
// routes each run to the gateway by its prime.run.key; the CPU and memory
// are both processes'.
const primeAgent = "prime-agent"

// allConfigurations are those every rep runs and those run when asked.
func allConfigurations() []string {
	return append(slices.Clone(configurations), primeTenants, primeAgent)
}

// benchTenantKey is the one tenant's key the senders present.
const benchTenantKey = "sk-bench-tenant"

// target is where one configuration's data lands: the exporter's config
// and how the benchmark sees its episodes arrive. Each measured run gets
// its own, so no count carries over from an earlier run.
type target interface {
	// exporter is the exporter's component id and its config keys (YAML,
	// indented under the id), except the sending_queue all share.
	exporter() (id, yaml string)
	// delivered is how many episodes have landed.
	delivered(ctx context.Context) (int64, error)
	close()
}

func newTarget(name string, tel telemetry) (target, error) {
	switch name {
	case "prime", primeAgent:
		return &primeTarget{fake: rfttest.NewServer(rfttest.Options{DiscardObjects: true})}, nil
	case primeTenants:
		fake := rfttest.NewServer(rfttest.Options{DiscardObjects: true, Users: []rfttest.User{{Key: benchTenantKey, ID: "bench"}}})
		return &tenantsTarget{primeTarget{fake: fake}}, nil
	case "debug":
		return debugTarget{tel: tel}, nil
	case "otlphttp":
		s, err := startSink()
		if err != nil {
			return nil, err
		}
		return &otlphttpTarget{sink: s}, nil
	}
	return nil, fmt.Errorf("unknown configuration %q (want one of %v)", name, allConfigurations())
}

// primeTarget is the in-repo fake platform in discard mode: an episode has
// landed when the row it became is in a confirmed object.
type primeTarget struct{ fake *rfttest.Server }

func (t *primeTarget) exporter() (string, string) {
	return "prime", fmt.Sprintf(`
    endpoint: %s
    api_key: %s
    team_id: team-bench
    mode: online`, t.fake.BaseURL(), t.fake.APIKey())
}

func (t *primeTarget) delivered(context.Context) (int64, error) { return t.fake.ConfirmedRows(), nil }
func (t *primeTarget) close()                                   { t.fake.Close() }

// tenantsTarget is the multi-tenant gateway on the same fake platform:
// no api_key (each run goes with its sender's key), the receiver behind
// prime_auth.
type tenantsTarget struct{ primeTarget }

func (t *tenantsTarget) exporter() (string, string) {
	return "prime", fmt.Sprintf(`
    endpoint: %s
    team_id: team-bench
    mode: online
    tenants:
      enabled: true`, t.fake.BaseURL())
}

// auth is the receiver's authenticator and the key the senders present.
func (t *tenantsTarget) auth() (extensionYAML, bearer string) {
	return fmt.Sprintf(`
  prime_auth:
    endpoint: %s`, t.fake.BaseURL()), benchTenantKey
}

// authTarget is a target whose receiver authenticates its senders.
type authTarget interface {
	auth() (extensionYAML, bearer string)
}

// debugTarget has nowhere to land: the collector's own count of what the
// exporter has sent (after the queue and the batch) stands in.
type debugTarget struct{ tel telemetry }

func (debugTarget) exporter() (string, string) {
	return "debug", `
    verbosity: basic`
}

func (t debugTarget) delivered(ctx context.Context) (int64, error) {
	ss, err := t.tel.scrape(ctx)
	if err != nil {
		return 0, err
	}
	return int64(sum(ss, "otelcol_exporter_sent_log_records", `exporter="debug"`)), nil
}

func (debugTarget) close() {}

// otlphttpTarget is the counting sink behind the otlphttp exporter.
type otlphttpTarget struct{ sink *sink }

func (t *otlphttpTarget) exporter() (string, string) {
	return "otlp_http", fmt.Sprintf(`
    endpoint: %s
    compression: gzip`, t.sink.URL())
}

func (t *otlphttpTarget) delivered(context.Context) (int64, error) { return t.sink.records.Load(), nil }
func (t *otlphttpTarget) close()                                   { _ = t.sink.Close() }

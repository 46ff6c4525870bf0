package main

import (
	"context"
	"fmt"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// The configurations, in the order every rep runs them.
var configurations = []string{"prime", "debug", "otlphttp"}

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
	case "prime":
		return &primeTarget{fake: rfttest.NewServer(rfttest.Options{DiscardObjects: true})}, nil
	case "debug":
		return debugTarget{tel: tel}, nil
	case "otlphttp":
		s, err := startSink()
		if err != nil {
			return nil, err
		}
		return &otlphttpTarget{sink: s}, nil
	}
	return nil, fmt.Errorf("unknown configuration %q (want one of %v)", name, configurations)
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

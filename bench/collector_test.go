package main

import (
	"strings"
	"testing"
)

func TestEveryConfigurationGetsTheSameQueueAndOnlyItsExporter(t *testing.T) {
	for _, id := range []string{"prime", "debug", "otlp_http"} {
		cfg := collectorConfig{grpcAddr: "127.0.0.1:1", metricsHost: "127.0.0.1", metricsPort: 2, exporterID: id, exporterYAML: "\n    k: v", block: true, queueMiB: defaultQueueMiB}.render()
		for _, want := range []string{
			"  " + id + ":\n    k: v\n    sending_queue:\n",
			"sizer: bytes\n      queue_size: 33554432\n      num_consumers: 4\n      block_on_overflow: true\n",
			"min_size: 1048576\n        max_size: 8388608\n        flush_timeout: 200ms\n",
			"exporters: [" + id + "]",
		} {
			if !strings.Contains(cfg, want) {
				t.Errorf("%s config lacks %q:\n%s", id, want, cfg)
			}
		}
		if strings.Contains(cfg, "pprof") {
			t.Errorf("%s config has pprof unasked", id)
		}
	}
	if cfg := (collectorConfig{exporterID: "prime"}).render(); !strings.Contains(cfg, "block_on_overflow: false\n") {
		t.Errorf("the refusing mode's config blocks:\n%s", cfg)
	}
	cfg := collectorConfig{exporterID: "prime", pprofAddr: "127.0.0.1:3"}.render()
	if !strings.Contains(cfg, "  pprof:\n    endpoint: 127.0.0.1:3\n") || !strings.Contains(cfg, "extensions: [pprof]") {
		t.Errorf("profiling config without the pprof extension:\n%s", cfg)
	}
}

func TestTheMultiTenantConfigurationPutsPrimeAuthInFrontOfTheReceiver(t *testing.T) {
	tgt, err := newTarget(primeTenants, telemetry{})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.close()
	ext, bearer := tgt.(authTarget).auth()
	if bearer != benchTenantKey {
		t.Errorf("the senders present %q, not the tenant's key", bearer)
	}
	ext = strings.Replace(ext, tgt.(*tenantsTarget).fake.BaseURL(), "http://127.0.0.1:9", 1)
	cfg := collectorConfig{grpcAddr: "127.0.0.1:1", exporterID: "prime", authYAML: ext, bearer: bearer, pprofAddr: "127.0.0.1:3"}.render()
	for _, want := range []string{
		"extensions:\n  pprof:\n    endpoint: 127.0.0.1:3\n  prime_auth:\n    endpoint: http://127.0.0.1:9\n",
		"endpoint: 127.0.0.1:1\n        include_metadata: true\n        auth:\n          authenticator: prime_auth\n",
		"extensions: [pprof, prime_auth]",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("the multi-tenant config lacks %q:\n%s", want, cfg)
		}
	}
	if _, yaml := tgt.exporter(); strings.Contains(yaml, "api_key") || !strings.Contains(yaml, "tenants:\n      enabled: true") {
		t.Errorf("the multi-tenant gateway's exporter has a key of its own, or no tenants:%s", yaml)
	}
}

func TestTheAgentTierRoutesEachRunToTheGatewayThroughTheSameQueue(t *testing.T) {
	cfg := agentConfig("127.0.0.1:1", "127.0.0.1", 2, "127.0.0.1:9", true, 32).render()
	for _, want := range []string{
		"  load_balancing:\n    routing_key: attributes\n    routing_attributes: [prime.run.id, prime.run.key]\n",
		"hostnames: [127.0.0.1:9]",
		"tls:\n          insecure: true\n        sending_queue:\n          enabled: false\n    sending_queue:\n      enabled: true\n",
		"queue_size: 33554432\n      num_consumers: 4\n      block_on_overflow: true\n",
		"exporters: [load_balancing]",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("the agent's config lacks %q:\n%s", want, cfg)
		}
	}
}

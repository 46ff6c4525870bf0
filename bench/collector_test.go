package main

import (
	"strings"
	"testing"
)

func TestEveryConfigurationGetsTheSameQueueAndOnlyItsExporter(t *testing.T) {
	for _, id := range []string{"prime", "debug", "otlp_http"} {
		cfg := collectorConfig{grpcAddr: "127.0.0.1:1", metricsHost: "127.0.0.1", metricsPort: 2, exporterID: id, exporterYAML: "\n    k: v", block: true}.render()
		for _, want := range []string{
			"  " + id + ":\n    k: v\n    sending_queue:\n",
			"sizer: bytes\n      queue_size: 268435456\n      num_consumers: 4\n      block_on_overflow: true\n",
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

package primeexporter

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// routeCount counts the platform's requests whose path ends in suffix.
func routeCount(h *harness, suffix string) int {
	n := 0
	for _, r := range h.platform.Requests() {
		if strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

func TestAnAttachIsVerifiedWithThePlatformBeforeDataIsTakenIntoTheRun(t *testing.T) {
	tests := []struct {
		name      string
		known     bool
		wantPosts int
		wantRej   int64
	}{
		{"a run the key reaches takes the data", true, 2, 0},
		{"an unknown run id takes nothing, and is asked once", false, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tt.known {
				h.platform.AddRun("hosted-1")
			}
			attach := map[string]string{"prime.run.id": "hosted-1"}
			for step := int64(1); step <= 2; step++ {
				require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(attach, map[int64]map[string]float64{step: {"loss": 1}})))
			}
			require.Equal(t, 1, routeCount(h, "/rft/samples/presign"), "the attach's check, once")
			require.Equal(t, tt.wantPosts, routeCount(h, "/rft/metrics"))
			require.Equal(t, tt.wantRej, h.count("otelcol_exporter_prime_records_rejected", map[string]string{"reason": "run_refused"}))
		})
	}
}

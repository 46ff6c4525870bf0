package primeexporter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// A platform behind a certificate the machine does not trust: the exporter
// refuses it unless the config explicitly turns verification off.
func TestTLSIsVerifiedUnlessExplicitlyDisabled(t *testing.T) {
	fake := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey})
	t.Cleanup(fake.Close)
	tlsSrv := httptest.NewTLSServer(fake.Handler())
	t.Cleanup(tlsSrv.Close)

	for _, insecure := range []bool{false, true} {
		t.Run(map[bool]string{false: "verified", true: "insecure_skip_verify"}[insecure], func(t *testing.T) {
			cfg := createDefaultConfig().(*Config)
			cfg.ClientConfig.Endpoint = tlsSrv.URL
			cfg.ClientConfig.TLS.InsecureSkipVerify = insecure
			cfg.APIKey = testAPIKey
			cfg.TeamID = "team-1"
			h := newHarnessWithHost(t, fake, cfg, componenttest.NewNopHost())
			err := h.exp.pushMetrics(context.Background(), gauges(trainRun("tls"), map[int64]map[string]float64{1: {"loss": 1}}))
			if insecure {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), "certificate"), "the error names the certificate: %v", err)
		})
	}
	creates := 0
	for _, r := range fake.Requests() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.Path, "/external-runs") {
			creates++
		}
	}
	assert.Equal(t, 1, creates, "only the insecure client reached the platform")
}

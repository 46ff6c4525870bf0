package runs_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestAnAttachIsVerifiedWithThePlatformBeforeDataIsTakenIntoTheRun(t *testing.T) {
	tests := []struct {
		name      string
		known     bool
		wantPosts int
		wantRej   int
	}{
		{"a run the key reaches takes the data", true, 2, 0},
		{"an unknown run id takes nothing, and is asked once", false, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := newOnline(t, nil)
			if tt.known {
				srv.AddRun("hosted-1")
			}
			for step := int64(1); step <= 2; step++ {
				_, err := postStep(c.Reg, attachedResource("hosted-1"), step, map[string]float64{"loss": 1})
				if tt.known {
					require.NoError(t, err)
				} else {
					require.True(t, errors.Is(err, runs.ErrSkipped), "refused, not retried: %v", err)
				}
			}
			require.Equal(t, 1, srv.RequestsByRoute()[rfttest.RoutePresign], "the attach's check, once")
			require.Equal(t, tt.wantPosts, srv.RequestsByRoute()[rfttest.RouteMetrics])
			require.Equal(t, tt.wantRej, c.Tel.Rejected(reject.RunRefused))
			assert.Zero(t, srv.RequestsByRoute()[rfttest.RouteCreate])
		})
	}
}

package fleettest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/rft"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// APIKey is the fake platform's key, and the one Online sends.
const APIKey = "sk-test-fleettest"

// NewPlatform starts the spec-only fake platform; it closes when the test
// ends.
func NewPlatform(t testing.TB) *rfttest.Server {
	srv := rfttest.NewServer(rfttest.Options{APIKey: APIKey})
	t.Cleanup(srv.Close)
	return srv
}

// Online is the exporter's online backend over srv, real HTTP and all, as
// the exporter's start builds it. Its in-place retries are instant and two
// attempts at most, as the root's test harness has them, so that a test
// fails a call with two scripted faults.
func Online(t testing.TB, srv *rfttest.Server) *platform.Online {
	c, err := rft.New(rft.Options{
		BaseURL: srv.BaseURL(), APIKey: APIKey, MaxAttempts: 2,
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	})
	require.NoError(t, err)
	o := platform.NewOnline(c, componenttest.NewNopHost(), zap.NewNop())
	t.Cleanup(o.CloseIdleConnections)
	return o
}

// Routes names the platform's requests in the order it received them (the
// training routes: create, metrics, presign, put, confirm, finalize,
// status; others are left out). internal/upload's tests read it.
func Routes(srv *rfttest.Server) []rfttest.Route {
	var out []rfttest.Route
	for _, r := range srv.Requests() {
		if route := rfttest.TrainingRoute(r.Method, r.Path); route != "" {
			out = append(out, route)
		}
	}
	return out
}

// Requests counts the platform's requests of route.
func Requests(srv *rfttest.Server, route rfttest.Route) int {
	return srv.RequestsByRoute()[route]
}

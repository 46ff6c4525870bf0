package tenants

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/primeintellect/primeexporter/internal/runstore"
	"github.com/primeintellect/primeexporter/internal/telemetry"
	"github.com/primeintellect/primeexporter/internal/testkit/redistest"
)

// retryDelay is the RetryInfo delay of a ResourceExhausted refusal; it
// fails the test for any other error.
func retryDelay(t *testing.T, err error) time.Duration {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "not a gRPC status: %v", err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), "err = %v", err)
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	t.Fatalf("no RetryInfo in %v", st.Details())
	return 0
}

// oneRecordASecond is a limit of one record a second, a bucket of one.
func oneRecordASecond(c *Config) { c.Limits.Limit = Limit{RecordsPerSecond: 1, BurstSeconds: 1} }

func TestATenantOverItsLimitIsToldToRetryLaterAndCountedWhileAnotherIsAdmitted(t *testing.T) {
	g := start(t, newPlatform(t), nil, oneRecordASecond)
	require.NoError(t, g.Admit(sentWith(aliceKey), "logs", 100, 5), "a full bucket takes the request: 4 records of debt")
	err := g.Admit(sentWith(aliceKey), "logs", 100, 2)
	d := retryDelay(t, err)
	assert.True(t, d >= time.Second && d <= 4*time.Second && d%time.Second == 0, "whole seconds until the debt is repaid: %s", d)
	assert.NotContains(t, err.Error(), aliceKey)
	assert.Contains(t, err.Error(), "ingest limit of 1 records/s")
	assert.Equal(t, 2, g.throttled.of("logs", "alice"), "counted under her name")

	assert.Error(t, g.Admit(sentWith(aliceNewKey), "metrics", 10, 1), "two keys of one user share one limit")
	require.NoError(t, g.Admit(sentWith(bobKey), "metrics", 100, 1), "bob has a bucket of his own")
	assert.Equal(t, 1, g.logs.FilterMessage("A tenant is over its ingest limit: its senders are told to retry later").Len(), "one line per tenant")
	assert.Empty(t, g.Registries(), "admission makes no tenant's backend: For does")
}

func TestARequestOfNoTenantTheGatewayKnowsIsAdmittedAndLeftToFor(t *testing.T) {
	g := start(t, newPlatform(t), nil, oneRecordASecond)
	for _, ctx := range []context.Context{context.Background(), sentWith("sk-nobody-SECRET")} {
		for range 3 {
			require.NoError(t, g.Admit(ctx, "logs", 100, 10))
		}
	}
	assert.Zero(t, g.throttled.of("logs", telemetry.Unknown))
}

func TestTheReloadLoopAppliesAChangedOverridesFileAndEndsAtShutdown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	file := filepath.Join(t.TempDir(), "limits.yaml")
	write(t, file, "alice:\n  records_per_second: 1\n")
	cfg := Config{NamedInMetrics: 1, Limits: LimitsConfig{Limit: defaults, OverridesFile: file, ReloadInterval: 5 * time.Millisecond}}
	lm, err := startLimits(cfg, nil, nil, zap.NewNop())
	require.NoError(t, err)
	assert.Equal(t, 1.0, lm.overrides.of("alice").RecordsPerSecond)
	write(t, file, "alice:\n  records_per_second: 0\n")
	assert.Eventually(t, func() bool { return lm.overrides.of("alice").RecordsPerSecond == 0 }, 10*time.Second, 5*time.Millisecond,
		"changed without a restart")
	require.NoError(t, lm.shutdown())
	require.NoError(t, lm.shutdown(), "a second shutdown does nothing")
}

func TestAGatewayWhoseOverridesFileIsBadDoesNotStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "limits.yaml")
	write(t, file, "alice:\n  records: 1\n")
	cfg := Config{NamedInMetrics: 1, Limits: LimitsConfig{Limit: defaults, OverridesFile: file, ReloadInterval: time.Second}}
	_, err := startLimits(cfg, nil, nil, zap.NewNop())
	assert.ErrorContains(t, err, `alice: unknown key "records"`)
}

// BenchmarkAdmit is what the ingest limit adds to a request at the
// receiver: the key's user from the verifier's cache, then the tenant's
// buckets in this process (local) or on a Redis on the same host (redis;
// one round trip), and the request's OTLP size that the logs exporter
// computes first, for a request of 256 episodes of ~2 KB (size). The limit
// is never reached. docs/multitenant.md, Limits, sets them against a
// request's other work.
func BenchmarkAdmit(b *testing.B) {
	high := func(c *Config) { c.Limits.Limit = Limit{BytesPerSecond: 1e15, RecordsPerSecond: 1e12, BurstSeconds: 1} }
	platform := newPlatform(b)
	srv := redistest.New(b)
	for _, bb := range []struct {
		name string
		g    gateway
	}{
		{"local", start(b, platform, nil, high)},
		{"redis", startOn(b, platform, &runstore.RedisOptions{Endpoint: srv.Addr(), Prefix: "bench"}, high)},
	} {
		b.Run(bb.name, func(b *testing.B) {
			ctx := sentWith(aliceKey)
			require.NoError(b, bb.g.Admit(ctx, "logs", 1, 1))
			b.ReportAllocs()
			for b.Loop() {
				if err := bb.g.Admit(ctx, "logs", 600_000, 256); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("size", func(b *testing.B) {
		ld := plog.NewLogs()
		lrs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
		for i := range 256 {
			lr := lrs.AppendEmpty()
			lr.SetEventName("prime.episode")
			lr.Attributes().PutInt("prime.work.step", 10)
			body := lr.Body().SetEmptyMap()
			body.PutStr("prompt", strings.Repeat("What is 2 + 2? ", 60))
			body.PutStr("completion", strings.Repeat("It is four. ", 80))
			body.PutInt("problem_id", int64(i))
		}
		var m plog.ProtoMarshaler
		b.ReportAllocs()
		for b.Loop() {
			_ = m.LogsSize(ld)
		}
	})
}

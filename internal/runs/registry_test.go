package runs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/testkit/fleettest"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestDataForAClosedRunIsRefusedUnsentAndCountedWithOneWarningPerSignalNamingItsSignalAndTheFix(t *testing.T) {
	tests := []struct {
		name  string
		order []string // the signals of the late data, in arrival order
	}{
		{"late metrics, then late logs", []string{reject.SignalMetrics, reject.SignalLogs}},
		{"late logs, then late metrics", []string{reject.SignalLogs, reject.SignalMetrics}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := newOnline(t, nil)
			ctx := context.Background()
			_, err := postStep(c.Reg, fleettest.KeyedResource("late"), 1, map[string]float64{"loss": 1})
			require.NoError(t, err)
			endRun(t, c.Reg, fleettest.KeyedResource("late"), "completed", "")
			waitStatus(t, srv, onlyRun(t, srv).ID, rfttest.StatusCompleted)
			waitClosed(t, c, 1)
			before := len(srv.Requests())

			for range 2 { // the repeats go to debug
				for _, signal := range tt.order {
					_, err := c.Reg.Acquire(ctx, fleettest.KeyedResource("late"), signal, 1)
					require.ErrorIs(t, err, runs.ErrSkipped, "refused, not retried")
				}
			}

			assert.Len(t, srv.Requests(), before, "nothing is sent for a closed run")
			refused := c.Logs.FilterMessageSnippet("already closed out")
			var signals []string
			for _, w := range refused.FilterLevelExact(zapcore.WarnLevel).All() {
				signals = append(signals, w.ContextMap()["signal"].(string))
				assert.Contains(t, w.Message, "prime.run.end before its last metrics left")
				assert.Contains(t, w.Message, "meter_provider.force_flush()")
				assert.Contains(t, w.Message, "finalize_grace")
				assert.Equal(t, int64(1), w.ContextMap()["records"])
			}
			assert.Equal(t, tt.order, signals, "one warning per signal, naming the signal refused")
			assert.Equal(t, 2, refused.FilterLevelExact(zapcore.DebugLevel).Len())
			for _, signal := range tt.order {
				assert.Equal(t, 2, c.Tel.RejectedOf(signal, reject.RunClosed))
			}
		})
	}
}

func TestAtItsLimitOfOpenRunsTheStatusOfANewRunIsRefusedWithTheLimitAndOpenOnesGoOn(t *testing.T) {
	_, c := newOnline(t, nil, func(cfg *runs.Config) { cfg.MaxOpenRuns = 1 })
	ctx := context.Background()
	unknown := c.Reg.Status(ctx, runs.StatusQuery{Key: "second"})
	assert.Equal(t, runs.StateUnknown, unknown.State, "below the limit a run not seen yet is unknown")

	_, err := postStep(c.Reg, fleettest.KeyedResource("first"), 1, map[string]float64{"loss": 1})
	require.NoError(t, err)
	assert.Equal(t, runs.StateRunning, c.Reg.Status(ctx, runs.StatusQuery{Key: "first"}).State)
	second := c.Reg.Status(ctx, runs.StatusQuery{Key: "second"})
	assert.Equal(t, runs.StateRefused, second.State)
	assert.Equal(t, runs.RefusedRunLimit, second.Reason)
	assert.Contains(t, second.Message, "max_open_runs (1)")
}

package primeexporter

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"

	"github.com/primeintellect/primeexporter/rft/rfttest"
)

func TestDataRefusedForAClosedRunIsWarnedOncePerSignalNamingItsSignalAndTheFix(t *testing.T) {
	tests := []struct {
		name  string
		order []string // the signals of the late data, in arrival order
	}{
		{"late metrics, then late logs", []string{"metrics", "logs"}},
		{"late logs, then late metrics", []string{"logs", "metrics"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := context.Background()
			require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("late"), metricsEvent(1, map[string]float64{"loss": 1}), runEnd("completed", ""))))
			h.waitStatus(h.onlyRun().ID, rfttest.StatusCompleted)
			require.Eventually(t, func() bool { return h.count(metricRuns, map[string]string{"event": "closed"}) == 1 }, 5*time.Second, time.Millisecond)

			late := map[string]func() error{
				"metrics": func() error {
					return h.exp.pushMetrics(ctx, gauges(trainRun("late"), map[int64]map[string]float64{2: {"loss": 0.5}}))
				},
				"logs": func() error {
					return h.exp.pushLogs(ctx, events(trainRun("late"), metricsEvent(2, map[string]float64{"kl": 0.1})))
				},
			}
			for range 2 { // the repeats go to debug
				for _, signal := range tt.order {
					require.NoError(t, late[signal]())
				}
			}

			refused := h.logs.FilterMessageSnippet("already closed out")
			warnings := refused.FilterLevelExact(zapcore.WarnLevel).All()
			var signals []string
			for _, w := range warnings {
				signals = append(signals, w.ContextMap()["signal"].(string))
				assert.Contains(t, w.Message, "prime.run.end before its last metrics left")
				assert.Contains(t, w.Message, "meter_provider.force_flush()")
				assert.Contains(t, w.Message, "finalize_grace")
				assert.Equal(t, int64(1), w.ContextMap()["records"])
			}
			assert.Equal(t, tt.order, signals, "one warning per signal, naming the signal refused")
			assert.Equal(t, 2, refused.FilterLevelExact(zapcore.DebugLevel).Len())
			for _, signal := range tt.order {
				assert.Equal(t, int64(2), h.count(metricRejected, map[string]string{"signal": signal, "reason": "run_closed"}))
			}
		})
	}
}

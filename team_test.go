package primeexporter

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zapcore"
)

func TestARunWithoutATeamSendsNoCreateAndIsRejectedNamingBothKeys(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TeamID = "" })
	ctx := context.Background()
	for range 3 {
		require.NoError(t, h.exp.pushMetrics(ctx, gauges(trainRun("teamless"), map[int64]map[string]float64{1: {"loss": 1}})))
	}
	require.NoError(t, h.exp.pushLogs(ctx, events(trainRun("teamless"), episode(10, "a"), runEnd("completed", ""))))

	assert.Empty(t, h.platform.Requests(), "no create, nor anything else, is sent")
	assert.Equal(t, int64(3), h.count(metricRejected, map[string]string{"reason": "no_team", "signal": "metrics"}))
	assert.Equal(t, int64(2), h.count(metricRejected, map[string]string{"reason": "no_team", "signal": "logs"}))
	warnings := h.logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("Rejected data: the run cannot be created")
	require.Equal(t, 1, warnings.Len(), "logged once per run:\n%s", h.logText())
	msg := warnings.All()[0].ContextMap()["error"].(string)
	assert.Contains(t, msg, "prime.run.team_id")
	assert.Contains(t, msg, "team_id")
	assert.Contains(t, msg, `prime.run.key="teamless"`)
}

func TestOnlineModeWithoutATeamWarnsOnceAtStartUp(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TeamID = "" })
	assert.Equal(t, 1, h.logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet("No team_id is configured").Len())

	withTeam := newHarness(t, nil)
	assert.Zero(t, withTeam.logs.FilterMessageSnippet("No team_id").Len())
}

func TestTheResourcesTeamCreatesTheRunWhenTheConfigHasNone(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TeamID = "" })
	res := trainRun("own-team")
	res["prime.run.team_id"] = "team-7"
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(res, map[int64]map[string]float64{1: {"loss": 1}})))
	assert.Equal(t, "team-7", h.onlyRun().Spec["team_id"])
}

func TestAnAttachedRunNeedsNoTeam(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.TeamID = "" })
	h.platform.AddRun("run-att")
	require.NoError(t, h.exp.pushMetrics(context.Background(), gauges(map[string]string{"prime.run.id": "run-att"}, map[int64]map[string]float64{1: {"loss": 1}})))
	run, _ := h.platform.Run("run-att")
	assert.Equal(t, map[int64]map[string]float64{1: {"loss": 1}}, run.Metrics)
	assert.Zero(t, h.count(metricRejected, map[string]string{"reason": "no_team"}))
}

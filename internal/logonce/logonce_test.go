package logonce

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestAKeyWarnsOnceThenLogsAtDebug(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := New(zap.New(core), 0)
	for range 3 {
		l.Warn("run-1\x00bad_step", "bad step")
	}
	l.Warn("run-2\x00bad_step", "bad step")
	assert.Equal(t, 2, logs.FilterLevelExact(zapcore.WarnLevel).Len(), "one warning per key")
	assert.Equal(t, 2, logs.FilterLevelExact(zapcore.DebugLevel).Len())
}

func TestAForgottenKeyWarnsAgainInsteadOfGrowingWithoutBound(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := New(zap.New(core), 2)
	for i := range 3 {
		l.Warn(fmt.Sprint(i), "w")
	}
	l.Warn("0", "w") // evicted by "2": warned again
	l.Warn("2", "w") // still remembered
	assert.Equal(t, 4, logs.FilterLevelExact(zapcore.WarnLevel).Len())
	assert.Equal(t, 1, logs.FilterLevelExact(zapcore.DebugLevel).Len())
}

func TestAnExpectedEventIsLoggedAtInfoOnceThenAtDebug(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := New(zap.New(core), 0)
	for range 3 {
		l.Info("run-1\x00ended", "ended")
	}
	assert.Equal(t, 1, logs.FilterLevelExact(zapcore.InfoLevel).Len())
	assert.Equal(t, 2, logs.FilterLevelExact(zapcore.DebugLevel).Len())
	assert.Zero(t, logs.FilterLevelExact(zapcore.WarnLevel).Len())
}

package platform

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// outageClock is a settable time for an outage watch.
type outageClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *outageClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *outageClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var errServiceDown = errors.New("prime: post metrics: 503 Service Unavailable")

func observedWatch(t *testing.T) (*outageWatch, *outageClock, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	c := &outageClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w := newOutageWatch("platform API", zap.New(core), WithOutageClock(c.Now),
		WithOutageBacklog(fixedBacklog("logs 7/1000"), "requests"))
	return w, c, logs
}

// failAfter records a failed call that took d.
func failAfter(w *outageWatch, c *outageClock, route string, d time.Duration) {
	begun := w.Now()
	c.Add(d)
	w.Failed(route, begun, errServiceDown)
}

func TestTheWarningComesOncePerOutageAtTheFirstFailureAfterAMinute(t *testing.T) {
	w, c, logs := observedWatch(t)
	failAfter(w, c, "post metrics", 15*time.Second)
	failAfter(w, c, "presign", 30*time.Second)
	failAfter(w, c, "post metrics", 10*time.Second)
	assert.Zero(t, logs.Len(), "55 s into the outage: no line yet")

	failAfter(w, c, "post metrics", 10*time.Second)
	require.Equal(t, 1, logs.Len())
	line := logs.All()[0]
	assert.Equal(t, zapcore.WarnLevel, line.Level)
	assert.Equal(t, "Outage: every call to the service has failed for over a minute; unsent data waits in the collector's queue and is retried", line.Message)
	assert.Equal(t, map[string]any{
		"service": "platform API", "routes": "post metrics, presign", "down_for": "1m5s",
		"failures": int64(4), "queue": "logs 7/1000 requests", "error": errServiceDown.Error(),
	}, line.ContextMap())

	for range 20 {
		failAfter(w, c, "confirm", 30*time.Second)
	}
	assert.Equal(t, 1, logs.Len(), "one warning per outage, not one per failure")
}

func TestTheFirstSuccessEndsTheOutageWithOneLineSayingHowLongItLasted(t *testing.T) {
	w, c, logs := observedWatch(t)
	failAfter(w, c, "post metrics", 20*time.Second)
	failAfter(w, c, "finalize", 50*time.Second)
	c.Add(40 * time.Second)
	w.Succeeded()
	w.Succeeded()

	require.Equal(t, 2, logs.Len(), "the warning, then one recovery line")
	line := logs.All()[1]
	assert.Equal(t, zapcore.InfoLevel, line.Level)
	assert.Equal(t, "Outage over: the service answers again", line.Message)
	assert.Equal(t, map[string]any{
		"service": "platform API", "lasted": "1m50s", "failures": int64(2), "routes": "post metrics, finalize",
	}, line.ContextMap())
}

func TestARecoveryStartsTheNextOutageAfresh(t *testing.T) {
	w, c, logs := observedWatch(t)
	failAfter(w, c, "post metrics", 70*time.Second)
	w.Succeeded()
	require.Equal(t, 2, logs.Len())

	failAfter(w, c, "presign", 30*time.Second)
	assert.Equal(t, 2, logs.Len(), "the new outage is 30 s old")
	failAfter(w, c, "presign", 31*time.Second)
	require.Equal(t, 3, logs.Len(), "a second outage warns again")
	assert.Equal(t, "presign", logs.All()[2].ContextMap()["routes"], "only this outage's routes")
	assert.Equal(t, int64(2), logs.All()[2].ContextMap()["failures"])
}

func TestAShortOutageGetsOnlyTheRecoveryLine(t *testing.T) {
	w, c, logs := observedWatch(t)
	failAfter(w, c, "put object", 5*time.Second)
	w.Succeeded()
	require.Equal(t, 1, logs.Len())
	assert.Equal(t, zapcore.InfoLevel, logs.All()[0].Level)
	assert.Equal(t, "5s", logs.All()[0].ContextMap()["lasted"])
}

func TestSuccessesWithoutAnOutageLogNothing(t *testing.T) {
	w, _, logs := observedWatch(t)
	for range 3 {
		w.Succeeded()
	}
	assert.Zero(t, logs.Len())
}

// A call that began before the last recovery and failed after it does not
// date the next outage back past the recovery.
func TestAnOutageBeginsNoEarlierThanTheLastRecovery(t *testing.T) {
	w, c, logs := observedWatch(t)
	failAfter(w, c, "post metrics", time.Second)
	slow := w.Now()
	c.Add(50 * time.Second)
	w.Succeeded()
	c.Add(20 * time.Second)
	w.Failed("confirm", slow, errServiceDown)
	assert.Equal(t, 1, logs.Len(), "only the recovery: the new outage is 20 s old, not 71 s")
}

// The outage dates from the start of the earliest call that failed with
// it, so a call that spent long in in-place retries counts whole.
func TestAnOutageDatesFromTheEarliestFailedCall(t *testing.T) {
	w, c, logs := observedWatch(t)
	early := w.Now()
	c.Add(10 * time.Second)
	failAfter(w, c, "post metrics", 5*time.Second)
	c.Add(46 * time.Second)
	w.Failed("presign", early, errServiceDown)
	require.Equal(t, 1, logs.Len())
	assert.Equal(t, "1m1s", logs.All()[0].ContextMap()["down_for"])
}

func TestConcurrentCallsLogOneWarningAndOneRecovery(t *testing.T) {
	w, c, logs := observedWatch(t)
	failAfter(w, c, "post metrics", 61*time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				w.Failed("post metrics", w.Now(), errServiceDown)
			}
		})
	}
	wg.Wait()
	for range 8 {
		wg.Go(w.Succeeded)
	}
	wg.Wait()
	require.Equal(t, 2, logs.Len())
	assert.Equal(t, int64(801), logs.All()[1].ContextMap()["failures"])
}

func TestTheHealthCallbackHearsAnOutageAtItsFirstFailureAndItsEndOnce(t *testing.T) {
	type call struct {
		service string
		err     error
	}
	var calls []call
	c := &outageClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w := newOutageWatch("object storage", zap.NewNop(), WithOutageClock(c.Now),
		WithOutageHealth(func(service string, err error) { calls = append(calls, call{service, err}) }))

	w.Succeeded()
	assert.Empty(t, calls, "a success with no outage says nothing")
	failAfter(w, c, "put object", time.Second)
	failAfter(w, c, "put object", time.Second)
	require.Equal(t, []call{{"object storage", errServiceDown}}, calls, "told at once, not after a minute, and once per outage")
	w.Succeeded()
	w.Succeeded()
	require.Equal(t, []call{{"object storage", errServiceDown}, {"object storage", nil}}, calls)
}

// fixedBacklog describes the same fill at every look.
type fixedBacklog string

func (b fixedBacklog) Describe(_ context.Context, unit string) string { return string(b) + " " + unit }

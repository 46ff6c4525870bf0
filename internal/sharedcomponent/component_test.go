package sharedcomponent

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
)

// instance records what was asked of it, in order.
type instance struct {
	mu    sync.Mutex
	calls []string
	// startErr is what Start returns.
	startErr error
	// host is what Start was given.
	host component.Host
}

func (i *instance) record(call string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.calls = append(i.calls, call)
}

func (i *instance) Start(_ context.Context, host component.Host) error {
	i.record("start")
	i.host = host
	return i.startErr
}

func (i *instance) Shutdown(context.Context) error {
	i.record("shutdown")
	return nil
}

func (i *instance) BeginShutdown() { i.record("begin shutdown") }

func (i *instance) seen() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.calls...)
}

// load is key's component in m, made on an instance of its own.
func load(t *testing.T, m *Map[string, *instance], key string) *Component[*instance] {
	t.Helper()
	c, err := m.LoadOrStore(key, func(*Status) (*instance, error) { return &instance{}, nil })
	require.NoError(t, err)
	return c
}

func TestOneKeyGivesEveryPipelineTheSameInstance(t *testing.T) {
	m := NewMap[string, *instance]()
	metrics, logs := load(t, m, "prime"), load(t, m, "prime")
	assert.Same(t, metrics.Unwrap(), logs.Unwrap())
	assert.NotSame(t, metrics.Unwrap(), load(t, m, "prime/other").Unwrap(), "another key, another instance")
}

func TestAFailedCreateStoresNothing(t *testing.T) {
	m := NewMap[string, *instance]()
	_, err := m.LoadOrStore("prime", func(*Status) (*instance, error) { return nil, errors.New("bad config") })
	require.EqualError(t, err, "bad config")
	made := false
	_, err = m.LoadOrStore("prime", func(*Status) (*instance, error) { made = true; return &instance{}, nil })
	require.NoError(t, err)
	assert.True(t, made, "the next pipeline makes the instance")
}

func TestTheInstanceStartsWithTheFirstPipelineAndShutsDownAfterTheLast(t *testing.T) {
	ctx := context.Background()
	m := NewMap[string, *instance]()
	metrics, logs := load(t, m, "prime"), load(t, m, "prime")
	i := metrics.Unwrap()
	require.NoError(t, metrics.Start(ctx, newStatusHost()))
	require.NoError(t, logs.Start(ctx, newStatusHost()))
	assert.Equal(t, []string{"start"}, i.seen())

	require.NoError(t, metrics.Shutdown(ctx))
	assert.Equal(t, []string{"start"}, i.seen(), "the logs pipeline still drains into it")
	require.NoError(t, logs.Shutdown(ctx))
	assert.Equal(t, []string{"start", "shutdown"}, i.seen())
	require.NoError(t, logs.Shutdown(ctx))
	assert.Equal(t, []string{"start", "shutdown"}, i.seen(), "a shutdown without a start does nothing")

	assert.NotSame(t, i, load(t, m, "prime").Unwrap(), "the last shutdown takes the instance out: a reload builds a fresh one")
}

func TestAFailedStartIsThatPipelinesAndItsShutdownStillComes(t *testing.T) {
	ctx := context.Background()
	m := NewMap[string, *instance]()
	c := load(t, m, "prime")
	c.Unwrap().startErr = errors.New("no storage extension")
	require.EqualError(t, c.Start(ctx, newStatusHost()), "no storage extension")
	require.NoError(t, c.Shutdown(ctx))
	assert.Equal(t, []string{"start", "shutdown"}, c.Unwrap().seen())
}

func TestWhatTheInstanceReportsReachesEveryPipelinesHostAndALateOneHearsTheError(t *testing.T) {
	ctx := context.Background()
	m := NewMap[string, *instance]()
	var status *Status
	metrics, err := m.LoadOrStore("prime", func(s *Status) (*instance, error) { status = s; return &instance{}, nil })
	require.NoError(t, err)
	logs := load(t, m, "prime")
	first, late := newStatusHost(), newStatusHost()
	require.NoError(t, metrics.Start(ctx, first))
	status.Set("platform API", errors.New("503"))
	require.NoError(t, logs.Start(ctx, late))
	componentstatus.ReportStatus(metrics.Unwrap().host, componentstatus.NewPermanentErrorEvent(errors.New("refused")))

	want := []string{"StatusRecoverableError: platform API: 503", "StatusPermanentError: refused"}
	assert.Equal(t, want, first.seen())
	assert.Equal(t, want, late.seen())
}

// helper is exporterhelper's exporter as a pipeline wrapper sees it: it
// starts and shuts down c, as WithStart and WithShutdown make it.
type helper struct {
	c     *Component[*instance]
	host  component.Host
	drain func()
}

func (h *helper) Start(ctx context.Context, host component.Host) error {
	h.host = host
	return h.c.Start(ctx, host)
}

func (h *helper) Shutdown(ctx context.Context) error {
	h.drain()
	return h.c.Shutdown(ctx)
}

// nopMetrics and nopLogs are a helper taking every signal's data.
type nopMetrics struct {
	*helper
	consumer.Metrics
}

type nopLogs struct {
	*helper
	consumer.Logs
}

func TestEveryPipelinesShutdownTellsTheInstanceBeforeItsQueueDrains(t *testing.T) {
	ctx := context.Background()
	m := NewMap[string, *instance]()
	c := load(t, m, "prime")
	i := c.Unwrap()
	metricsHelper := &helper{c: c, drain: func() { i.record("metrics drain") }}
	logsHelper := &helper{c: c, drain: func() { i.record("logs drain") }}
	type tagged struct{ component.Host }
	tag := func(h component.Host) component.Host { return tagged{h} }
	metrics := Metrics(c, nopMetrics{metricsHelper, consumertest.NewNop()}, tag)
	logs := Logs(c, nopLogs{logsHelper, consumertest.NewNop()}, nil)

	host := newStatusHost()
	require.NoError(t, metrics.Start(ctx, host))
	require.NoError(t, logs.Start(ctx, host))
	assert.Equal(t, tagged{host}, metricsHelper.host, "the metrics queue starts on the host it was given")
	assert.Same(t, host, logsHelper.host, "nil keeps the host")

	require.NoError(t, metrics.Shutdown(ctx))
	require.NoError(t, logs.Shutdown(ctx))
	assert.Equal(t, []string{"start", "begin shutdown", "metrics drain", "begin shutdown", "logs drain", "shutdown"}, i.seen())
}

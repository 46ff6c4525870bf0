package primeambientprocessor

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/primeintellect/primeexporter/internal/ambient"
	"github.com/primeintellect/primeexporter/internal/pods"
)

// The identities a trainer's resource names its run by, in the exporter's
// order; the agent's load_balancing routes by them.
var identityAttrs = [...]string{"prime.run.id", "prime.run.key"}

// identity is one run's routing attribute and value.
type identity struct{ attr, value string }

func identityOf(res pcommon.Resource) (identity, bool) {
	for _, a := range identityAttrs {
		if v, ok := res.Attributes().Get(a); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
			return identity{a, v.Str()}, true
		}
	}
	return identity{}, false
}

// binder learns the node's trainer pods and runs, and stamps ambient
// resources with their run's identity.
type binder struct {
	pods *pods.Index
	ttl  time.Duration
	now  func() time.Time

	mu   sync.Mutex
	runs map[identity]time.Time // the node's runs: when their trainers last sent
	max  int
}

func newBinder(maxPods int, ttl time.Duration, now func() time.Time) *binder {
	return &binder{pods: pods.NewIndex(maxPods), ttl: ttl, now: now, runs: map[identity]time.Time{}, max: maxPods}
}

// learn records a trainer's resource: its run, and its pod's.
func (b *binder) learn(res pcommon.Resource) {
	id, ok := identityOf(res)
	if !ok {
		return
	}
	b.pods.Learn(pods.Keys(res), id.attr+"\x00"+id.value)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs[id] = b.now()
	if len(b.runs) > b.max {
		b.forgetLocked(b.now())
	}
}

// nodeRuns are the runs whose trainers sent within the ttl.
func (b *binder) nodeRuns() []identity {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.forgetLocked(now)
	out := make([]identity, 0, len(b.runs))
	for id := range b.runs {
		out = append(out, id)
	}
	return out
}

func (b *binder) forgetLocked(now time.Time) {
	for id, at := range b.runs {
		if now.Sub(at) > b.ttl {
			delete(b.runs, id)
		}
	}
}

func (b *binder) logs(_ context.Context, ld plog.Logs) (plog.Logs, error) {
	for _, rl := range ld.ResourceLogs().All() {
		b.learn(rl.Resource())
	}
	return ld, nil
}

// metrics learns from the trainers' resources and stamps the ambient ones:
// a pod's with its run's identity, the node's own copied to each run.
func (b *binder) metrics(_ context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	rms := md.ResourceMetrics()
	for _, rm := range rms.All() {
		if !ambient.Is(rm) {
			b.learn(rm.Resource())
		}
	}
	n := rms.Len()
	var copies []pmetric.ResourceMetrics
	for i := range n {
		rm := rms.At(i)
		if !ambient.Is(rm) {
			continue
		}
		res := rm.Resource()
		if _, ok := identityOf(res); ok {
			continue
		}
		if key, _ := b.pods.Run(res); key != "" {
			stamp(res, key)
			continue
		}
		if len(pods.Keys(res)) > 0 {
			continue // a pod no trainer announced yet
		}
		runs := b.nodeRuns()
		if len(runs) == 0 {
			continue
		}
		for _, id := range runs[1:] {
			c := pmetric.NewResourceMetrics()
			rm.CopyTo(c)
			c.Resource().Attributes().PutStr(id.attr, id.value)
			copies = append(copies, c)
		}
		res.Attributes().PutStr(runs[0].attr, runs[0].value)
	}
	for _, c := range copies {
		c.MoveTo(rms.AppendEmpty())
	}
	return md, nil
}

// stamp sets the identity a pod's run was learned by ("attr\x00value").
func stamp(res pcommon.Resource, key string) {
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			res.Attributes().PutStr(key[:i], key[i+1:])
			return
		}
	}
}

package primeexporter

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/ambient"
	"github.com/primeintellect/primeexporter/internal/pods"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

// ambientState is a backend's side of ambient metrics (internal/ambient):
// the trainer pods it saw (internal/pods), the data waiting for its run to
// open, and each run's latest ambient row.
type ambientState struct {
	pods    *pods.Index
	waiting *ambient.Waiting
	rows    *ambient.Rows
}

func newAmbientState(cfg ambient.Config) *ambientState {
	return &ambientState{
		pods:    pods.NewIndex(cfg.MaxPods),
		waiting: ambient.NewWaiting(cfg.Wait, cfg.MaxWaitingPoints, time.Now),
		rows:    ambient.NewRows(cfg.MaxPods),
	}
}

// learnPod records the pod of res, a trainer's resource, as its run's.
func learnPod(b *backend, res pcommon.Resource) {
	if keys := pods.Keys(res); len(keys) > 0 {
		b.ambient.pods.Learn(keys, b.reg.RunKey(res))
	}
}

// ambientGroup is a push's ambient resources bound for one run or pod,
// named.
type ambientGroup struct {
	runKey, podKey string
	originals      []pcommon.Resource
	named          []pmetric.ResourceMetrics
	points         int
}

// pushAmbient sends a push's ambient resources into the open runs they
// name (by identity, or by a trainer's pod), never opening one, one post
// per run and scrape; what arrives before its run waits, bounded; what
// arrives after its end is dropped. What failed to post goes into retry,
// already named.
func (e *primeExporter) pushAmbient(ctx context.Context, b *backend, rms []pmetric.ResourceMetrics, retry pmetric.Metrics) []error {
	e.dropWaiting(b, b.ambient.waiting.Expire(), "did not open")
	groups := map[string]*ambientGroup{}
	var order []string
	for _, rm := range rms {
		res := rm.Resource()
		runKey, podKey := e.bindAmbient(b, res)
		key := cmp.Or(runKey, podKey)
		tr := ambient.Translate(rm, b.ambient.rows, key)
		for _, target := range tr.FailedScrapes {
			e.tel.Reject(reject.SignalMetrics, reject.ScrapeFailed, 1)
			b.warn.Warn("scrape\x00"+target, "A scrape of an ambient target failed: it is down, or answered text that is not Prometheus exposition; the prometheus receiver's own log line says which. The runs' other data flows as before",
				zap.String("target", target))
		}
		if tr.Points == 0 {
			b.reg.Settle(res)
			continue
		}
		if key == "" {
			b.reg.Settle(res)
			e.tel.Reject(reject.SignalMetrics, reject.AmbientNoRun, tr.Points)
			b.warn.Warn("ambient_unbound", "Dropped ambient metrics that name no run: give their resource the run's prime.run.key (or prime.run.id), or the Kubernetes pod of its trainer (k8s.pod.name and k8s.namespace.name, or k8s.pod.uid)",
				zap.Int("points", tr.Points))
			continue
		}
		g, ok := groups[key]
		if !ok {
			g = &ambientGroup{runKey: runKey, podKey: podKey}
			groups[key] = g
			order = append(order, key)
		}
		g.originals = append(g.originals, res)
		g.named = append(g.named, tr.Metrics.ResourceMetrics().At(0))
		g.points += tr.Points
	}
	var errs []error
	for _, key := range order {
		if err := e.pushAmbientGroup(ctx, b, groups[key], retry); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// bindAmbient finds the run an ambient resource joins: its pod's, when a
// trainer announced that pod (a node's GPUs belong to the pods that hold
// them, whatever run key the node's collector was given); else the run its
// identity names; else none yet, waiting under its pod's key (podKey).
func (e *primeExporter) bindAmbient(b *backend, res pcommon.Resource) (runKey, podKey string) {
	runKey, podKey = b.ambient.pods.Run(res)
	if runKey != "" {
		return runKey, podKey
	}
	if id := b.reg.AmbientKey(res); id != "" {
		return id, ""
	}
	return "", podKey
}

// pushAmbientGroup sends one run's (or pod's) named resources, after what
// waited for it.
func (e *primeExporter) pushAmbientGroup(ctx context.Context, b *backend, g *ambientGroup, retry pmetric.Metrics) error {
	defer func() {
		for _, res := range g.originals {
			b.reg.Settle(res)
		}
	}()
	if g.runKey == "" {
		e.await(b, g.podKey, g)
		return nil
	}
	l, err := b.reg.Join(ctx, g.runKey)
	switch {
	case errors.Is(err, runs.ErrNotOpen):
		e.await(b, g.runKey, g)
		return nil
	case errors.Is(err, runs.ErrEnded):
		n := g.points
		for _, k := range []string{g.runKey, g.podKey} {
			for _, md := range b.ambient.waiting.Take(k) {
				n += md.DataPointCount()
			}
		}
		e.tel.Skip(reject.SignalMetrics, reject.AmbientRunEnded, n)
		b.warn.Info("ambient_ended\x00"+g.runKey, "A run has ended: its ambient metrics are dropped from now on", zap.String("run", readableKey(g.runKey)))
		return nil
	case err != nil:
		e.handBack(b, g.originals[0], g.named, retry)
		return err
	}
	defer l.Release()
	named := g.named
	for _, k := range []string{g.podKey, g.runKey} {
		for _, md := range b.ambient.waiting.Take(k) {
			named = append(named, md.ResourceMetrics().At(0))
		}
	}
	return e.postAmbient(ctx, b, l, g.originals[0], named, retry)
}

// await keeps a group's named data until its run opens.
func (e *primeExporter) await(b *backend, key string, g *ambientGroup) {
	md := pmetric.NewMetrics()
	for _, rm := range g.named {
		rm.CopyTo(md.ResourceMetrics().AppendEmpty())
	}
	e.dropWaiting(b, b.ambient.waiting.Add(key, md), "had no room left to wait")
}

// dropWaiting counts and logs ambient data that waited in vain.
func (e *primeExporter) dropWaiting(b *backend, dropped ambient.Dropped, why string) {
	for key, n := range dropped {
		e.tel.Reject(reject.SignalMetrics, reject.AmbientNoRun, n)
		b.warn.Warn("ambient_no_run\x00"+key, "Dropped ambient metrics whose run "+why+" within ambient::wait: no trainer data opened a run of that identity or pod",
			zap.String("waited_for", readableKey(key)), zap.Int("points", n), zap.Duration("wait", e.cfg.Ambient.Wait))
	}
}

// postAmbient posts named ambient resources of l's run as one batch of
// rows, the keys past the run's cap left out; the rows that failed go into
// retry, already named.
func (e *primeExporter) postAmbient(ctx context.Context, b *backend, l runs.Lease, first pcommon.Resource, named []pmetric.ResourceMetrics, retry pmetric.Metrics) error {
	opts := stepmetrics.Options{}
	batch := runs.StepBatch{}
	capped := 0
	for _, rm := range named {
		entries, rejected, coerced := stepmetrics.FromResource(rm, opts)
		e.rejectPoints(b, l, reject.SignalMetrics, rejected)
		e.coercePoints(reject.SignalMetrics, coerced)
		kept := entries[:0]
		for _, en := range entries {
			if l.AdmitAmbient(en.Key) {
				kept = append(kept, en)
				continue
			}
			capped++
			b.warn.Warn("ambient_key_cap\x00"+l.ID(), "Dropped ambient keys past the run's ambient::max_keys: a label that changes every scrape, or metrics no recipe aggregates; the first keys flow as before",
				zap.String("run_id", l.ID()), zap.String("key", en.Key), zap.Int("max_keys", e.cfg.Ambient.MaxKeys))
		}
		batch.Add(kept)
	}
	if capped > 0 {
		e.tel.Reject(reject.SignalMetrics, reject.AmbientKeyCap, capped)
	}
	failed, err := l.PostSteps(ctx, reject.SignalMetrics, batch)
	if err != nil {
		out := pmetric.NewMetrics()
		for _, rm := range named {
			stepmetrics.FilterRows(out, rm, opts, func(row stepmetrics.Row) bool { return failed[row] })
		}
		e.handBack(b, first, nil, out)
		out.ResourceMetrics().MoveAndAppendTo(retry.ResourceMetrics())
	}
	return err
}

// handBack puts named resources (or what out already holds) into retry's
// data, marked as their run's data in the collector's retry.
func (e *primeExporter) handBack(b *backend, first pcommon.Resource, named []pmetric.ResourceMetrics, out pmetric.Metrics) {
	for _, rm := range named {
		rm.CopyTo(out.ResourceMetrics().AppendEmpty())
	}
	appended := make([]pcommon.Resource, 0, out.ResourceMetrics().Len())
	for _, rm := range out.ResourceMetrics().All() {
		appended = append(appended, rm.Resource())
	}
	b.reg.MarkHandedBack(first, appended)
}

// readableKey is a run or pod key as a log line shows it: a run key's
// parts are joined by a NUL byte.
func readableKey(key string) string {
	return strings.ReplaceAll(key, "\x00", " ")
}

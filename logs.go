package primeexporter

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
)

// Event names the exporter reads (telemetry.md §3).
const (
	eventEpisode = "prime.episode"
	eventMetrics = "prime.metrics"
	eventRunEnd  = "prime.run.end"

	attrEventName = "event.name"
	attrStep      = "prime.step"
)

// eventName is the record's event_name field, or its event.name attribute
// for SDKs that predate the field.
func eventName(lr plog.LogRecord) string {
	if n := lr.EventName(); n != "" {
		return n
	}
	if v, ok := lr.Attributes().Get(attrEventName); ok {
		if s, isStr := pvalue.String(v); isStr {
			return s
		}
	}
	return ""
}

// pushLogs routes each record by event name. prime.metrics events take the
// step-metrics path; prime.run.end starts the run's close-out after the rest
// of the batch is sent; records with no known event are ignored and counted.
func (e *primeExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	g := e.registry()
	if g == nil {
		return nil
	}
	retry := plog.NewLogs()
	var errs []error
	var down error // see platformDown and pushMetrics
	for _, rl := range ld.ResourceLogs().All() {
		before := retry.ResourceLogs().Len()
		err := down
		if down != nil {
			rl.CopyTo(retry.ResourceLogs().AppendEmpty())
		} else {
			err = e.pushResourceLogs(ctx, g, rl, retry)
		}
		if err != nil {
			errs = append(errs, err)
			if platformDown(err) {
				down = err
			}
		}
		g.markHandedBack(rl.Resource(), logResourcesFrom(retry, before))
		// Settled only now: until this push is done with it, its data is
		// still owed to a close-out waiting for the run's retries.
		g.handBacks.settle(rl.Resource())
	}
	if len(errs) == 0 {
		return nil
	}
	return consumererror.NewLogs(firstRetryError(errs), retry)
}

func (e *primeExporter) pushResourceLogs(ctx context.Context, g *registry, rl plog.ResourceLogs, retry plog.Logs) error {
	l, err := g.acquire(ctx, rl.Resource(), signalLogs, logRecordCount(rl))
	if errors.Is(err, errSkipped) {
		return nil
	}
	if err != nil {
		rl.CopyTo(retry.ResourceLogs().AppendEmpty())
		return err
	}
	defer l.release()

	steps := stepBatch{}
	metricRecords := map[int64][]recordLoc{}
	episodes := episodeBatch{}
	var end *endRequest
	var endLoc recordLoc
	for si, sl := range rl.ScopeLogs().All() {
		for ri, lr := range sl.LogRecords().All() {
			loc := recordLoc{si, ri}
			switch name := eventName(lr); name {
			case eventMetrics:
				entries, rejected := stepmetrics.FromEvent(lr.Attributes(), lr.Body())
				g.rejectPoints(l, signalLogs, rejected)
				steps.add(entries)
				if len(entries) > 0 {
					metricRecords[entries[0].Step] = append(metricRecords[entries[0].Step], loc)
				}
			case eventEpisode:
				e.samples.accept(l, episodes, lr, loc)
			case eventRunEnd:
				req, err := parseEnd(lr.Attributes())
				if err != nil {
					g.warn.Warn("end\x00"+l.id, "prime.run.end has a bad status; the run is closed out as failed", zap.String("run_id", l.id), zap.Error(err))
				}
				if end == nil {
					end, endLoc = &req, loc
				}
			default:
				g.tel.skip(signalLogs, "not_an_event", 1)
				if strings.HasPrefix(name, "prime.") {
					g.warn.Warn("event\x00"+name, "Ignored a log record with an unknown prime.* event name", zap.String("event_name", name), zap.String("run_id", l.id))
				}
			}
		}
	}

	var errs []error
	failedSteps, err := g.sendSteps(ctx, l, signalLogs, steps)
	if err != nil {
		errs = append(errs, err)
	}
	var failedEpisodes map[recordLoc]bool
	if len(errs) > 0 && platformDown(errs[0]) {
		// The episodes go back unsent, as the rest of a push does.
		failedEpisodes = episodes.locs()
	} else if failedEpisodes, err = e.samples.upload(ctx, l, episodes); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		keep := failedEpisodes
		if keep == nil {
			keep = map[recordLoc]bool{}
		}
		for step := range failedSteps {
			for _, loc := range metricRecords[step] {
				keep[loc] = true
			}
		}
		// The end goes back with the data that failed, so the run is not
		// closed out before that data is delivered.
		if end != nil {
			keep[endLoc] = true
			end = nil
		}
		copyRecords(retry, rl, keep)
	}
	if end != nil {
		g.requestEnd(l.r, *end)
	}
	if len(errs) == 0 {
		return nil
	}
	return firstRetryError(errs)
}

// copyRecords hands back to the collector only the records that failed.
func copyRecords(dst plog.Logs, rl plog.ResourceLogs, keep map[recordLoc]bool) {
	var out plog.ResourceLogs
	started := false
	for si, sl := range rl.ScopeLogs().All() {
		var outScope plog.ScopeLogs
		scopeStarted := false
		for ri, lr := range sl.LogRecords().All() {
			if !keep[recordLoc{si, ri}] {
				continue
			}
			if !started {
				out = dst.ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(out.Resource())
				out.SetSchemaUrl(rl.SchemaUrl())
				started = true
			}
			if !scopeStarted {
				outScope = out.ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(outScope.Scope())
				outScope.SetSchemaUrl(sl.SchemaUrl())
				scopeStarted = true
			}
			lr.CopyTo(outScope.LogRecords().AppendEmpty())
		}
	}
}

func logRecordCount(rl plog.ResourceLogs) int {
	n := 0
	for _, sl := range rl.ScopeLogs().All() {
		n += sl.LogRecords().Len()
	}
	return n
}

// locs is where every episode of the batch sits.
func (b episodeBatch) locs() map[recordLoc]bool {
	out := map[recordLoc]bool{}
	for _, refs := range b {
		for _, ref := range refs {
			out[ref.loc] = true
		}
	}
	return out
}

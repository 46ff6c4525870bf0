package primeexporter

import (
	"context"
	"iter"
	"strings"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/pvalue"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
	"github.com/primeintellect/primeexporter/internal/upload"
)

// Event names the exporter reads.
const (
	eventEpisode = "prime.episode"
	eventMetrics = "prime.metrics"
	eventRunEnd  = "prime.run.end"
	// eventRunStart is sent by prime_otel's init(): its run is acquired,
	// hence created or attached, as for any record, so that the status
	// route can tell the trainer about it at once. The record itself
	// carries nothing more.
	eventRunStart = "prime.run.start"

	attrEventName = "event.name"
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
// step-metrics path, prime.episode records the samples sink, and
// prime.run.end starts the run's close-out after the rest of the batch is
// sent; prime.run.start only makes the run; records with no known event
// are ignored and counted.
func (e *primeExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	b, err := e.backendFor(ctx, reject.SignalLogs, ld.LogRecordCount())
	if b == nil {
		return err
	}
	retry := plog.NewLogs()
	var same func(a, b plog.ResourceLogs) bool
	if !e.cfg.persistentQueue() {
		same = sameResourceLogs
	}
	errs := pushEach(b.reg, ld.ResourceLogs(), retry.ResourceLogs(), plog.NewLogs, plog.Logs.ResourceLogs, same, func(rls []plog.ResourceLogs, retry plog.Logs) error {
		return e.pushResourceLogs(ctx, b, rls, retry)
	})
	if len(errs) == 0 {
		return nil
	}
	return consumererror.NewLogs(platform.FirstRetryError(errs), retry)
}

// resourceEvents are one resource's records, sorted by what they become.
type resourceEvents struct {
	steps         runs.StepBatch
	metricRecords map[stepmetrics.Row][]upload.Loc // the prime.metrics records of each row
	episodes      samplesSink
	end           *runs.End
	endLoc        upload.Loc
}

// sameResourceLogs tells a trainer's requests apart from other data: their
// records are pushed together (pushEach), one step's episodes in one object.
// Only with the sending queue in memory: a persistent queue replays its
// requests one by one after a restart and the batcher groups them anew, so
// there an object must be made of one request's episodes, to be the same
// object again, whose pending upload (or confirm whose answer was lost)
// the replay resumes. In memory nothing outlives the process, and the
// collector's retry brings back what a push handed back, which is pushed
// together again as it was.
func sameResourceLogs(a, b plog.ResourceLogs) bool {
	return a.SchemaUrl() == b.SchemaUrl() && sameResource(a.Resource(), b.Resource())
}

// pushResourceLogs sends the records of rls, resources of one run alike in
// their attributes, as one resource's: a record's Loc counts its scope
// across them, in order.
func (e *primeExporter) pushResourceLogs(ctx context.Context, b *backend, rls []plog.ResourceLogs, retry plog.Logs) error {
	records := 0
	for _, rl := range rls {
		records += logRecordCount(rl)
	}
	l, ok, err := acquire(ctx, b.reg, rls, retry.ResourceLogs(), reject.SignalLogs, records)
	if !ok {
		return err
	}
	defer l.Release()
	learnPod(b, rls[0].Resource())
	if l.IsEval() {
		var errs []error
		for _, rl := range rls {
			if err := e.pushEvalLogs(ctx, b, l, rl, retry); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) == 0 {
			return nil
		}
		return platform.FirstRetryError(errs)
	}

	ev := e.sortEvents(b, l, rls, records)
	var errs []error
	var failedRows map[stepmetrics.Row]bool
	if len(ev.steps) > 0 { // a push of episodes alone has no row to post
		var err error
		if failedRows, err = l.PostSteps(ctx, reject.SignalLogs, ev.steps); err != nil {
			errs = append(errs, err)
		}
	}
	failedEpisodes, err := ev.episodes.send(ctx, len(errs) > 0 && platform.Down(errs[0]))
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if ev.end != nil {
			l.End(*ev.end)
		}
		return nil
	}
	keep := failedEpisodes
	if keep == nil {
		keep = map[upload.Loc]bool{}
	}
	for row := range failedRows {
		for _, loc := range ev.metricRecords[row] {
			keep[loc] = true
		}
	}
	// The end goes back with the data that failed, so the run is not
	// closed out before that data is delivered.
	if ev.end != nil {
		keep[ev.endLoc] = true
	}
	copyRecords(retry, rls, keep)
	return platform.FirstRetryError(errs)
}

// sortEvents maps every record of the resources; what cannot be sent is
// counted and logged here.
func (e *primeExporter) sortEvents(b *backend, l runs.Lease, rls []plog.ResourceLogs, records int) resourceEvents {
	ev := resourceEvents{steps: runs.StepBatch{}, metricRecords: map[stepmetrics.Row][]upload.Loc{}, episodes: newSamplesSink(b.uploader, l, records)}
	for lr, loc := range eachRecord(rls) {
		switch name := eventName(lr); name {
		case eventMetrics:
			entries, rejected, coerced := stepmetrics.FromEvent(lr)
			e.rejectPoints(b, l, reject.SignalLogs, rejected)
			e.coercePoints(reject.SignalLogs, coerced)
			ev.steps.Add(entries)
			if len(entries) > 0 { // an event's entries share one row
				row := entries[0].Row()
				ev.metricRecords[row] = append(ev.metricRecords[row], loc)
			}
		case eventEpisode:
			ev.episodes.accept(lr, loc)
		case eventRunEnd:
			end, err := runs.ParseEnd(lr.Attributes())
			if err != nil {
				b.warn.Warn("end\x00"+l.ID(), "prime.run.end has a bad status; the run is closed out as failed", zap.String("run_id", l.ID()), zap.Error(err))
			}
			if ev.end == nil {
				ev.end, ev.endLoc = &end, loc
			}
		case eventRunStart:
			// Acquiring the run was its work.
		default:
			e.tel.Skip(reject.SignalLogs, reject.NotAnEvent, 1)
			if strings.HasPrefix(name, "prime.") {
				b.warn.Warn("event\x00"+name, "Ignored a log record with an unknown prime.* event name", zap.String("event_name", name), zap.String("run_id", l.ID()))
			}
		}
	}
	return ev
}

// eachRecord is every record of rls with its Loc: scopes counted across
// the resources, in order.
func eachRecord(rls []plog.ResourceLogs) iter.Seq2[plog.LogRecord, upload.Loc] {
	return func(yield func(plog.LogRecord, upload.Loc) bool) {
		scope := 0
		for _, rl := range rls {
			for _, sl := range rl.ScopeLogs().All() {
				for ri, lr := range sl.LogRecords().All() {
					if !yield(lr, upload.Loc{Scope: scope, Record: ri}) {
						return
					}
				}
				scope++
			}
		}
	}
}

// copyRecords hands back to the collector only the records that failed,
// each under its own resource.
func copyRecords(dst plog.Logs, rls []plog.ResourceLogs, keep map[upload.Loc]bool) {
	scope := 0
	for _, rl := range rls {
		var out plog.ResourceLogs
		started := false
		for _, sl := range rl.ScopeLogs().All() {
			var outScope plog.ScopeLogs
			scopeStarted := false
			for ri, lr := range sl.LogRecords().All() {
				if !keep[upload.Loc{Scope: scope, Record: ri}] {
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
			scope++
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

package primeexporter

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/evalsample"
	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/runs"
	"github.com/primeintellect/primeexporter/internal/stepmetrics"
	"github.com/primeintellect/primeexporter/internal/upload"
)

// pushEvalLogs is pushResourceLogs for an evaluation: its prime.episode
// records become samples appended to the evaluation, its prime.metrics
// events set summary keys, and prime.run.end closes it. An evaluation has
// no steps and no sample table.
func (e *primeExporter) pushEvalLogs(ctx context.Context, b *backend, l runs.Lease, rl plog.ResourceLogs, retry plog.Logs) error {
	var (
		samples  []upload.EvalSample
		docs     []upload.EvalDocument // for Prime Traces
		episodes = map[upload.Loc]evalsample.Episode{}
		end      *runs.End
		endLoc   upload.Loc
	)
	sum := l.Summary()
	traced := b.uploader.Traced(l)
	for si, sl := range rl.ScopeLogs().All() {
		for ri, lr := range sl.LogRecords().All() {
			loc := upload.Loc{Scope: si, Record: ri}
			switch name := eventName(lr); name {
			case eventMetrics:
				entries, rejected, coerced := stepmetrics.SummaryValues(lr.Attributes(), lr.Body())
				e.rejectPoints(b, l, reject.SignalLogs, rejected)
				e.coercePoints(reject.SignalLogs, coerced)
				for _, en := range entries {
					sum.Set(en.Key, en.Value)
				}
			case eventEpisode:
				res, err := evalsample.FromRecord(lr.Body(), l.Counters())
				if err != nil {
					e.rejectSample(b, l, err)
					continue
				}
				origin := res.Document
				var recSamples []upload.EvalSample
				for i, s := range res.Samples {
					if res.Document == nil {
						origin = s
					}
					recSamples = append(recSamples, upload.EvalSample{JSON: s, Loc: loc, FP: upload.SampleFingerprint(origin, i)})
				}
				if res.Document != nil && traced {
					docs = append(docs, upload.EvalDocument{Raw: res.Document, Loc: loc, Samples: recSamples})
				} else {
					samples = append(samples, recSamples...)
				}
				episodes[loc] = res.Episode
			case eventRunEnd:
				parsed, err := runs.ParseEnd(lr.Attributes())
				if err != nil {
					b.warn.Warn("end\x00"+l.ID(), "prime.run.end has a bad status; the evaluation is closed out as failed", zap.String("evaluation_id", l.ID()), zap.Error(err))
				}
				if end == nil {
					end, endLoc = &parsed, loc
				}
			case eventRunStart:
				// Acquiring the evaluation was its work.
			default:
				e.tel.Skip(reject.SignalLogs, reject.NotAnEvent, 1)
				if strings.HasPrefix(name, "prime.") {
					b.warn.Warn("event\x00"+name, "Ignored a log record with an unknown prime.* event name", zap.String("event_name", name), zap.String("evaluation_id", l.ID()))
				}
			}
		}
	}

	// The summary counts an episode once, when its document or first
	// sample reached the platform (or may have): a replay's are left out
	// as delivered, and so is their episode.
	counted := map[upload.Loc]bool{}
	count := func(loc upload.Loc) {
		if !counted[loc] {
			counted[loc] = true
			sum.AddEpisode(episodes[loc])
		}
	}
	var failed map[upload.Loc]bool
	var errs []error
	if len(docs) > 0 {
		onSamples, committed, retryDocs, err := b.uploader.UploadEvalDocuments(ctx, l, l, docs)
		for _, loc := range committed {
			count(loc)
			sum.AddTracesEpisodes(1)
		}
		for _, d := range onSamples {
			samples = append(samples, d.Samples...)
		}
		failed = retryDocs
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && platform.Down(errs[0]) {
		// The samples go back unsent, as the rest of a push does.
		if failed == nil {
			failed = map[upload.Loc]bool{}
		}
		for _, s := range samples {
			failed[s.Loc] = true
		}
	} else {
		sent, retrySamples, err := b.uploader.UploadSamples(ctx, l, b.evals, samples)
		for _, loc := range sent {
			count(loc)
		}
		if err != nil {
			errs = append(errs, err)
		}
		if failed == nil {
			failed = retrySamples
		}
		for loc := range retrySamples {
			failed[loc] = true
		}
	}
	if len(counted) > 0 {
		l.SaveEval(ctx)
	}
	var err error
	if len(errs) > 0 {
		err = platform.FirstRetryError(errs)
	}
	if err == nil {
		if end != nil {
			l.End(*end)
		}
		return nil
	}
	// The end goes back with the samples that failed, so the evaluation
	// is not closed out before they are appended.
	if end != nil {
		if failed == nil {
			failed = map[upload.Loc]bool{}
		}
		failed[endLoc] = true
	}
	copyRecords(retry, []plog.ResourceLogs{rl}, failed)
	return err
}

// rejectSample counts and logs a prime.episode record of an evaluation
// that has no sample.
func (e *primeExporter) rejectSample(b *backend, l runs.Lease, err error) {
	reason := reject.BadValue
	if rej, ok := errors.AsType[*reject.Rejection](err); ok {
		reason = rej.Reason
	}
	e.tel.Reject(reject.SignalLogs, reason, 1)
	l.Count("episodes_rejected", 1)
	b.warn.Warn("sample\x00"+l.ID()+"\x00"+string(reason), "Rejected a prime.episode record of an evaluation that cannot become a sample",
		zap.String("evaluation_id", l.ID()), zap.String("reason", string(reason)), zap.Error(err))
}

// pushEvalMetrics sets an evaluation's summary keys from its metric
// points: the last value of a name wins. Points need no step.
func (e *primeExporter) pushEvalMetrics(b *backend, l runs.Lease, rm pmetric.ResourceMetrics, opts stepmetrics.Options) {
	opts.Stepless = true
	entries, rejected, coerced := stepmetrics.FromResource(rm, opts)
	e.rejectPoints(b, l, reject.SignalMetrics, rejected)
	e.coercePoints(reject.SignalMetrics, coerced)
	sum := l.Summary()
	for _, en := range entries {
		sum.Set(en.Key, en.Value)
	}
}

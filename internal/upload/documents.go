package upload

import (
	"context"
	"slices"

	"github.com/cespare/xxhash/v2"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/sampletable"
	"github.com/primeintellect/primeexporter/rft"
)

// document is one native episode document on its way to Prime Traces.
type document struct {
	raw []byte // as received, compact JSON
	loc Loc
	// rec is kept under exclusive routing: its rows go to the table only
	// if the run falls back to it.
	rec *sampletable.Record
	// eval is an evaluation's document: its samples and what it tells the
	// summary, for the fallback to the samples route.
	eval *EvalDocument

	line []byte // stamped with the platform run
	fp   uint64
	// step is the record's, which keys the document's fingerprint in
	// the delivered set; NoStep for an evaluation's.
	step int64
}

func (d document) stepOf() int64 { return d.step }
func (d document) fpOf() uint64  { return d.fp }

// documentFingerprint identifies a stamped document apart from any row's
// fingerprint, in the same delivered set: a replay leaves out what Prime
// Traces committed, and only that.
func documentFingerprint(line []byte) uint64 {
	h := xxhash.New()
	_, _ = h.WriteString("prime-traces\x00")
	_, _ = h.Write(line)
	return h.Sum64()
}

func docLocs(docs []document) []Loc {
	out := make([]Loc, len(docs))
	for i, d := range docs {
		out[i] = d.loc
	}
	return out
}

// uploadDocuments sends the batch's documents to Prime Traces in
// deterministic batches, so that a replay of the same records sends the
// same content-addressed batches. Documents committed before are left out.
// A batch Prime Traces refuses because the account has no Prime Traces,
// before anything of the run was committed, moves the run to the sample
// table: that batch's rows and every later one's go into b's steps. It
// returns the error of a failure that says the platform is down, so the
// caller sends nothing more.
func (u *Uploader) uploadDocuments(ctx context.Context, b *Batch, fail func([]Loc, error)) error {
	docs := b.docs
	b.docs = nil
	return u.sendDocuments(ctx, b.l, b.route, docs, runTypeTrain, fail, func(d document) {
		if d.rec != nil {
			u.toTable(b, *d.rec, d.loc)
		}
	}, nil)
}

// Run types a document is stamped with (rft.StampRun).
const (
	runTypeTrain = "train"
	runTypeEval  = "eval"
)

// sendDocuments is uploadDocuments for either run type: onTable takes the
// documents that go to the run's other destination after Prime Traces
// turned the account away (the sample table; an evaluation's samples),
// committed is told of each batch Prime Traces committed.
func (u *Uploader) sendDocuments(ctx context.Context, l ObjectRun, route Route, docs []document, runType string, fail func([]Loc, error),
	onTable func(document), committed func([]document),
) error {
	docs = u.stamped(l, docs, runType)
	if len(docs) == 0 {
		return nil
	}
	pending, err := notYetDelivered(ctx, u, l, docs, document.stepOf, document.fpOf)
	if err != nil {
		fail(docLocs(docs), err)
		return nil
	}
	lines := make([][]byte, len(pending))
	for i, d := range pending {
		lines[i] = d.line
	}
	batches, tooLarge := rft.TraceBatches(lines)
	if len(tooLarge) > 0 {
		u.reject(l, reject.EpisodeTooLarge, len(tooLarge), "traces\x00"+l.ID()+"\x00too_large", "Rejected episode documents larger than the 64 MiB Prime Traces takes",
			zap.Int("documents", len(tooLarge)))
		kept := pending[:0:0]
		for i, d := range pending {
			if !slices.Contains(tooLarge, i) {
				kept = append(kept, d)
			}
		}
		pending = kept
	}
	var down error
	for _, batch := range batches {
		part := pending[:len(batch)]
		pending = pending[len(batch):]
		if down != nil {
			fail(docLocs(part), down)
			continue
		}
		err := u.cfg.Traces.UploadTraces(ctx, l.ID(), route.Team(), batch)
		switch {
		case err == nil:
			route.TracesCommitted(ctx)
			markDelivered(ctx, u, l, part, document.stepOf, document.fpOf)
			l.Count("trace_documents", int64(len(part)))
			u.tel.TracesUploaded(1, len(part))
			if committed != nil {
				committed(part)
			}
		case platform.TracesNotEnabled(err):
			if moved, switched := route.MoveDocumentsToTable(ctx); moved {
				if switched {
					u.warn.Warn("traces-fallback\x00"+l.ID(), "Prime Traces is not enabled for this account: the run's episode documents go to the sample table (an evaluation's: its samples) instead",
						zap.String("run_id", l.ID()), zap.Error(err))
				}
				for _, d := range append(part, pending...) {
					onTable(d)
				}
				return nil
			}
			u.rejectDocuments(l, part, err)
		case platform.Permanent(err):
			u.rejectDocuments(l, part, err)
		default:
			fail(docLocs(part), err)
			if platform.Down(err) {
				down = err
			}
		}
	}
	return down
}

// stamped puts the platform run on every document (rft.StampRun says
// where); a document that cannot be stamped is rejected.
func (u *Uploader) stamped(l ObjectRun, docs []document, runType string) []document {
	out := docs[:0:0]
	for _, d := range docs {
		line, err := rft.StampRun(d.raw, l.ID(), runType)
		if err != nil {
			u.reject(l, reject.TracesRejected, 1, "traces\x00"+l.ID()+"\x00stamp", "Rejected an episode document that cannot carry the run",
				zap.Error(err))
			continue
		}
		d.line, d.fp = line, documentFingerprint(line)
		out = append(out, d)
	}
	return out
}

func (u *Uploader) rejectDocuments(l ObjectRun, part []document, err error) {
	u.reject(l, reject.TracesRejected, len(part), "traces\x00"+l.ID()+"\x00"+platform.Class(err), "Prime Traces refused a batch of episode documents: they are dropped",
		zap.Int("documents", len(part)), zap.Error(err))
}

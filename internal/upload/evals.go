package upload

import (
	"context"
	"encoding/binary"
	"encoding/json"

	"github.com/cespare/xxhash/v2"
	"go.uber.org/zap"

	"github.com/primeintellect/primeexporter/internal/platform"
	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/rft"
)

// EvalSample is one sample of an evaluation on its way to the platform:
// its compact JSON, the record it came from, and its fingerprint.
type EvalSample struct {
	JSON json.RawMessage
	Loc  Loc
	FP   uint64
}

// SampleFingerprint identifies the i-th sample of a record by what the
// record holds (origin: a native document's compact JSON, or the plain
// sample itself), not by the projected sample: a replayed record must
// find its samples delivered even where the projection numbers rollouts
// anew. It is apart from any row's or document's fingerprint in the same
// delivered set.
func SampleFingerprint(origin []byte, i int) uint64 {
	h := xxhash.New()
	_, _ = h.WriteString("eval-sample\x00")
	_, _ = h.Write(origin)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(i))
	_, _ = h.Write(n[:])
	return h.Sum64()
}

// UploadSamples appends an evaluation's samples in requests of at most
// 25 MiB, in order, leaving out the samples delivered before (a replay
// after a restart or a retry). It returns where the samples that reached
// the platform, or may have, came from, so the summary counts each once,
// and the records to retry.
//
// Appending is not replayable. A batch whose answer was lost is counted
// (eval_samples_uncertain), logged once per run, recorded as delivered
// and not sent again: a replay could store it twice. A batch refused for
// good is counted and dropped; one that provably never arrived (the
// platform down, 429) goes back to the collector's retry with every later
// batch, unsent. A sample too large for any request is rejected alone.
func (u *Uploader) UploadSamples(ctx context.Context, l ObjectRun, evals platform.Evals, samples []EvalSample) (sent []Loc, retry map[Loc]bool, err error) {
	pending, err := notYetDelivered(ctx, u, l, samples, func(EvalSample) int64 { return NoStep }, func(s EvalSample) uint64 { return s.FP })
	if err != nil {
		return nil, sampleLocs(samples), err
	}
	raw := make([]json.RawMessage, len(pending))
	for i, s := range pending {
		raw[i] = s.JSON
	}
	batches, tooLarge, invalid := rft.SampleBatches(raw)
	if n := len(tooLarge); n > 0 {
		u.reject(l, reject.EpisodeTooLarge, n, "samples\x00"+l.ID()+"\x00too_large",
			"Rejected evaluation samples larger than the 25 MiB one request takes", zap.Int("samples", n))
	}
	if n := len(invalid); n > 0 {
		u.reject(l, reject.BadBody, n, "samples\x00"+l.ID()+"\x00invalid",
			"Rejected evaluation samples that are not one JSON object", zap.Int("samples", n))
	}
	skip := map[int]bool{}
	for _, i := range append(tooLarge, invalid...) {
		skip[i] = true
	}
	kept := pending[:0:0]
	for i, s := range pending {
		if !skip[i] {
			kept = append(kept, s)
		}
	}

	var down error
	next := 0
	for _, batch := range batches {
		part := kept[next : next+len(batch)]
		next += len(batch)
		if down != nil {
			retry = addLocs(retry, part)
			continue
		}
		err := evals.AppendSamples(ctx, l.ID(), batch)
		rerr, isRFT := rft.AsError(err)
		switch {
		case err == nil:
		case isRFT && rerr.Ambiguous():
			u.reject(l, reject.SamplesUncertain, len(part), "samples\x00"+l.ID()+"\x00uncertain",
				"An append of evaluation samples lost its answer: they may be stored or lost, and are not sent again, since a replay could store them twice",
				zap.String("reason", string(reject.SamplesUncertain)), zap.Int("samples", len(part)), zap.Error(err))
		case platform.Permanent(err):
			u.reject(l, platform.RejectReason(err, reject.UploadRejected), len(part), "samples\x00"+l.ID()+"\x00"+platform.Class(err),
				"The platform refused a batch of evaluation samples: they are dropped", zap.Int("samples", len(part)), zap.Error(err))
			continue
		default:
			retry = addLocs(retry, part)
			down = err
			continue
		}
		fps := make([]uint64, len(part))
		for i, s := range part {
			fps[i] = s.FP
			sent = append(sent, s.Loc)
		}
		u.objects.markDelivered(ctx, l, NoStep, fps)
		u.tel.SamplesUploaded(len(part), 0, 0)
	}
	if down != nil {
		return sent, retry, platform.Retryable(down)
	}
	return sent, nil, nil
}

// EvalDocument is an evaluation's native document on its way to Prime
// Traces: the document as received, the record it came from, and its
// samples, which go to the samples route instead should Prime Traces turn
// the account away.
type EvalDocument struct {
	Raw     []byte
	Loc     Loc
	Samples []EvalSample
}

// UploadEvalDocuments sends an evaluation's native documents to Prime
// Traces, stamped with run.type "eval", as a training run's are sent
// (content-addressed batches, what was committed before left out). The
// documents of a run Prime Traces turned away before its first commit come
// back in onSamples: from then on the run's documents go to the samples
// route. It also returns where the documents Prime Traces committed came
// from, and the records to retry with the error to retry them with.
func (u *Uploader) UploadEvalDocuments(ctx context.Context, l ObjectRun, route Route, docs []EvalDocument) (onSamples []EvalDocument, committed []Loc, retry map[Loc]bool, err error) {
	in := make([]document, len(docs))
	for i := range docs {
		in[i] = document{raw: docs[i].Raw, loc: docs[i].Loc, eval: &docs[i], step: NoStep}
	}
	var errs []error
	fail := func(locs []Loc, err error) {
		if retry == nil {
			retry = map[Loc]bool{}
		}
		for _, loc := range locs {
			retry[loc] = true
		}
		errs = append(errs, err)
	}
	u.sendDocuments(ctx, l, route, in, runTypeEval, fail,
		func(d document) { onSamples = append(onSamples, *d.eval) },
		func(part []document) {
			for _, d := range part {
				committed = append(committed, d.eval.Loc)
			}
		})
	if len(errs) > 0 {
		return onSamples, committed, retry, platform.Retryable(platform.FirstRetryError(errs))
	}
	return onSamples, committed, nil, nil
}

// Traced says a run's native documents go to Prime Traces: it is on, and
// the run was not turned to its other destination (the sample table; an
// evaluation's samples route).
func (u *Uploader) Traced(route Route) bool { return u.cfg.Traces != nil && !route.DocumentsOnTable() }

func sampleLocs(samples []EvalSample) map[Loc]bool {
	return addLocs(nil, samples)
}

func addLocs(m map[Loc]bool, samples []EvalSample) map[Loc]bool {
	if m == nil {
		m = map[Loc]bool{}
	}
	for _, s := range samples {
		m[s.Loc] = true
	}
	return m
}

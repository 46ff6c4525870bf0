package evalsample

import (
	"encoding/json"
	"errors"
	"strconv"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/primeintellect/primeexporter/internal/reject"
	"github.com/primeintellect/primeexporter/internal/sampletable"
	"github.com/primeintellect/primeexporter/rft"
)

// maxSampleBytes is the most one sample may take: a samples request with
// it alone must stay within the route's 25 MiB.
const maxSampleBytes = rft.MaxSamplesRequestBytes - len(`{"samples":[]}`)

// keySampleID is the key a sample passed through as it is must carry.
const keySampleID = "sample_id"

// Result is one prime.episode record of an evaluation, mapped.
type Result struct {
	// Samples are the record's v0 samples as compact JSON, in order: a
	// plain sample as it is; a native document's one sample, or one per
	// trace when that one would not fit a request (PerTrace); none for a
	// document without traces.
	Samples []json.RawMessage
	// PerTrace tells a native document too large for one sample.
	PerTrace bool
	// Episode is what the record tells the evaluation's summary
	// (Summary.AddEpisode).
	Episode Episode
	// Document is a native document as compact JSON, what Prime Traces
	// takes; nil for a plain sample. It shares the record body's memory,
	// as sampletable.Record.Document does: read it, never write to it.
	Document []byte
}

// Episode is what one episode tells an evaluation's summary.
type Episode struct {
	// OK is false for an episode that failed: a native document's ok not
	// true, a plain sample's error present and not null.
	OK bool
	// Traces are the episode's traces; a plain sample is one.
	Traces []Trace
}

// Trace is what one trace tells an evaluation's summary.
type Trace struct {
	// Trainable traces alone are averaged, unless the run has none.
	Trainable bool
	// Reward counts when HasReward; it may be NaN or ±Inf.
	Reward    float64
	HasReward bool
	// Metrics are the trace's sub-reward scores and metrics, merged as
	// the SDK merges them ({**scores, **metrics}: a metric replaces the
	// score of its name).
	Metrics []Metric
}

// Metric is a named number of a trace.
type Metric struct {
	Name  string
	Value float64
}

// FromRecord maps the body of one prime.episode record of an evaluation
// to its v0 samples and what it tells the summary. A native document
// (a map, or a string holding a JSON object, with a top-level traces
// list) is projected as the SDK's build_samples projects it, its
// rollout_number drawn from counters for its example; any other object is
// one sample as it is and must carry sample_id. The record's attributes
// are not read: the document is the episode, and a plain sample is the
// platform's row already.
//
// Every error is a *reject.Rejection: the body's (reject.BadBody), a
// document whose shape the projection cannot follow (reject.BadValue), a
// plain sample without sample_id (reject.NoSampleID), a sample too large
// for any samples request (reject.EpisodeTooLarge).
func FromRecord(body pcommon.Value, counters *Counters) (Result, error) {
	return fromRecord(body, counters, maxSampleBytes)
}

// fromRecord takes the sample limit, so that tests need not build 25 MiB
// samples to reach it.
func fromRecord(body pcommon.Value, counters *Counters, limit int) (Result, error) {
	b, err := sampletable.ReadEvalBody(body)
	if err != nil {
		return Result{}, err
	}
	if !b.IsDocument() {
		return plainSample(b.Object(), limit)
	}
	ep, err := b.ProjectV0(counters.Next)
	if err != nil {
		return Result{}, err
	}
	// Not a copy, for the reason sampletable.Record.Document is not one:
	// the document's one reader (the Prime Traces upload) only reads it.
	doc := unsafe.Slice(unsafe.StringData(ep.Document), len(ep.Document))
	res := Result{PerTrace: ep.PerTrace, Document: doc, Episode: Episode{OK: ep.OK}}
	for _, s := range ep.Samples {
		if err := checkSize(s, limit); err != nil {
			return Result{}, err
		}
		res.Samples = append(res.Samples, json.RawMessage(s))
	}
	res.Episode.Traces = make([]Trace, len(ep.Traces))
	for i, tv := range ep.Traces {
		res.Episode.Traces[i] = Trace{Trainable: tv.Trainable, Reward: tv.Reward, HasReward: true,
			Metrics: merged(tv.Scores, tv.Metrics)}
	}
	return res, nil
}

// merged is {**scores, **metrics}: names in first-seen order, a later
// value replacing an earlier one of the same name.
func merged(lists ...[]sampletable.NamedValue) []Metric {
	var out []Metric
	at := map[string]int{}
	for _, l := range lists {
		for _, nv := range l {
			if i, ok := at[nv.Name]; ok {
				out[i].Value = nv.Value
				continue
			}
			at[nv.Name] = len(out)
			out = append(out, Metric{nv.Name, nv.Value})
		}
	}
	return out
}

// plainSample takes a body that is not a native document as one sample,
// as it is. What it tells the summary is read from its reward, metrics,
// error and trainable keys, when it has them.
func plainSample(object string, limit int) (Result, error) {
	hasID := false
	tr := Trace{}
	ep := Episode{OK: true}
	sampletable.EachMember(object, func(k, v string) bool {
		switch k {
		case keySampleID:
			hasID = v != "null"
		case "reward":
			tr.Reward, tr.HasReward = number(v)
		case "metrics":
			var values []sampletable.NamedValue
			sampletable.EachMember(v, func(name, mv string) bool {
				if x, ok := number(mv); ok {
					values = append(values, sampletable.NamedValue{Name: name, Value: x})
				}
				return true
			})
			tr.Metrics = merged(values)
		case "error":
			ep.OK = v == "null"
		case "trainable":
			tr.Trainable = v == "true"
		}
		return true
	})
	if !hasID {
		return Result{}, reject.New(reject.NoSampleID, "body."+keySampleID,
			"prime.episode: an evaluation's episode body that is not a native document (no traces list) is sent as a sample as it is, and must carry %s", keySampleID)
	}
	if err := checkSize(object, limit); err != nil {
		return Result{}, err
	}
	ep.Traces = []Trace{tr}
	return Result{Samples: []json.RawMessage{json.RawMessage(object)}, Episode: ep}, nil
}

// number reads JSON number text.
func number(text string) (float64, bool) {
	if text == "" || (text[0] != '-' && (text[0] < '0' || text[0] > '9')) {
		return 0, false
	}
	x, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return x, true // past float64's range: ±Inf, as Python reads it
}

// checkSize rejects a sample that no samples request can carry: the SDK
// refuses to send it rather than drop it silently, and so does the
// exporter, naming it.
func checkSize(sample string, limit int) error {
	if len(sample) <= limit {
		return nil
	}
	return reject.New(reject.EpisodeTooLarge, "body",
		"prime.episode: a sample of %d bytes cannot be sent: a samples request carries at most %d bytes, %d of them for one sample",
		len(sample), rft.MaxSamplesRequestBytes, limit)
}

package rft

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// MaxSamplesRequestBytes is the most one samples request (route 4) may
// carry: 25 MiB of body, counting the envelope {"samples":[]}, each
// sample's compact JSON and one byte per comma between samples.
const MaxSamplesRequestBytes = 25 << 20

// The samples body is {"samples":[s0,s1,…]}, written by hand so that what
// is sent is exactly what SampleBatches counted.
const (
	samplesOpen     = `{"samples":[`
	samplesClose    = `]}`
	samplesEnvelope = len(samplesOpen) + len(samplesClose) // 14 bytes: {"samples":[]}
)

// SampleBatches cuts samples, in order, into the requests of route 4: a
// batch takes samples while its request body (the envelope, each sample's
// compact JSON, the commas between them) stays within 25 MiB, and closes
// before the sample that would pass it, which starts the next batch. The
// size is that of the body AppendSamples sends, byte for byte: the sample
// as given, compacted, nothing re-escaped.
//
// A sample that cannot fit even alone is never split, dropped silently or
// sent: its index is returned in tooLarge, and the samples around it are
// batched as if it were not there. A sample that is not one JSON object in
// valid UTF-8 is returned in invalid the same way. The batches hold the
// caller's slices.
func SampleBatches(samples []json.RawMessage) (batches [][]json.RawMessage, tooLarge, invalid []int) {
	return sampleBatches(samples, MaxSamplesRequestBytes)
}

// sampleBatches takes the limit as a parameter so that tests can cut at a
// few bytes as well as at 25 MiB.
func sampleBatches(samples []json.RawMessage, limit int) (batches [][]json.RawMessage, tooLarge, invalid []int) {
	var scratch bytes.Buffer
	var cur []json.RawMessage
	size := samplesEnvelope
	for i, s := range samples {
		scratch.Reset() // only the length is wanted
		n, why := compactSample(&scratch, s)
		switch {
		case why != "":
			invalid = append(invalid, i)
			continue
		case samplesEnvelope+n > limit:
			tooLarge = append(tooLarge, i)
			continue
		}
		grown := size + n
		if len(cur) > 0 {
			grown++ // the comma before it
		}
		if len(cur) > 0 && grown > limit {
			batches = append(batches, cur)
			cur, grown = nil, samplesEnvelope+n
		}
		cur = append(cur, s)
		size = grown
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches, tooLarge, invalid
}

// samplesBody is the request body of route 4, and why it cannot be sent
// ("" when it can): no samples, a sample that is not a JSON object, or a
// body over the limit.
func samplesBody(samples []json.RawMessage, limit int) (body []byte, why string) {
	if len(samples) == 0 {
		return nil, "no samples"
	}
	var b bytes.Buffer
	b.WriteString(samplesOpen)
	for i, s := range samples {
		if i > 0 {
			b.WriteByte(',')
		}
		if _, why := compactSample(&b, s); why != "" {
			return nil, "sample " + strconv.Itoa(i) + " " + why
		}
		if b.Len()+len(samplesClose) > limit {
			return nil, "the samples are more than the " + strconv.Itoa(limit) + " bytes one request may carry: cut them with SampleBatches"
		}
	}
	b.WriteString(samplesClose)
	return b.Bytes(), ""
}

// compactSample appends the compact form of one sample to b and returns
// its length, or why it is not a sample. On failure b is left as it was.
func compactSample(b *bytes.Buffer, s json.RawMessage) (n int, why string) {
	start := b.Len()
	if !utf8.Valid(s) {
		return 0, "is not valid UTF-8"
	}
	if err := json.Compact(b, s); err != nil {
		b.Truncate(start)
		return 0, "is not valid JSON: " + err.Error()
	}
	if b.Len() == start || b.Bytes()[start] != '{' {
		b.Truncate(start)
		return 0, "is not a JSON object"
	}
	return b.Len() - start, ""
}

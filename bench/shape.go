package main

import (
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"
)

// shape is one kind of episode the load is made of (issue 34): each is
// reported apart, since what a record costs the exporter depends on how
// its text is laid out, not only on its size.
type shape struct {
	name string
	// scope is the instrumentation scope the sender's logger names.
	scope string
	// fill writes ep into lr as the shape's sender would: event name,
	// timestamp, prime.work.step and body.
	fill func(lr plog.LogRecord, ep episode)
}

// newShapes builds every shape, in report order. plain is the bench's
// first load (issue 11), kept so figures stay comparable with earlier runs;
// the others are what a verifiers trainer sends through prime-otel.
func newShapes() ([]shape, error) {
	native, err := newNativeShape()
	if err != nil {
		return nil, err
	}
	return []shape{
		{name: "plain", scope: "verifiers", fill: fillEpisode},
		{name: "verifiers", scope: primeOtelScope, fill: fillVerifiers},
		native,
		{name: "tokens", scope: primeOtelScope, fill: fillTokens},
	}, nil
}

// primeOtelScope is the logger prime-otel's pipeline emits on
// (python/src/prime_otel/_otel.py).
const primeOtelScope = "prime_otel"

// pickShapes is the shapes named in list (comma-separated), in the order
// given.
func pickShapes(all []shape, list string) ([]shape, error) {
	var out []shape
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(all, func(s shape) bool { return s.name == name })
		if i < 0 {
			names := make([]string, len(all))
			for j, s := range all {
				names[j] = s.name
			}
			return nil, fmt.Errorf("unknown shape %q (want some of %s)", name, strings.Join(names, ","))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// episodePadding is the filler that brings an episode of shape s to about
// size bytes of encoded record. A shape repeats some of its filler (the
// prompt in every branch), so the filler's share is measured, not assumed:
// two probe records give the fixed part and the bytes per byte of filler.
// A shape whose fixed part is already larger than size gets no filler.
func episodePadding(s shape, size int) int {
	const probe = 10_000
	recordSize := func(padding int) int {
		lr := plog.NewLogRecord()
		s.fill(lr, episode{seed: 1, step: 10, problemID: 1, timestamp: 1, padding: padding})
		var m plog.ProtoMarshaler
		return m.LogRecordSize(lr)
	}
	fixed := recordSize(0)
	perByte := float64(recordSize(probe)-fixed) / probe
	return max(0, int(float64(size-fixed)/perByte))
}

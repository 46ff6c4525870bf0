package main

import (
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
)

// loadSpec sizes one load.
type loadSpec struct {
	name         string // how the tables name it, e.g. "verifiers-2KB": shape and size
	shape        shape
	size         string // the size's name, e.g. "2KB"
	large        bool   // the large episodes, which issue 34's targets set apart
	episodes     int
	episodeBytes int // the encoded size of one episode record, about
	perRequest   int // episodes per OTLP request, as a trainer's SDK batches them
	perStep      int // episodes of one run's step
	runs         int // runs carried at once, as a gateway carries many
}

// load is a built load: every request's protobuf bytes, in send order.
type load struct {
	spec     loadSpec
	requests [][]byte
	bytes    int64 // all requests together
}

// request is one planned OTLP request: count episodes of one run's step.
type request struct {
	run, first, count int
	step              int64
}

// plan orders the requests step by step, and within a step run by run, the
// way many trainers progressing together reach a gateway. Steps are
// multiples of 10, the exporter's default samples.step_interval, so every
// episode gets a row.
func plan(spec loadSpec) []request {
	var out []request
	next := 0
	for step := int64(0); next < spec.episodes; step += 10 {
		for run := 0; run < spec.runs && next < spec.episodes; run++ {
			for left := min(spec.perStep, spec.episodes-next); left > 0; {
				n := min(spec.perRequest, left)
				out = append(out, request{run: run, step: step, first: next, count: n})
				next += n
				left -= n
			}
		}
	}
	return out
}

// buildLoad encodes every request of spec, on workers goroutines.
func buildLoad(spec loadSpec, workers int) (*load, error) {
	reqs := plan(spec)
	padding := episodePadding(spec.shape, spec.episodeBytes)
	// Distinct timestamps, with the chat text, keep every episode distinct
	// to the exporter's replay detection.
	base := pcommon.NewTimestampFromTime(time.Now().Truncate(time.Second))

	l := &load{spec: spec, requests: make([][]byte, len(reqs))}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(reqs); i += workers {
				l.requests[i], errs[w] = encodeRequest(spec, reqs[i], padding, base)
				if errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for _, b := range l.requests {
		l.bytes += int64(len(b))
	}
	return l, nil
}

// encodeRequest builds one request: one resource (a run), one scope, its
// episodes.
func encodeRequest(spec loadSpec, req request, padding int, base pcommon.Timestamp) ([]byte, error) {
	logs := plog.NewLogs()
	rl := logs.ResourceLogs().AppendEmpty()
	attrs := rl.Resource().Attributes()
	attrs.PutStr("service.name", "primebench")
	attrs.PutStr("prime.run.key", fmt.Sprintf("bench-%s-run-%d", spec.name, req.run))
	attrs.PutStr("prime.run.model", "Qwen/Qwen3-8B")
	attrs.PutStr("prime.run.name", fmt.Sprintf("bench %s run %d", spec.name, req.run))
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(spec.shape.scope)
	records := sl.LogRecords()
	records.EnsureCapacity(req.count)
	for i := req.first; i < req.first+req.count; i++ {
		spec.shape.fill(records.AppendEmpty(), episode{
			seed:      uint64(i) + 1,
			step:      req.step,
			problemID: int64(i % spec.perStep),
			timestamp: base + pcommon.Timestamp(i)*pcommon.Timestamp(time.Microsecond),
			padding:   padding,
		})
	}
	return plogotlp.NewExportRequestFromLogs(logs).MarshalProto()
}

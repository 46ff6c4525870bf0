package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// BenchmarkLoadEpisodes is the exporter's own work on the bench's
// episodes, shape by shape at 2 KB and 200 KB, in process: the mapping of
// a step's records into an arena, and the Parquet object they become. It
// is the part of prime's CPU per episode in scripts/bench.sh that `debug`
// does not pay, without the receiver, the queue and the platform's round
// trips around it, so that a change to it can be timed (and profiled, with
// -cpuprofile) in a minute where the collector's figure moves by a fifth
// between runs. The shape verifiers-map is the verifiers episode sent as a
// pdata map rather than JSON text (as plain is), which tells the cost of
// the episode's layout from that of its encoding.
func BenchmarkLoadEpisodes(b *testing.B) {
	shapes := testShapes(b)
	verifiers, err := pickShapes(shapes, "verifiers")
	if err != nil {
		b.Fatal(err)
	}
	shapes = append(shapes, shape{name: "verifiers-map", scope: verifiers[0].scope, fill: func(lr plog.LogRecord, ep episode) {
		verifiers[0].fill(lr, ep)
		var doc map[string]any
		if err := json.Unmarshal([]byte(lr.Body().Str()), &doc); err != nil {
			b.Fatal(err)
		}
		if err := lr.Body().SetEmptyMap().FromRaw(doc); err != nil {
			b.Fatal(err)
		}
	}})
	for _, sh := range shapes {
		for _, size := range []struct {
			bytes, episodes int
		}{{2 << 10, 1024}, {200 << 10, 32}} {
			b.Run(sh.name+"/"+sizeName(size.bytes), func(b *testing.B) {
				benchmarkEpisodes(b, loadSpec{name: "b", shape: sh, episodes: size.episodes, episodeBytes: size.bytes, perRequest: 256, perStep: size.episodes, runs: 1})
			})
		}
	}
}

func benchmarkEpisodes(b *testing.B, spec loadSpec) {
	l, err := buildLoad(spec, 2)
	if err != nil {
		b.Fatal(err)
	}
	var records []plog.LogRecord
	for _, raw := range l.requests {
		req := plogotlp.NewExportRequest()
		if err := req.UnmarshalProto(raw); err != nil {
			b.Fatal(err)
		}
		for _, rl := range req.Logs().ResourceLogs().All() {
			for _, sl := range rl.ScopeLogs().All() {
				for _, lr := range sl.LogRecords().All() {
					records = append(records, lr)
				}
			}
		}
	}
	now := time.Now()
	pool := sampletable.NewArenaPool(64)
	enc := sampletable.NewEncoder()
	rows := make([]sampletable.Episode, 0, len(records))
	var out bytes.Buffer
	for _, stage := range []string{"map", "map+encode"} {
		b.Run(stage, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				a := pool.Arena()
				rows = rows[:0]
				for _, lr := range records {
					rec, err := sampletable.FromRecordIn(a, lr.Attributes(), lr.Body(), lr.Timestamp(), lr.ObservedTimestamp(), now)
					if err != nil {
						b.Fatal(err)
					}
					rows = append(rows, rec.Rows...)
				}
				if stage == "map+encode" {
					out.Reset()
					if err := enc.Encode(&out, "bench-run", rows[0].Step, 0, rows); err != nil {
						b.Fatal(err)
					}
				}
				a.Release()
			}
			episodes := float64(b.N * len(records))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/episodes, "ns/episode")
			// On a machine shared with other work the process's CPU time
			// is the steadier figure: time spent waiting for a core is not
			// in it.
			b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/episodes, "cpu-ns/episode")
		})
	}
}

// processCPU is this process's CPU time, every thread's, the garbage
// collector's included.
func processCPU(b *testing.B) time.Duration {
	cpu, err := threadGroupCPU()
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

package main

import (
	"bytes"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// BenchmarkLoadEpisodes is the exporter's own work on the bench's 2 KB
// episodes, in process: the mapping of a step's records into an arena, and
// the Parquet object they become. It is the part of prime's CPU per episode
// in scripts/bench.sh that `debug` does not pay, without the receiver, the
// queue and the platform's round trips around it, so that a change to it
// can be timed in a minute where the collector's figure moves by a fifth
// between runs.
func BenchmarkLoadEpisodes(b *testing.B) {
	spec := loadSpec{name: "2KB", episodes: 1024, episodeBytes: 2 << 10, perRequest: 256, perStep: 1024, runs: 1}
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
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(records)), "ns/episode")
		})
	}
}

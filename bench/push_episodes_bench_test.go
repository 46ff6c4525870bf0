package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"

	"github.com/primeintellect/primeexporter"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// BenchmarkPushEpisodes is the prime exporter's whole push on the bench's
// episodes, shape by shape at 2 KB and 200 KB, in process: each request
// of a step mapped, fingerprinted, encoded and uploaded (presign, PUT,
// confirm) to the in-repo fake platform, which discards the objects. It
// is BenchmarkLoadEpisodes with what the exporter does around the
// mapping and the encoding, without the receiver and the queue: the
// requests are unmarshalled before the clock runs, as `debug` pays for
// that too. Each op pushes the load to runs of its own, so that nothing
// is a replay. The CPU per episode includes the fake platform's.
func BenchmarkPushEpisodes(b *testing.B) {
	for _, sh := range testShapes(b) {
		for _, size := range []struct {
			bytes, episodes int
		}{{2 << 10, 1024}, {200 << 10, 32}} {
			b.Run(sh.name+"/"+sizeName(size.bytes), func(b *testing.B) {
				l, err := buildLoad(loadSpec{name: "b", shape: sh, episodes: size.episodes, episodeBytes: size.bytes, perRequest: 256, perStep: size.episodes, runs: 1}, 2)
				if err != nil {
					b.Fatal(err)
				}
				exp := startPrime(b)
				var cpu time.Duration // the pushes', not the unmarshalling's
				op := 0
				for b.Loop() {
					b.StopTimer()
					batches := make([]plog.Logs, len(l.requests))
					for i, raw := range l.requests {
						req := plogotlp.NewExportRequest()
						if err := req.UnmarshalProto(raw); err != nil {
							b.Fatal(err)
						}
						// A run of the op's own: nothing it pushes is a
						// replay of an earlier op's.
						req.Logs().ResourceLogs().At(0).Resource().Attributes().PutStr("prime.run.key", fmt.Sprintf("bench-push-%d", op))
						batches[i] = req.Logs()
					}
					op++
					b.StartTimer()
					cpu0 := processCPU(b)
					for _, ld := range batches {
						if err := exp.ConsumeLogs(context.Background(), ld); err != nil {
							b.Fatal(err)
						}
					}
					cpu += processCPU(b) - cpu0
				}
				episodes := float64(b.N * size.episodes)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/episodes, "ns/episode")
				b.ReportMetric(float64(cpu.Nanoseconds())/episodes, "cpu-ns/episode")
			})
		}
	}
}

// pushExporter is the part of a started exporter the benchmark calls.
type pushExporter interface {
	ConsumeLogs(context.Context, plog.Logs) error
}

// startPrime starts the prime exporter against a fake platform that
// discards objects, without a sending queue or retries: ConsumeLogs
// returns once the push is done.
func startPrime(b *testing.B) pushExporter {
	fake := rfttest.NewServer(rfttest.Options{DiscardObjects: true})
	b.Cleanup(fake.Close)
	f := primeexporter.NewFactory()
	cfg := f.CreateDefaultConfig().(*primeexporter.Config)
	cfg.ClientConfig.Endpoint = fake.BaseURL()
	cfg.APIKey = configopaque.String(fake.APIKey())
	cfg.TeamID = "team-bench"
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := exp.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

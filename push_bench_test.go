package primeexporter

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/internal/flatparquet"
	"github.com/primeintellect/primeexporter/internal/metadata"
	"github.com/primeintellect/primeexporter/internal/sampletable"
	"github.com/primeintellect/primeexporter/rft/rfttest"
)

// pushShape is one benchmark batch: requests of perRequest episodes of one
// run and step, side by side as exporterhelper's batcher appends them,
// each episode's chat text about textBytes.
type pushShape struct {
	name                 string
	requests, perRequest int
	textBytes            int
}

func pushShapes() []pushShape {
	return []pushShape{
		{name: "2KB", requests: 4, perRequest: 256, textBytes: 2 << 10},
		{name: "200KB", requests: 4, perRequest: 8, textBytes: 200 << 10},
	}
}

// pushBatch builds the shape's batch for a run: prime.episode records whose
// trajectory has two branches, the second repeating the first's
// conversation, as a multi-turn verifiers rollout does.
func pushBatch(s pushShape, run string, seed uint64) plog.Logs {
	r := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("the of and to a in is that for it as was with be by on not this are or from at which answer step therefore compute value total number let solve check result")
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	ld := plog.NewLogs()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for q := range s.requests {
		rl := ld.ResourceLogs().AppendEmpty()
		resource(rl.Resource(), trainRun(run))
		records := rl.ScopeLogs().AppendEmpty().LogRecords()
		for i := range s.perRequest {
			lr := records.AppendEmpty()
			lr.SetEventName("prime.episode")
			lr.SetTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Duration(q*s.perRequest+i) * time.Microsecond)))
			lr.Attributes().PutInt("prime.work.step", 10)
			body := lr.Body().SetEmptyMap()
			question, reasoning := text(s.textBytes/4), text(s.textBytes-s.textBytes/4)
			body.PutStr("prompt", question)
			body.PutStr("answer", "42")
			body.PutDouble("reward", 1)
			body.PutDouble("advantage", r.Float64()-0.5)
			traj := body.PutEmptySlice("trajectory")
			history := [][2]string{{"system", "Think step by step."}, {"user", question}, {"assistant", reasoning}, {"user", "Tool result: 42"}, {"assistant", "The answer is 42."}}
			for _, end := range []int{3, 5} {
				msgs := traj.AppendEmpty().SetEmptyMap().PutEmptySlice("messages")
				for _, m := range history[:end] {
					msg := msgs.AppendEmpty().SetEmptyMap()
					msg.PutStr("role", m[0])
					msg.PutStr("content", m[1])
				}
			}
			body.PutEmptyMap("metrics").PutDouble("correct", 1)
		}
	}
	return ld
}

// BenchmarkPushLogs is the exporter's samples path end to end, from a
// batch's records to its confirmed objects: mapping, fingerprints, Parquet
// with Snappy, presign → PUT → confirm against the fake platform (which
// keeps no bytes). Each op is a new run's batch, so none is a replay.
// BenchmarkPushLogsSnappyFloor is its floor: Snappy over the same rows'
// cell text. MB/s counts that text in both.
func BenchmarkPushLogs(b *testing.B) {
	for _, s := range pushShapes() {
		b.Run(s.name, func(b *testing.B) {
			srv := rfttest.NewServer(rfttest.Options{APIKey: testAPIKey, DiscardObjects: true})
			b.Cleanup(srv.Close)
			cfg := createDefaultConfig().(*Config)
			cfg.ClientConfig.Endpoint = srv.BaseURL() + "/rft"
			cfg.APIKey = configopaque.String(testAPIKey)
			cfg.TeamID = "team-1"
			set := exportertest.NewNopSettings(metadata.Type)
			exp, err := newPrimeExporter(cfg, set)
			if err != nil {
				b.Fatal(err)
			}
			if err := exp.start(context.Background(), componenttest.NewNopHost()); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = exp.shutdown(context.Background()) })
			batches := make([]plog.Logs, 0, 8)
			for i := range cap(batches) {
				batches = append(batches, pushBatch(s, fmt.Sprintf("bench-%d", i), uint64(i)))
			}
			b.SetBytes(int64(len(cellText(b, batches[0]))))
			b.ReportAllocs()
			b.ResetTimer()
			n, gen := 0, 0
			for b.Loop() {
				if n == len(batches) { // new runs: nothing is a replay
					b.StopTimer()
					gen++
					for i := range batches {
						batches[i] = pushBatch(s, fmt.Sprintf("bench-%d-%d", gen, i), uint64(gen*len(batches)+i))
					}
					n = 0
					b.StartTimer()
				}
				if err := exp.pushLogs(context.Background(), batches[n]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(s.requests*s.perRequest*b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}

func BenchmarkPushLogsSnappyFloor(b *testing.B) {
	for _, s := range pushShapes() {
		b.Run(s.name, func(b *testing.B) {
			text := cellText(b, pushBatch(s, "bench", 1))
			dst := make([]byte, s2.MaxEncodedLen(flatparquet.PageSize))
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for b.Loop() {
				for at := 0; at < len(text); at += flatparquet.PageSize {
					s2.EncodeSnappy(dst, text[at:min(len(text), at+flatparquet.PageSize)])
				}
			}
			b.ReportMetric(float64(s.requests*s.perRequest*b.N)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
}

// cellText is the string cells of the batch's rows, as the table holds them.
func cellText(b *testing.B, ld plog.Logs) []byte {
	var text []byte
	for _, rl := range ld.ResourceLogs().All() {
		for _, lr := range rl.ScopeLogs().At(0).LogRecords().All() {
			rec, err := sampletable.FromRecord(lr.Attributes(), lr.Body(), lr.Timestamp(), lr.ObservedTimestamp(), time.Now())
			if err != nil {
				b.Fatal(err)
			}
			text = sampletable.AppendCellText(text, "run-00000000", rec.Step, rec.Rows)
		}
	}
	return text
}

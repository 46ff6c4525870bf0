package sampletable

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
)

// The hot path on verifiers-shaped episodes (shapes_test.go), as the
// uploader runs it (internal/upload): a step's records mapped into an
// arena, their rows encoded where they lie (EncodeRows), the arena
// released. BenchmarkVerifiersSnappyFloor is the floor under the same
// rows, so the two give issue 34's ratio in process: ns/episode of
// mapping and encoding against the floor's. MB/s counts the records' text.
//
//	go test -run '^$' -bench 'Verifiers' -count 6 ./internal/sampletable

func BenchmarkVerifiersMapAndEncode(b *testing.B) {
	for _, s := range verifiersShapes(b) {
		b.Run(s.name, func(b *testing.B) {
			bodies, attrs, textBytes := s.records(b)
			pool := NewArenaPool(64)
			enc := NewEncoder()
			var out bytes.Buffer
			eps := make([]Episode, 0, s.rows)
			ptrs := make([]*Episode, 0, s.rows)
			b.SetBytes(int64(textBytes))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			for b.Loop() {
				a := pool.Arena()
				eps = mapAll(b, a, bodies, attrs, eps)
				ptrs = ptrs[:0]
				for i := range eps {
					ptrs = append(ptrs, &eps[i])
				}
				out.Reset()
				if err := enc.EncodeRows(&out, "run-1", 20, 0, ptrs); err != nil {
					b.Fatal(err)
				}
				a.Release()
			}
			reportPerEpisode(b, s.rows, cpu0)
		})
	}
}

// BenchmarkVerifiersMap is the mapping alone, into an arena.
func BenchmarkVerifiersMap(b *testing.B) {
	for _, s := range verifiersShapes(b) {
		b.Run(s.name, func(b *testing.B) {
			bodies, attrs, textBytes := s.records(b)
			pool := NewArenaPool(64)
			eps := make([]Episode, 0, s.rows)
			b.SetBytes(int64(textBytes))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			for b.Loop() {
				a := pool.Arena()
				eps = mapAll(b, a, bodies, attrs, eps)
				a.Release()
			}
			reportPerEpisode(b, s.rows, cpu0)
		})
	}
}

// BenchmarkVerifiersSnappyFloor is Snappy over the same rows' cell text,
// column by column in pages of the writer's size (AppendCellText), as
// BenchmarkSnappyFloor is for the plain shapes.
func BenchmarkVerifiersSnappyFloor(b *testing.B) {
	for _, s := range verifiersShapes(b) {
		b.Run(s.name, func(b *testing.B) {
			bodies, attrs, textBytes := s.records(b)
			eps := mapAll(b, nil, bodies, attrs, nil)
			text := AppendCellText(nil, "run-1", 20, eps)
			dst := make([]byte, s2.MaxEncodedLen(PageSize))
			b.SetBytes(int64(textBytes))
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			for b.Loop() {
				for at := 0; at < len(text); at += PageSize {
					s2.EncodeSnappy(dst, text[at:min(len(text), at+PageSize)])
				}
			}
			reportPerEpisode(b, s.rows, cpu0)
		})
	}
}

// reportPerEpisode reports the wall time and the process's CPU time (all
// threads, the garbage collector's included) per episode since cpu0 was
// read. On a shared machine the CPU time is the steadier of the two: time
// spent waiting for a core is not in it.
func reportPerEpisode(b *testing.B, rows int, cpu0 time.Duration) {
	episodes := float64(rows * b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/episodes, "ns/episode")
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/episodes, "cpu-ns/episode")
}

// processCPU is the CPU time, user and system, of every thread of the
// process.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestEveryVerifiersShapeMapsToOneRowPerRecordOfAboutItsSize(t *testing.T) {
	for _, s := range verifiersShapes(t) {
		t.Run(s.name, func(t *testing.T) {
			bodies, attrs, textBytes := s.records(t)
			lo, hi := s.size*9/10, s.size*11/10
			if per := textBytes / s.rows; per < lo || per > hi {
				t.Errorf("a record holds %d bytes of text, want %d to %d", per, lo, hi)
			}
			for i, body := range bodies {
				rec := mustFromRecord(t, attrs, body)
				if len(rec.Rows) != 1 {
					t.Fatalf("record %d: %d rows, want one", i, len(rec.Rows))
				}
				ep := rec.Rows[0]
				if ep.Completion == nil || !strings.Contains(ep.Trajectory, (*ep.Completion)[1:len(*ep.Completion)-1]) {
					t.Fatalf("record %d: its trajectory does not repeat its completion", i)
				}
			}
		})
	}
}

func TestTheTokensShapeIsMostlyNumbersAtTwoHundredKB(t *testing.T) {
	for _, s := range verifiersShapes(t) {
		if s.name != "tokens/200KB" {
			continue
		}
		bodies, _, _ := s.records(t)
		doc := bodies[0].Str()
		digits := strings.Count(doc, ",") // about one per array element
		if digits*10 < len(doc) {
			t.Fatalf("%d commas in %d bytes: the document is not mostly arrays", digits, len(doc))
		}
		return
	}
	t.Fatal("no tokens/200KB shape")
}

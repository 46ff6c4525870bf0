package sampletable

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestRewritingTheRunIDChangesThatColumnAndNothingElse(t *testing.T) {
	full := episodeRow()
	sparse := Episode{Step: 10, Trajectory: `[{"advantage":null}]`, CreatedAt: time.UnixMicro(1).UTC()}
	var offline, online bytes.Buffer
	const rangeIdx = 5
	if err := NewEncoder().Encode(&offline, "offline-0123456789abcdef", 10, rangeIdx, []Episode{full, sparse, full}); err != nil {
		t.Fatal(err)
	}
	if err := NewEncoder().Encode(&online, "run-42", 10, rangeIdx, []Episode{full, sparse, full}); err != nil {
		t.Fatal(err)
	}

	got, err := RewriteRunID(offline.Bytes(), "run-42")
	if err != nil {
		t.Fatal(err)
	}
	gotRows, wantRows := cells(t, openParquet(t, got)), cells(t, openParquet(t, online.Bytes()))
	if len(gotRows) != len(wantRows) {
		t.Fatalf("%d rows, want %d", len(gotRows), len(wantRows))
	}
	for i := range wantRows {
		for _, col := range Schema().Fields() {
			if gotRows[i][col.Name] != wantRows[i][col.Name] {
				t.Errorf("row %d %s = %q, want %q (the object the exporter writes online)", i, col.Name, gotRows[i][col.Name], wantRows[i][col.Name])
			}
		}
	}
	if s := fileSchema(t, openParquet(t, got)); strings.Join(s, "\n") != strings.Join(wantSchema(), "\n") {
		t.Fatalf("schema changed:\n%s", strings.Join(s, "\n"))
	}
	if rgs := openParquet(t, got).Metadata().RowGroups; len(rgs) != 1 {
		t.Fatalf("%d row groups, want the encoder's one", len(rgs))
	}
}

func TestRewritingIsDeterministic(t *testing.T) {
	var offline bytes.Buffer
	if err := NewEncoder().Encode(&offline, "offline-1", 10, 0, []Episode{episodeRow()}); err != nil {
		t.Fatal(err)
	}
	a, err := RewriteRunID(offline.Bytes(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := RewriteRunID(offline.Bytes(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	// A resumed sync PUTs the same bytes to a URL it minted before.
	if !bytes.Equal(a, b) {
		t.Fatal("two rewrites of one object differ")
	}
}

func TestRewritingRefusesWhatIsNotASampleObject(t *testing.T) {
	for name, src := range map[string][]byte{
		"not parquet": []byte("PAR1 but no more"),
		"empty":       nil,
	} {
		if _, err := RewriteRunID(src, "run-1"); err == nil || !strings.Contains(err.Error(), "sampletable: reading the object") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestARewrittenObjectIsByteForByteTheOneTheExporterWritesOnline(t *testing.T) {
	eps := []Episode{episodeRow(), episodeRow()}
	var offline, online bytes.Buffer
	if err := NewEncoder().Encode(&offline, "offline-0123456789abcdef", 10, 2, eps); err != nil {
		t.Fatal(err)
	}
	if err := NewEncoder().Encode(&online, "run-42", 10, 2, eps); err != nil {
		t.Fatal(err)
	}
	got, err := RewriteRunID(offline.Bytes(), "run-42")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, online.Bytes()) {
		t.Fatalf("rewritten object of %d bytes differs from the online one of %d", len(got), len(online.Bytes()))
	}
}

// BenchmarkRewriteRunID is prime-sync's CPU per object: 100 episodes of
// ~2 KB, one step's table. Its floor is BenchmarkPqarrowFloor's write.
func BenchmarkRewriteRunID(b *testing.B) {
	eps := make([]Episode, 100)
	for i := range eps {
		eps[i] = episodeRow()
		eps[i].Trajectory = strings.Repeat(`{"role":"assistant","content":"x"},`, 60)
	}
	var offline bytes.Buffer
	if err := NewEncoder().Encode(&offline, "offline-0123456789abcdef", 10, 0, eps); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(offline.Len()))
	for b.Loop() {
		if _, err := RewriteRunID(offline.Bytes(), "run-42"); err != nil {
			b.Fatal(err)
		}
	}
}

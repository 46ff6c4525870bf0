package runs

import (
	"context"
	"sync"
	"testing"

	"github.com/primeintellect/primeexporter/internal/memstorage"
)

// markRange marks fingerprints [from, to) of run in markings of size each.
func markRange(t *testing.T, s *ExtensionStore, run string, from, to, size int) {
	t.Helper()
	for start := from; start < to; start += size {
		var fps []uint64
		for fp := start; fp < min(to, start+size); fp++ {
			fps = append(fps, uint64(fp))
		}
		if err := s.MarkDelivered(context.Background(), run, fps); err != nil {
			t.Fatal(err)
		}
	}
}

func delivered(t *testing.T, s *ExtensionStore, run string, fp int) bool {
	t.Helper()
	got, err := s.Delivered(context.Background(), run, []uint64{uint64(fp)})
	if err != nil {
		t.Fatal(err)
	}
	return got[0]
}

func TestAStoredRunKeepsItsNewestDeliveredEpisodesWithinTheBoundAcrossARestart(t *testing.T) {
	const size = 4096
	client := memstorage.New()
	s := NewExtensionStore(client, ExtensionOptions{})
	other := "key\x00other/run" // a key with the separator in it
	markRange(t, s, other, 0, 10, 10)

	half := maxStoredDelivered / 2
	markRange(t, s, "key\x00long", 0, half, size)
	// A restart: a new store on the same storage goes on with the log.
	s = NewExtensionStore(client, ExtensionOptions{})
	markRange(t, s, "key\x00long", half, 2*maxStoredDelivered, size)

	if got := client.Keys(storeEpPrefix + "key\x00long/"); got > maxStoredDelivered {
		t.Fatalf("%d fingerprints stored for the run, bound %d", got, maxStoredDelivered)
	}
	for _, tc := range []struct {
		name string
		run  string
		fp   int
		want bool
	}{
		{"the newest is kept", "key\x00long", 2*maxStoredDelivered - 1, true},
		{"the newest bound's worth is kept", "key\x00long", maxStoredDelivered + size, true},
		{"the oldest is deleted", "key\x00long", 0, false},
		{"the last before the restart is deleted in turn", "key\x00long", half - 1, false},
		{"another run's are untouched", other, 9, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := delivered(t, s, tc.run, tc.fp); got != tc.want {
				t.Fatalf("Delivered(%q, %d) = %v, want %v", tc.run, tc.fp, got, tc.want)
			}
		})
	}
	// The log holds no more chunks than the kept fingerprints fill.
	if chunks := client.Keys(storeLogPrefix); chunks > maxStoredDelivered/size+2 {
		t.Fatalf("%d log chunks kept", chunks)
	}
}

func TestFingerprintsStoredBeforeTheLogStayDelivered(t *testing.T) {
	client := memstorage.New()
	// What an earlier release wrote: the fingerprint keys alone.
	_ = client.Set(context.Background(), episodeKey("key\x00r", 7), []byte{1})
	s := NewExtensionStore(client, ExtensionOptions{})
	markRange(t, s, "key\x00r", 100, 110, 5)
	if !delivered(t, s, "key\x00r", 7) || !delivered(t, s, "key\x00r", 105) {
		t.Fatal("a fingerprint from before the log, or a logged one, is not delivered")
	}
}

func TestConcurrentMarkingsOfOneRunKeepItsLogConsistent(t *testing.T) {
	client := memstorage.New()
	s := NewExtensionStore(client, ExtensionOptions{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() { markRange(t, s, "key\x00r", w*1000, (w+1)*1000, 100) })
	}
	wg.Wait()
	lg, err := NewExtensionStore(client, ExtensionOptions{}).deliveredLog(context.Background(), "key\x00r")
	if err != nil {
		t.Fatal(err)
	}
	if lg.Held != 8000 || lg.Next-lg.First != 80 || client.Keys(storeLogPrefix) != 80 {
		t.Fatalf("log %+v with %d chunks stored, want 8000 fingerprints in 80 chunks", lg, client.Keys(storeLogPrefix))
	}
}

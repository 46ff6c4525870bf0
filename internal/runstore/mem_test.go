package runstore

import (
	"context"
	"slices"
	"testing"
)

func TestTheMemStoreRemembersDeliveredEpisodesPerRun(t *testing.T) {
	ctx := context.Background()
	m := NewMemStore()
	if err := m.MarkDelivered(ctx, "run-a", 0, []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  string
		fps  []uint64
		want []bool
	}{
		{"its own episodes", "run-a", []uint64{1, 2, 3}, []bool{true, true, false}},
		{"another run's fingerprints are not its own", "run-b", []uint64{1, 2}, []bool{false, false}},
		{"nothing asked", "run-a", nil, []bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Delivered(ctx, tc.run, 0, tc.fps)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Delivered = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestTheMemStoreKeepsTheNewestFingerprintsWithinItsBound(t *testing.T) {
	ctx := context.Background()
	m := NewMemStore()
	total := maxMemDelivered + maxMemDelivered/4
	for start := 0; start < total; start += 1000 {
		fps := make([]uint64, 0, 1000)
		for fp := start; fp < min(total, start+1000); fp++ {
			fps = append(fps, uint64(fp))
		}
		run := "run-a"
		if start%2000 == 0 {
			run = "run-b"
		}
		if err := m.MarkDelivered(ctx, run, 0, fps); err != nil {
			t.Fatal(err)
		}
	}
	held := 0
	for _, gen := range []map[string]map[uint64]struct{}{m.cur, m.old} {
		for _, set := range gen {
			held += len(set)
		}
	}
	if held > maxMemDelivered {
		t.Fatalf("%d fingerprints held, bound %d", held, maxMemDelivered)
	}
	// The newest half of the bound is always there.
	for fp := total - maxMemDelivered/2; fp < total; fp++ {
		run := "run-a"
		if (fp/1000*1000)%2000 == 0 {
			run = "run-b"
		}
		if got, _ := m.Delivered(ctx, run, 0, []uint64{uint64(fp)}); !got[0] {
			t.Fatalf("fingerprint %d of %s, among the newest, is forgotten", fp, run)
		}
	}
	if got, _ := m.Delivered(ctx, "run-b", 0, []uint64{0}); got[0] {
		t.Fatal("the oldest fingerprint is still held past the bound")
	}
}

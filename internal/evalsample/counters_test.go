package evalsample

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestCountersNumberEachExampleFromOne(t *testing.T) {
	tests := []struct {
		name     string
		counters *Counters
		keys     []string
		want     []int64
	}{
		{"the zero value", &Counters{}, []string{"1", "1", "2", "1"}, []int64{1, 2, 1, 3}},
		{"null is an example like any other", NewCounters(0), []string{"null", "null", "1"}, []int64{1, 2, 1}},
		// Past the limit the example numbered least recently is forgotten:
		// "2" goes when "3" comes, and starts over.
		{"a limit of two", NewCounters(2), []string{"1", "2", "1", "3", "1", "2"}, []int64{1, 1, 2, 1, 3, 1}},
		{"nil remembers nothing", nil, []string{"1", "1"}, []int64{1, 1}},
		// Long ids are kept by their hash: still one count per id.
		{"long example ids", NewCounters(0), []string{`"` + strings.Repeat("a", 100) + `"`, `"` + strings.Repeat("b", 100) + `"`,
			`"` + strings.Repeat("a", 100) + `"`}, []int64{1, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int64
			for _, k := range tt.keys {
				got = append(got, tt.counters.Next(k))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("numbers %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCountersGiveEveryRolloutItsOwnNumberUnderConcurrentUse(t *testing.T) {
	c := NewCounters(0)
	const workers, each = 8, 200
	got := make(chan int64, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				got <- c.Next("7")
			}
		})
	}
	wg.Wait()
	close(got)
	var all []int64
	for n := range got {
		all = append(all, n)
	}
	slices.Sort(all)
	for i, n := range all {
		if n != int64(i+1) {
			t.Fatalf("numbers are not 1 to %d once each: %d at %d", workers*each, n, i)
		}
	}
}

func TestCountersCarryTheirNumberingAcrossARestart(t *testing.T) {
	before := NewCounters(2)
	for _, k := range []string{"1", "2", "1"} {
		before.Next(k)
	}
	saved, err := json.Marshal(before)
	if err != nil {
		t.Fatal(err)
	}
	after := NewCounters(2)
	if err := json.Unmarshal(saved, after); err != nil {
		t.Fatal(err)
	}
	// "2" was numbered least recently, so a third example pushes it out,
	// and "1" goes on where it was.
	after.Next("3")
	if n := after.Next("1"); n != 3 {
		t.Fatalf(`example "1" restarts at %d, want 3`, n)
	}
	if n := after.Next("2"); n != 1 {
		t.Fatalf(`example "2" is %d, want forgotten (1)`, n)
	}
	if err := json.Unmarshal([]byte(`{"k":1}`), after); err == nil {
		t.Fatal("counters took JSON that is not theirs")
	}
}

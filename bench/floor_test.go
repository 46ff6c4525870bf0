package main

import (
	"strings"
	"testing"
)

func TestTheFloorsTextIsTheLoadsCellsColumnByColumn(t *testing.T) {
	spec := loadSpec{name: "t", shape: plainShape(t), episodes: 40, episodeBytes: 2 << 10, perRequest: 16, perStep: 20, runs: 2}
	l, err := buildLoad(spec, 2)
	if err != nil {
		t.Fatal(err)
	}
	ft, err := sampleFloorText(l)
	if err != nil {
		t.Fatal(err)
	}
	if ft.episodes != spec.episodes {
		t.Fatalf("%d episodes, want the load's %d", ft.episodes, spec.episodes)
	}
	// run_id is the first column: every row's, then the next column's.
	if want := strings.Repeat("bench-run", spec.episodes); !strings.HasPrefix(string(ft.text), want) {
		t.Errorf("the text does not start with the run_id column: %.80q", ft.text)
	}
	if per := len(ft.text) / ft.episodes; per < 2<<10 {
		t.Errorf("%d bytes of cell text per episode, want more than the record's 2 KB (the trajectory repeats the prompt)", per)
	}
}

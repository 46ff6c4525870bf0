package report

import (
	"math"
	"slices"
	"testing"
)

func TestThinLeavesASeriesOfAtMostMaxPointsAsItIs(t *testing.T) {
	x := []float64{1, 2, 3}
	y := []float64{5, 4, 6}
	tx, ty := thin(x, y, 3)
	if !slices.Equal(tx, x) || !slices.Equal(ty, y) {
		t.Fatalf("got %v %v", tx, ty)
	}
}

func TestThinKeepsEachBucketsMinimumAndMaximumInTheirOrderAtTheBucketsEnds(t *testing.T) {
	tests := []struct {
		name   string
		y      []float64
		wantX  []float64
		wantY  []float64
		points int
	}{
		{"a maximum before its minimum stays first", []float64{5, 9, 1, 2, 3, 3, 3, 3}, []float64{0, 3, 4, 7}, []float64{9, 1, 3, 3}, 4},
		{"a flat bucket gives its value twice", []float64{1, 1, 1, 1, 2, 3, 2, 3}, []float64{0, 3, 4, 7}, []float64{1, 1, 2, 3}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := make([]float64, len(tt.y))
			for i := range x {
				x[i] = float64(i)
			}
			tx, ty := thin(x, tt.y, tt.points)
			if !slices.Equal(tx, tt.wantX) || !slices.Equal(ty, tt.wantY) {
				t.Fatalf("got x %v y %v, want x %v y %v", tx, ty, tt.wantX, tt.wantY)
			}
		})
	}
}

func TestThinningTenThousandStepsKeepsASpikeAndAtMostMaxPoints(t *testing.T) {
	n := 10000
	x, y := make([]float64, n), make([]float64, n)
	for i := range n {
		x[i], y[i] = float64(i+1), math.Sin(float64(i)/100)
	}
	y[7777] = 50
	tx, ty := thin(x, y, MaxPoints)
	if len(tx) > MaxPoints || len(tx) != len(ty) {
		t.Fatalf("%d x and %d y points, want at most %d", len(tx), len(ty), MaxPoints)
	}
	if !slices.IsSorted(tx) {
		t.Fatal("thinned steps are out of order")
	}
	if i := slices.Index(ty, 50); i < 0 || tx[i] < 7778-20 || tx[i] > 7778+20 {
		t.Fatal("the spike at step 7778 was thinned away or moved by more than its bucket")
	}
	if tx[0] != 1 || tx[len(tx)-1] != float64(n) {
		t.Fatalf("first and last plotted steps %v, %v; want 1 and %d", tx[0], tx[len(tx)-1], n)
	}
}

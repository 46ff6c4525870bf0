package main

import (
	"math/rand/v2"
	"testing"
)

func TestProseAndCodeAreExactlyTheLengthAsked(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, gen := range []struct {
		name string
		make func(*rand.Rand, int) string
	}{{"prose", prose}, {"code", code}} {
		for _, n := range []int{0, 1, 2, 7, 31, 100, 1000, 65_537} {
			if got := len(gen.make(r, n)); got != n {
				t.Errorf("%s(%d) is %d bytes", gen.name, n, got)
			}
		}
	}
}

func TestJSONTextIsCompactAndLeavesAnglesAndAmpersandsAsTheyAre(t *testing.T) {
	if got := jsonText(map[string]any{"a": "<b> & \"c\"\n", "n": []int{1, 2}}); got != `{"a":"<b> & \"c\"\n","n":[1,2]}` {
		t.Errorf("jsonText = %s", got)
	}
}

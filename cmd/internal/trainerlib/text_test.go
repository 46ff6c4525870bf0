package trainerlib

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestEnvironmentNamesDropOwnerAndVersion(t *testing.T) {
	for in, want := range map[string][2]string{
		"primeintellect/vf-math@v3": {"vf-math", "primeintellect/vf-math"},
		"gsm8k":                     {"gsm8k", "gsm8k"},
		"owner/env":                 {"env", "owner/env"},
		"@v1":                       {"@v1", "@v1"},
	} {
		if got := [2]string{EnvShortName(in), EnvSlug(in)}; got != want {
			t.Errorf("%q: got %v, want %v", in, got, want)
		}
	}
}

func TestFillerIsExactlyNBytesOfWordsAndTheSameForOneSeed(t *testing.T) {
	words := strings.Fields("alpha beta gamma")
	for _, n := range []int{0, 1, 2, 7, 100, 1001} {
		got := Filler(rand.New(rand.NewPCG(1, 2)), words, n)
		if len(got) != n {
			t.Fatalf("Filler(%d) is %d bytes", n, len(got))
		}
		if n > 1 && (!strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ")) {
			t.Fatalf("Filler(%d) = %q, want a leading space and no trailing one", n, got)
		}
		if again := Filler(rand.New(rand.NewPCG(1, 2)), words, n); again != got {
			t.Fatalf("Filler(%d) differs for one seed", n)
		}
	}
	if Filler(rand.New(rand.NewPCG(1, 2)), words, -1) != "" {
		t.Fatal("a negative size gave text")
	}
}

func TestRoundToKeepsTheGivenDecimals(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		d    int
		want float64
	}{{1.23456, 2, 1.23}, {1.235, 1, 1.2}, {-0.00049, 3, -0}, {2.5, 0, 3}} {
		if got := RoundTo(tc.x, tc.d); got != tc.want {
			t.Errorf("RoundTo(%v, %d) = %v, want %v", tc.x, tc.d, got, tc.want)
		}
	}
}

package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/primeintellect/primeexporter/internal/sampletable"
)

// paths lists v's keys as paths in the order met, each once; array
// elements are one path ([]), so a longer array has the same structure.
func paths(v any, at string, seen map[string]bool, out *[]string) {
	switch v := v.(type) {
	case object:
		for _, m := range v {
			p := at + "." + m.key
			if !seen[p] {
				seen[p] = true
				*out = append(*out, p)
			}
			paths(m.value, p, seen, out)
		}
	case []any:
		for _, e := range v {
			paths(e, at+"[]", seen, out)
		}
	}
}

func structure(t *testing.T, text []byte) []string {
	t.Helper()
	v, err := readOrdered(text)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	paths(v, "", map[string]bool{}, &out)
	return out
}

func TestANativeEpisodeHasTheFixturesKeysInTheirOrderAtEverySize(t *testing.T) {
	want := structure(t, nativeFixture)
	for _, padding := range []int{0, 2000, 200_000} {
		text, err := nativeDocument(readFixture(t), episode{seed: 9, step: 30, problemID: 11, timestamp: 1, padding: padding})
		if err != nil {
			t.Fatal(err)
		}
		if got := structure(t, []byte(text)); !slices.Equal(got, want) {
			t.Errorf("padding %d: keys\n%s\nwant the fixture's\n%s", padding, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
}

func readFixture(t *testing.T) object {
	t.Helper()
	v, err := readOrdered(nativeFixture)
	if err != nil {
		t.Fatal(err)
	}
	return v.(object)
}

func TestANativeEpisodeProjectsToTheFixturesTwoBranchesWithItsStepAndProblem(t *testing.T) {
	sh, err := newNativeShape()
	if err != nil {
		t.Fatal(err)
	}
	lr := plog.NewLogRecord()
	sh.fill(lr, episode{seed: 9, step: 30, problemID: 11, timestamp: 1, padding: episodePadding(sh, 200<<10)})
	rec, err := sampletable.FromRecord(lr.Attributes(), lr.Body(), lr.Timestamp(), lr.ObservedTimestamp(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rec.Document == nil || len(rec.Rows) != 1 {
		t.Fatalf("not projected as one native document's row: %d rows", len(rec.Rows))
	}
	row := rec.Rows[0]
	if row.Step != 30 || row.ProblemID == nil || *row.ProblemID != 11 {
		t.Errorf("step %d, problem %v", row.Step, row.ProblemID)
	}
	branches, err := readOrdered([]byte(row.Trajectory))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(branches.([]any)); n != 2 {
		t.Errorf("%d branches, want the fixture's 2", n)
	}
	// The branches' token counts come from the calls' usage, which grows
	// with the text (the fixture's last branch has 6).
	if row.NumInputTokens == nil || *row.NumInputTokens < 100 {
		t.Errorf("num_input_tokens %d for a 200 KB episode", *row.NumInputTokens)
	}
}

package report

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestAStepsObjectsReadAsOneTableInSampleIDOrder(t *testing.T) {
	dir := t.TempDir()
	// Range 1 written first; its sample ids are 1<<32 + i, after range 0's.
	writeObject(t, dir, 10, 1, 2)
	writeObject(t, dir, 10, 0, 3)
	writeObject(t, dir, 20, 0, 1)
	writeFile(t, filepath.Join(dir, "samples", ".step_30_0.parquet.123"), "a write in progress")
	steps, err := readSteps(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0].Step != 10 || steps[1].Step != 20 {
		t.Fatalf("steps %+v, want 10 and 20", steps)
	}
	st := steps[0]
	if st.Objects != 2 || st.Error != "" {
		t.Fatalf("step 10: %d objects, error %q", st.Objects, st.Error)
	}
	var prompts []string
	for _, r := range st.Rows {
		prompts = append(prompts, r.Prompt)
	}
	if got, want := strings.Join(prompts, " "), "p0-0 p0-1 p0-2 p1-0 p1-1"; got != want {
		t.Fatalf("prompts in order %q, want %q", got, want)
	}
	last := st.Rows[4]
	if last.SampleID != strconv.FormatInt(1<<32+1, 10) || *last.Reward != 1 || last.Advantage != nil || last.Tag != "train" {
		t.Fatalf("last row %+v", last)
	}
	if want := `[{"role":"assistant","content":"c1-1"}]`; last.Completion != want {
		t.Fatalf("completion %q, want %q", last.Completion, want)
	}
}

func TestAnObjectThatCannotBeReadIsSaidAndTheStepsOtherObjectsShown(t *testing.T) {
	dir := t.TempDir()
	writeObject(t, dir, 10, 0, 2)
	writeFile(t, filepath.Join(dir, "samples", "step_10_1.parquet"), "not parquet")
	steps, err := readSteps(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || len(steps[0].Rows) != 2 || !strings.Contains(steps[0].Error, "step_10_1.parquet") {
		t.Fatalf("steps %+v", steps)
	}
}

func TestLongCellTextIsCutOnARuneAndSaysItsLength(t *testing.T) {
	long := strings.Repeat("é", MaxCellBytes) // two bytes a rune
	got := cut(long)
	if !strings.HasSuffix(got, fmt.Sprintf("(cut here: %d bytes in all)", len(long))) {
		t.Fatalf("cut text ends %q", got[len(got)-40:])
	}
	if head, _, _ := strings.Cut(got, "\n…"); len(head) > MaxCellBytes || strings.ContainsRune(head, '\uFFFD') || !strings.HasPrefix(long, head) {
		t.Fatalf("kept %d bytes, not a prefix of whole runes", len(head))
	}
	if cut("short") != "short" {
		t.Fatal("short text changed")
	}
}

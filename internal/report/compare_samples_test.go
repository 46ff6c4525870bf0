package report

import (
	"slices"
	"testing"
)

func row(id, task, prompt string) Sample {
	return Sample{SampleID: id, Task: task, Prompt: prompt, Completion: "answer " + id}
}

// ids is each run's sample ids of one prompt.
func ids(p PromptMatch) [][]string {
	out := make([][]string, len(p.Rows))
	for run, rows := range p.Rows {
		out[run] = []string{}
		for _, a := range rows {
			out[run] = append(out[run], a.SampleID)
		}
	}
	return out
}

func TestRowsThatAskedTheSameTaskAndPromptAreOneLineWithEachRunsRowsInSampleIDOrder(t *testing.T) {
	prompts := matchPrompts([][]Sample{
		{row("1", "gsm8k", "What is 2+2?"), row("2", "gsm8k", "What is 2+2?"), row("3", "gsm8k", "What is 3+3?")},
		{row("10", "gsm8k", "What is 3+3?"), row("11", "gsm8k", "What is 2+2?"), row("12", "gsm8k", "What is 2+2?")},
	})
	if len(prompts) != 2 {
		t.Fatalf("%d prompts, want 2: %+v", len(prompts), prompts)
	}
	// The first run's order leads: 2+2 first.
	if prompts[0].Prompt != "What is 2+2?" || !slices.EqualFunc(ids(prompts[0]), [][]string{{"1", "2"}, {"11", "12"}}, slices.Equal) {
		t.Errorf("first prompt %q: %v", prompts[0].Prompt, ids(prompts[0]))
	}
	if prompts[1].Prompt != "What is 3+3?" || !slices.EqualFunc(ids(prompts[1]), [][]string{{"3"}, {"10"}}, slices.Equal) {
		t.Errorf("second prompt %q: %v", prompts[1].Prompt, ids(prompts[1]))
	}
	if a := prompts[0].Rows[1][0]; a.Completion != "answer 11" {
		t.Errorf("run 1's answer to 2+2 is %q", a.Completion)
	}
}

func TestThePromptOfAnotherTaskOrAnotherTextIsAnotherLineAndARunThatDidNotAskItHasNoRows(t *testing.T) {
	prompts := matchPrompts([][]Sample{
		{row("1", "gsm8k", "Q"), row("2", "math", "Q")},
		{row("5", "gsm8k", "Q "), row("6", "gsm8k", "Q")},
		nil, // a run that did not sample the step
	})
	type line struct {
		task, prompt string
		ids          [][]string
	}
	var got []line
	for _, p := range prompts {
		got = append(got, line{p.Task, p.Prompt, ids(p)})
	}
	want := []line{
		{"gsm8k", "Q", [][]string{{"1"}, {"6"}, {}}},
		{"math", "Q", [][]string{{"2"}, {}, {}}},
		// Whitespace is part of the text: a near match is not matched.
		{"gsm8k", "Q ", [][]string{{}, {"5"}, {}}},
	}
	if len(got) != len(want) {
		t.Fatalf("lines %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].task != want[i].task || got[i].prompt != want[i].prompt || !slices.EqualFunc(got[i].ids, want[i].ids, slices.Equal) {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestOnlyStepsThatSeveralRunsSampledAreSetSideBySideAndTheOthersCounted(t *testing.T) {
	steps := [][]StepSamples{
		{{Step: 10, Rows: []Sample{row("1", "t", "p")}}, {Step: 20, Rows: []Sample{row("2", "t", "p")}}},
		{{Step: 10, Rows: []Sample{row("3", "t", "p")}}, {Step: 30, Rows: []Sample{row("4", "t", "p")}}},
		{{Step: 20, Rows: []Sample{row("5", "t", "p")}, Error: "step_20_1.parquet: not a parquet file"}},
	}
	matched, alone := matchSteps(steps, []string{"a", "b", "c"})
	if alone != 1 || len(matched) != 2 {
		t.Fatalf("matched %+v, alone %d; want steps 10 and 20, and step 30 alone", matched, alone)
	}
	if matched[0].Step != 10 || !slices.Equal(matched[0].Runs, []int{0, 1}) || matched[1].Step != 20 || !slices.Equal(matched[1].Runs, []int{0, 2}) {
		t.Fatalf("steps %d of runs %v and %d of runs %v", matched[0].Step, matched[0].Runs, matched[1].Step, matched[1].Runs)
	}
	if !slices.Equal(matched[1].Errors, []string{"c: step_20_1.parquet: not a parquet file"}) {
		t.Fatalf("errors %v, want the object that could not be read, by run", matched[1].Errors)
	}
}

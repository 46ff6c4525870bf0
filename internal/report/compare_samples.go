package report

import (
	"fmt"
	"maps"
	"slices"
)

// EvalStep is the step of an evaluation's samples, which have none: the
// comparison of evaluations sets all their samples side by side as one.
const EvalStep = -1

// StepMatch is one step's samples of several runs, prompt by prompt.
type StepMatch struct {
	Step    int64         `json:"step"`
	Runs    []int         `json:"runs"` // the runs that sampled it, by index
	Prompts []PromptMatch `json:"prompts"`
	// Errors are objects that could not be read, each naming its run.
	Errors []string `json:"errors,omitempty"`
}

// PromptMatch is one prompt and each run's answers to it.
type PromptMatch struct {
	Task   string `json:"task,omitempty"`
	Prompt string `json:"prompt"`
	// Rows are by run index, each run's rows in sample_id order, without
	// the task and prompt (held once, here); a run that did not ask the
	// prompt has none.
	Rows [][]Sample `json:"rows"`
}

// matchPrompts sets the runs' rows of one step side by side. Two rows ask
// the same prompt when their task and prompt text are equal: the text is
// what was asked, and the task tells apart two environments that phrase a
// problem alike. No looser match (whitespace, a prefix) is tried: a near
// match would put answers to different questions side by side. Prompts
// come in the order the runs first ask them, run by run, each run's rows in
// sample_id order, so the first run's table reads as on its own page and
// the prompts only the later runs asked follow. tables are by run index,
// each in sample_id order (readSteps' order).
func matchPrompts(tables [][]Sample) []PromptMatch {
	type key struct{ task, prompt string }
	index := map[key]int{}
	var out []PromptMatch
	for run, rows := range tables {
		for _, r := range rows {
			k := key{r.Task, r.Prompt}
			i, ok := index[k]
			if !ok {
				i = len(out)
				index[k] = i
				out = append(out, PromptMatch{Task: r.Task, Prompt: r.Prompt, Rows: make([][]Sample, len(tables))})
			}
			r.Task, r.Prompt = "", ""
			out[i].Rows[run] = append(out[i].Rows[run], r)
		}
	}
	for i := range out {
		for run := range out[i].Rows {
			if out[i].Rows[run] == nil {
				out[i].Rows[run] = []Sample{} // [] on the page, not null
			}
		}
	}
	return out
}

// matchSteps sets side by side the steps that at least two runs sampled;
// it returns them in step order, and how many steps only one run sampled
// (their tables are on that run's own page). steps are by run index.
func matchSteps(steps [][]StepSamples, labels []string) (matched []StepMatch, alone int) {
	byStep := map[int64]map[int]StepSamples{}
	for run, list := range steps {
		for _, s := range list {
			if byStep[s.Step] == nil {
				byStep[s.Step] = map[int]StepSamples{}
			}
			byStep[s.Step][run] = s
		}
	}
	for _, step := range slices.Sorted(maps.Keys(byStep)) {
		runs := byStep[step]
		if len(runs) < 2 {
			alone++
			continue
		}
		m := StepMatch{Step: step, Runs: slices.Sorted(maps.Keys(runs))}
		tables := make([][]Sample, len(steps))
		for _, run := range m.Runs {
			tables[run] = runs[run].Rows
			if e := runs[run].Error; e != "" {
				m.Errors = append(m.Errors, fmt.Sprintf("%s: %s", labels[run], e))
			}
		}
		m.Prompts = matchPrompts(tables)
		matched = append(matched, m)
	}
	return matched, alone
}

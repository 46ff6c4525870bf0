package sampletable

import "time"

// Episode is one row of the table as a prime.episode record gives it,
// before the run id and sample id are known. A nil pointer is a null cell.
//
// Its strings may share memory with the record's strings (the body's JSON
// text is sliced, not copied); pdata strings are immutable, so that is safe,
// but an Episode keeps its record's text alive while it is held.
type Episode struct {
	// Step is the step the episode was dispatched at.
	Step int64
	// Part tells apart the rows of one record: the trace a row projects,
	// for the rows of a native document too large for one row (which can
	// be alike to the byte); 0 for every other row.
	Part int

	Tag, Prompt, Answer string // "" by default
	EnvName             *string
	ProblemID           *int64 // nil: the row's sample_id stands in
	// JSON text columns. Completion, when the record has none, is the last
	// trajectory branch's "messages".
	Completion, Task, Info, Metrics, Timing *string
	// Trajectory is the JSON array of branches, each with "advantage" set to
	// the episode's advantage. Never empty: an episode without branches has
	// no row.
	Trajectory        string
	Reward, Advantage *float64
	// Token counts; when the record has none, the last branch's.
	NumInputTokens, NumOutputTokens *int64
	// CreatedAt is the record's timestamp, else its observed timestamp, else
	// now; in UTC, truncated to microseconds.
	CreatedAt time.Time

	// Size approximates the row's encoded size in bytes (its text plus 8 per
	// number), for the caller's episode-size and object-split limits.
	Size int
}

// numericBytes is what the row's eight numeric cells take (step, problem_id,
// sample_id, reward, advantage, two token counts, created_at).
const numericBytes = 8 * 8

func (ep *Episode) size() int {
	n := numericBytes + len(ep.Tag) + len(ep.Prompt) + len(ep.Answer) + len(ep.Trajectory)
	for _, s := range []*string{ep.EnvName, ep.Completion, ep.Task, ep.Info, ep.Metrics, ep.Timing} {
		if s != nil {
			n += len(*s)
		}
	}
	return n
}

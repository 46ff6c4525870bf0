package sampletable

import (
	"fmt"
	"io"
	"math"
)

// Limits of the sample_id scheme (rft-api.md "sample_id ranges"): ids are
// range × 2^32 + row and stay below 2^53, so ranges are below 2^21.
const (
	rowBits   = 32
	maxRange  = 1 << 21
	maxRowsID = 1 << rowBits
)

// maxObjectBytes bounds one object's text: Arrow readers address a string
// column's data with int32 offsets. Counting every column against it is
// conservative and cheap.
const maxObjectBytes = math.MaxInt32

// Encoder writes sample table objects. It keeps its buffers between
// objects; it is not safe for concurrent use.
type Encoder struct {
	fw *parquetWriter
}

// NewEncoder returns an Encoder of the table's schema.
func NewEncoder() *Encoder {
	fw, err := newParquetWriter(Schema(), freeText...)
	if err != nil {
		// Unreachable: Schema holds only column types newParquetWriter
		// takes, which every encoder test would show first.
		panic(err)
	}
	return &Encoder{fw: fw}
}

// Encode writes one Parquet object holding one row per episode, all of run
// runID and step step, in order. Row i gets sample_id = rangeIdx<<32 + i,
// and that sample_id as its problem_id when the episode has none.
//
// Every episode must be of step step and have a trajectory: the caller
// groups and filters, and a row of another step would break the
// step's sample_id uniqueness. w is written to, never closed; after an
// error it may hold part of an object, which the caller drops.
func (e *Encoder) Encode(w io.Writer, runID string, step, rangeIdx int64, eps []Episode) error {
	return e.encode(w, &episodeCells{runID: runID, step: step, rangeIdx: rangeIdx, eps: eps})
}

// EncodeRows is Encode of episodes where they lie: a caller that keeps
// its rows beside other data per row need not copy each 200-byte Episode
// into a slice of its own for every object (at 2 KB episodes those copies
// were a fifth of what the exporter allocated).
func (e *Encoder) EncodeRows(w io.Writer, runID string, step, rangeIdx int64, eps []*Episode) error {
	return e.encode(w, &episodeCells{runID: runID, step: step, rangeIdx: rangeIdx, ptrs: eps})
}

func (e *Encoder) encode(w io.Writer, t *episodeCells) error {
	if t.rangeIdx < 0 || t.rangeIdx >= maxRange {
		return fmt.Errorf("sampletable: sample_id range %d is outside [0, 2^21)", t.rangeIdx)
	}
	n := t.NumRows()
	if int64(n) > maxRowsID {
		return fmt.Errorf("sampletable: %d episodes do not fit one sample_id range", n)
	}
	total := 0
	for i := range n {
		ep := t.row(i)
		total += ep.size() + len(t.runID)
		switch {
		case ep.Step != t.step:
			return fmt.Errorf("sampletable: episode %d is of step %d, not %d", i, ep.Step, t.step)
		case ep.Trajectory == "":
			return fmt.Errorf("sampletable: episode %d has an empty trajectory, which has no row", i)
		}
	}

	if total > maxObjectBytes {
		return fmt.Errorf("sampletable: the %d episodes of step %d hold %d bytes, more than one object takes; split them", n, t.step, total)
	}

	if err := e.fw.write(w, t); err != nil {
		return fmt.Errorf("sampletable: writing step %d: %w", t.step, err)
	}
	return nil
}

// Column indices, in Schema's order.
const (
	iRunID = iota
	iStep
	iTag
	iProblemID
	iSampleID
	iPrompt
	iCompletion
	iTrajectory
	iAnswer
	iEnvName
	iTask
	iInfo
	iReward
	iAdvantage
	iMetrics
	iTiming
	iNumInputTokens
	iNumOutputTokens
	iCreatedAt
)

// episodeCells are the rows of one object: eps in order, row i with
// sample_id rangeIdx<<32 + i, and that sample_id as its problem_id when
// the episode has none.
type episodeCells struct {
	runID          string
	step, rangeIdx int64
	// The rows are eps, or else ptrs (EncodeRows).
	eps  []Episode
	ptrs []*Episode
}

func (t *episodeCells) row(i int) *Episode {
	if t.ptrs != nil {
		return t.ptrs[i]
	}
	return &t.eps[i]
}

func (t *episodeCells) NumRows() int {
	if t.ptrs != nil {
		return len(t.ptrs)
	}
	return len(t.eps)
}

func (t *episodeCells) Str(col, row int) (string, bool) {
	ep := t.row(row)
	switch col {
	case iRunID:
		return t.runID, true
	case iTag:
		return ep.Tag, true
	case iPrompt:
		return ep.Prompt, true
	case iCompletion:
		return cell(ep.Completion)
	case iTrajectory:
		return ep.Trajectory, true
	case iAnswer:
		return ep.Answer, true
	case iEnvName:
		return cell(ep.EnvName)
	case iTask:
		return cell(ep.Task)
	case iInfo:
		return cell(ep.Info)
	case iMetrics:
		return cell(ep.Metrics)
	case iTiming:
		return cell(ep.Timing)
	}
	return "", false
}

func (t *episodeCells) Int(col, row int) (int64, bool) {
	ep := t.row(row)
	sampleID := t.rangeIdx<<rowBits + int64(row)
	switch col {
	case iStep:
		return t.step, true
	case iProblemID:
		if ep.ProblemID != nil {
			return *ep.ProblemID, true
		}
		return sampleID, true
	case iSampleID:
		return sampleID, true
	case iNumInputTokens:
		return cell(ep.NumInputTokens)
	case iNumOutputTokens:
		return cell(ep.NumOutputTokens)
	case iCreatedAt:
		return ep.CreatedAt.UnixMicro(), true
	}
	return 0, false
}

func (t *episodeCells) Float(col, row int) (float64, bool) {
	ep := t.row(row)
	switch col {
	case iReward:
		return cell(ep.Reward)
	case iAdvantage:
		return cell(ep.Advantage)
	}
	return 0, false
}

func cell[T any](p *T) (T, bool) {
	if p == nil {
		var zero T
		return zero, false
	}
	return *p, true
}

package sampletable

import (
	"fmt"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Limits of the sample_id scheme (rft-api.md "sample_id ranges"): ids are
// range × 2^32 + row and stay below 2^53, so ranges are below 2^21.
const (
	rowBits   = 32
	maxRange  = 1 << 21
	maxRowsID = 1 << rowBits
)

// maxObjectBytes bounds one object's text: Arrow's utf8 columns address
// their data with int32 offsets. Counting every column against it is
// conservative and cheap.
const maxObjectBytes = math.MaxInt32

// Encoder writes sample table objects. It keeps its Arrow builders and
// writer settings between objects; it is not safe for concurrent use.
type Encoder struct {
	schema *arrow.Schema
	rb     *array.RecordBuilder
	props  *parquet.WriterProperties
	aprops pqarrow.ArrowWriterProperties
}

// NewEncoder returns an Encoder with the table's schema and writer settings.
func NewEncoder() *Encoder {
	return newEncoder(newBufferPool())
}

// newEncoder takes the builders' allocator, so tests can check that every
// object's Arrow memory is released.
func newEncoder(mem memory.Allocator) *Encoder {
	schema := Schema()
	return &Encoder{
		schema: schema,
		rb:     array.NewRecordBuilder(mem, schema),
		props:  writerProperties(mem),
		aprops: arrowWriterProperties(),
	}
}

// noClose hides the caller's Close: the Parquet writer closes its sink when
// it finishes, and the caller owns w.
type noClose struct{ io.Writer }

// Encode writes one Parquet object holding one row per episode, all of run
// runID and step step, in order. Row i gets sample_id = rangeIdx<<32 + i,
// and that sample_id as its problem_id when the episode has none.
//
// Every episode must be of step step and have a trajectory: the caller
// groups and filters, and a row of another step would break the
// step's sample_id uniqueness. w is written to, never closed; after an
// error it may hold part of an object, which the caller drops.
func (e *Encoder) Encode(w io.Writer, runID string, step, rangeIdx int64, eps []Episode) error {
	if rangeIdx < 0 || rangeIdx >= maxRange {
		return fmt.Errorf("sampletable: sample_id range %d is outside [0, 2^21)", rangeIdx)
	}
	if int64(len(eps)) > maxRowsID {
		return fmt.Errorf("sampletable: %d episodes do not fit one sample_id range", len(eps))
	}
	total := 0
	for i := range eps {
		total += eps[i].size() + len(runID)
		switch ep := &eps[i]; {
		case ep.Step != step:
			return fmt.Errorf("sampletable: episode %d is of step %d, not %d", i, ep.Step, step)
		case ep.Trajectory == "":
			return fmt.Errorf("sampletable: episode %d has an empty trajectory, which has no row", i)
		}
	}

	if total > maxObjectBytes {
		return fmt.Errorf("sampletable: the %d episodes of step %d hold %d bytes, more than one object takes; split them", len(eps), step, total)
	}

	rec := e.build(runID, step, rangeIdx, eps)
	defer rec.Release()
	fw, err := pqarrow.NewFileWriter(e.schema, noClose{w}, e.props, e.aprops)
	if err != nil {
		return fmt.Errorf("sampletable: %w", err)
	}
	if err := fw.Write(rec); err != nil {
		_ = fw.Close()
		return fmt.Errorf("sampletable: writing step %d: %w", step, err)
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("sampletable: writing step %d: %w", step, err)
	}
	return nil
}

// build fills the builders with the rows; their buffers are sized once up
// front, since a step's text runs to many megabytes and doubling would copy
// it several times.
func (e *Encoder) build(runID string, step, rangeIdx int64, eps []Episode) arrow.RecordBatch {
	e.rb.Reserve(len(eps))
	str := func(col int) *array.StringBuilder { return e.rb.Field(col).(*array.StringBuilder) }
	i64 := func(col int) *array.Int64Builder { return e.rb.Field(col).(*array.Int64Builder) }
	f64 := func(col int) *array.Float64Builder { return e.rb.Field(col).(*array.Float64Builder) }

	runIDs, steps, tags, problemIDs, sampleIDs := str(0), i64(1), str(2), i64(3), i64(4)
	prompts, completions, trajectories, answers, envNames := str(5), str(6), str(7), str(8), str(9)
	tasks, infos, rewards, advantages, metrics := str(10), str(11), f64(12), f64(13), str(14)
	timings, inTokens, outTokens := str(15), i64(16), i64(17)
	createdAts := e.rb.Field(18).(*array.TimestampBuilder)

	runIDs.ReserveData(len(runID) * len(eps))
	for _, c := range []struct {
		b    *array.StringBuilder
		size func(*Episode) int
	}{
		{tags, func(ep *Episode) int { return len(ep.Tag) }},
		{prompts, func(ep *Episode) int { return len(ep.Prompt) }},
		{completions, func(ep *Episode) int { return optLen(ep.Completion) }},
		{trajectories, func(ep *Episode) int { return len(ep.Trajectory) }},
		{answers, func(ep *Episode) int { return len(ep.Answer) }},
		{envNames, func(ep *Episode) int { return optLen(ep.EnvName) }},
		{tasks, func(ep *Episode) int { return optLen(ep.Task) }},
		{infos, func(ep *Episode) int { return optLen(ep.Info) }},
		{metrics, func(ep *Episode) int { return optLen(ep.Metrics) }},
		{timings, func(ep *Episode) int { return optLen(ep.Timing) }},
	} {
		n := 0
		for i := range eps {
			n += c.size(&eps[i])
		}
		c.b.ReserveData(n)
	}

	for i := range eps {
		ep := &eps[i]
		sampleID := rangeIdx<<rowBits + int64(i)
		runIDs.Append(runID)
		steps.Append(step)
		tags.Append(ep.Tag)
		if ep.ProblemID != nil {
			problemIDs.Append(*ep.ProblemID)
		} else {
			problemIDs.Append(sampleID)
		}
		sampleIDs.Append(sampleID)
		prompts.Append(ep.Prompt)
		appendOptString(completions, ep.Completion)
		trajectories.Append(ep.Trajectory)
		answers.Append(ep.Answer)
		appendOptString(envNames, ep.EnvName)
		appendOptString(tasks, ep.Task)
		appendOptString(infos, ep.Info)
		appendOptFloat(rewards, ep.Reward)
		appendOptFloat(advantages, ep.Advantage)
		appendOptString(metrics, ep.Metrics)
		appendOptString(timings, ep.Timing)
		appendOptInt(inTokens, ep.NumInputTokens)
		appendOptInt(outTokens, ep.NumOutputTokens)
		createdAts.Append(arrow.Timestamp(ep.CreatedAt.UnixMicro()))
	}
	return e.rb.NewRecordBatch()
}

func optLen(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

func appendOptString(b *array.StringBuilder, s *string) {
	if s == nil {
		b.AppendNull()
		return
	}
	b.Append(*s)
}

func appendOptInt(b *array.Int64Builder, n *int64) {
	if n == nil {
		b.AppendNull()
		return
	}
	b.Append(*n)
}

func appendOptFloat(b *array.Float64Builder, f *float64) {
	if f == nil {
		b.AppendNull()
		return
	}
	b.Append(*f)
}

package sampletable

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// The table's columns (rft-api.md "The training sample table"), in order.
const (
	colRunID           = "run_id"
	colStep            = "step"
	colTag             = "tag"
	colProblemID       = "problem_id"
	colSampleID        = "sample_id"
	colPrompt          = "prompt"
	colCompletion      = "completion"
	colTrajectory      = "trajectory"
	colAnswer          = "answer"
	colEnvName         = "env_name"
	colTask            = "task"
	colInfo            = "info"
	colReward          = "reward"
	colAdvantage       = "advantage"
	colMetrics         = "metrics"
	colTiming          = "timing"
	colNumInputTokens  = "num_input_tokens"
	colNumOutputTokens = "num_output_tokens"
	colCreatedAt       = "created_at"
)

// Schema is the sample table's Arrow schema: 19 columns in the viewer's
// order, every one nullable (pyarrow's default, which the Python SDK wrote),
// created_at in UTC microseconds.
func Schema() *arrow.Schema {
	utf8 := arrow.BinaryTypes.String
	i64 := arrow.PrimitiveTypes.Int64
	f64 := arrow.PrimitiveTypes.Float64
	field := func(name string, t arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: true}
	}
	return arrow.NewSchema([]arrow.Field{
		field(colRunID, utf8),
		field(colStep, i64),
		field(colTag, utf8),
		field(colProblemID, i64),
		field(colSampleID, i64),
		field(colPrompt, utf8),
		field(colCompletion, utf8),
		field(colTrajectory, utf8),
		field(colAnswer, utf8),
		field(colEnvName, utf8),
		field(colTask, utf8),
		field(colInfo, utf8),
		field(colReward, f64),
		field(colAdvantage, f64),
		field(colMetrics, utf8),
		field(colTiming, utf8),
		field(colNumInputTokens, i64),
		field(colNumOutputTokens, i64),
		field(colCreatedAt, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}),
	}, nil)
}

// freeText are the columns of large, mostly unique text: the chat, the
// trajectory and the JSON documents. A dictionary of them never pays (each
// value is new), and building one costs a hash of every value and a copy
// of the column before a writer falls back to PLAIN; min/max statistics
// of them serve no query and would copy two whole values into the footer.
// They get a null count but no min/max (NewEncoder); every column is
// written PLAIN, since the short ones are small beside them and Snappy
// takes their repeats.
var freeText = []string{colPrompt, colCompletion, colTrajectory, colTask, colInfo, colMetrics, colTiming}

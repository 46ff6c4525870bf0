package sampletable

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
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
// of the column before the writer falls back to PLAIN; min/max statistics
// of them serve no query and would copy two whole values into the footer.
var freeText = []string{colPrompt, colCompletion, colTrajectory, colTask, colInfo, colMetrics, colTiming}

// writerProperties follow what the viewer reads (rft-api.md: the schema,
// the values and snappy hold; encodings are the writer's choice): snappy
// everywhere; dictionary encoding and statistics on the short, repeated
// columns (run_id, tag, env_name, answer) and the numbers, where they
// compress and prune; PLAIN without statistics on the free text. alloc
// holds every buffer the writer makes.
func writerProperties(alloc memory.Allocator) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithAllocator(alloc),
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
	}
	for _, col := range freeText {
		opts = append(opts, parquet.WithDictionaryFor(col, false), parquet.WithStatsFor(col, false))
	}
	return parquet.NewWriterProperties(opts...)
}

// arrowWriterProperties store the Arrow schema in the file, as pyarrow
// does, so Arrow readers get the timestamp's time zone back exactly.
func arrowWriterProperties() pqarrow.ArrowWriterProperties {
	return pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
}
